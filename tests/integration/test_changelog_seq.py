"""The change log's ``seq`` on real servers and real Spark: one number per row, growing in commit
order, across binlog rotation (``FLUSH BINARY LOGS``), a restart of ``sluice run`` and a new Spark
checkpoint folder; batches split into several ranges, a key-less table's snapshot ``read`` rows and
``ddl`` rows numbered too."""

from __future__ import annotations

import uuid
from typing import Any

import deltalake
import pytest

from sluice.binlog.position import position_key
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.changelog.sequence import RANGE_STRIDE
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from tests.integration.exactly_once import exactly_once, seq_in_commit_order

pytestmark = pytest.mark.spark


def _run(server: Any, lake: str, db: str, **extra: Any) -> None:
    config = PipelineConfig(source=server.dsn("root"), lake=lake, tables=rf"{db}\..*", trigger="once",
                            snapshot="initial", **extra)
    Pipeline(config).run(handle_signals=False)


def _wide_inserts(conn: Connection, db: str, first: int, transactions: int, rows: int) -> None:
    """``transactions`` transactions of ``rows`` rows of 300 bytes each: a batch of several ranges."""
    for t in range(transactions):
        start = first + t * rows
        conn.execute(f"INSERT INTO {db}.k (id, v, pad) WITH RECURSIVE n(i) AS (SELECT {start} UNION ALL "
                     f"SELECT i + 1 FROM n WHERE i < {start + rows - 1}) SELECT i, i, REPEAT('x', 300) FROM n")


def test_seq_grows_across_rotation_a_restart_and_a_new_checkpoint(spark, server, tmp_path):
    db = f"seq_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute("SET SESSION cte_max_recursion_depth = 100000" if not server.is_mariadb
                     else "SET SESSION max_recursive_iterations = 100000")
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.k (id INT PRIMARY KEY, v INT, pad VARCHAR(400))")
        conn.execute(f"CREATE TABLE {db}.nokey (a INT)")
        conn.execute(f"INSERT INTO {db}.k (id, v) VALUES (1, 1), (2, 2)")
        conn.execute(f"INSERT INTO {db}.nokey VALUES (1), (2), (3)")
        _run(server, lake, db)  # the snapshot: the key-less table's rows are reads in the change log

        conn.execute(f"UPDATE {db}.k SET v = 10 WHERE id = 1")
        conn.execute("FLUSH BINARY LOGS")
        _wide_inserts(conn, db, 100, 4, 2000)  # some 2.5 MB of binlog: more than one range per batch
        conn.execute(f"ALTER TABLE {db}.k ADD COLUMN w INT")
        conn.execute(f"INSERT INTO {db}.nokey VALUES (4)")
        conn.execute("FLUSH BINARY LOGS")
        conn.execute(f"DELETE FROM {db}.k WHERE id = 2")
        _run(server, lake, db)  # a restart on the same checkpoint

        conn.execute("FLUSH BINARY LOGS")
        conn.execute(f"UPDATE {db}.k SET w = 5 WHERE id < 200")
        conn.execute(f"INSERT INTO {db}.k (id, v) VALUES (3, 3)")
        _run(server, lake, db, checkpoint_dir=str(tmp_path / "new-checkpoint"))  # a new checkpoint: batch 0 again

        seqs = seq_in_commit_order(tmp_path / "lake")
        log = deltalake.DeltaTable(f"{lake}/_sluice/changes").to_pyarrow_table().to_pylist()
        mine = sorted((r for r in log if r["db"] == db), key=lambda r: r["seq"])
        assert {r["op"] for r in mine} >= {"read", "insert", "update", "delete", "ddl"}
        assert len({r["file"] for r in mine}) >= 4, "the binlog did not rotate under the stream"
        # The stream's rows are numbered in binlog order; the snapshot's reads before all of them.
        stream = [r for r in mine if r["op"] != "read"]
        places = [(position_key(r["file"], r["pos"]), r["row"]) for r in stream]
        assert places == sorted(places) and len(set(places)) == len(places)
        assert max(r["seq"] for r in mine if r["op"] == "read") < stream[0]["seq"]
        assert max(seqs) > RANGE_STRIDE, "no batch was split into ranges: the strides were not exercised"
        assert sorted({r["batch_id"] for r in stream if r["batch_id"] is not None})[0] == 0
        # every change once (sluice tail cannot read back from before the ALTER with today's schema):
        # 1 + 8,000 + 1 + 1 + 101 + 1 row changes, every mirror equal to its table
        assert len(stream) - sum(r["op"] == "ddl" for r in stream) == 8105
        exactly_once(server, tmp_path / "lake", db, None)
        conn.execute(f"DROP DATABASE {db}")
