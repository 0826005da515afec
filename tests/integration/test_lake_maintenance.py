"""Maintenance of a lake the pipeline writes, on a real server, Spark and Delta tables.

- The pipeline runs many small batches with maintenance on a tight schedule (compaction after a
  few small files, a checkpoint every few commits, VACUUM at every turn with no retention): the
  mirrors still equal the server, the change log holds every change once, the tables have fewer
  files than batches, and the app transactions still make a second run skip what is written.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid
from typing import Any

import pytest
from deltalake import DeltaTable

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.lake.maintenance.steps import MaintenanceConfig
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.verify.check import verify_lake

pytestmark = [pytest.mark.spark, pytest.mark.mariadb]

SLUICE = [sys.executable, "-m", "sluice.cli"]


def _schema(conn: Connection, db: str) -> None:
    conn.execute(f"CREATE DATABASE {db}")
    conn.execute(f"CREATE TABLE {db}.accounts (id INT PRIMARY KEY, balance BIGINT, note VARCHAR(40))")
    conn.execute(f"CREATE TABLE {db}.events (id INT AUTO_INCREMENT PRIMARY KEY, account INT, kind VARCHAR(10))")


def _workload(conn: Connection, db: str, start: int, count: int, rng: random.Random) -> None:
    """``count`` transactions: an account opened, a random one updated, events added and dropped."""
    for i in range(start, start + count):
        conn.execute("BEGIN")
        conn.execute(f"INSERT INTO {db}.accounts VALUES ({i}, {i * 10}, 'a{i}')")
        conn.execute(f"UPDATE {db}.accounts SET balance = balance + 1 WHERE id = {rng.randint(1, i)}")
        conn.execute(f"INSERT INTO {db}.events (account, kind) VALUES ({i}, 'open'), ({i}, 'move')")
        conn.execute("COMMIT")
        if i % 3 == 0:
            conn.execute(f"DELETE FROM {db}.events WHERE account = {rng.randint(1, i)} AND kind = 'move'")


def _changes(server: Any, db: str, start: Any) -> list[tuple[str, int, int]]:
    tail = subprocess.run([*SLUICE, "tail", server.dsn("repl"), "--from", f"{start.file}:{start.pos}",
                           "--until-end", "--tables", rf"{db}\..*"], capture_output=True, timeout=300, check=True)
    return sorted((c["file"], c["pos"], c["row"]) for c in map(json.loads, tail.stdout.decode().splitlines()))


def _logged(lake: str) -> list[tuple[str, int, int]]:
    rows = DeltaTable(f"{lake}/_sluice/changes").to_pyarrow_table(columns=["op", "file", "pos", "row"]).to_pylist()
    return sorted((r["file"], r["pos"], r["row"]) for r in rows if r["op"] != "ddl")


def _check_exact(server: Any, db: str, lake: str, start: Any) -> None:
    """The mirrors equal the server, the change log holds every change of ``db`` once."""
    verdicts = verify_lake(parse_dsn(server.dsn("root")), lake, tables=lambda d, _t: d == db)
    assert {v.table for v in verdicts} == {"accounts", "events"}
    assert all(v.ok for v in verdicts), verdicts
    logged = _logged(lake)
    assert len(logged) == len(set(logged)), "a change is in the change log twice"
    assert logged == _changes(server, db, start), "the change log lost changes"


def test_a_pipeline_maintained_between_many_small_batches_stays_exact(mariadb_server, tmp_path):
    server, db, lake = mariadb_server, f"mt_{uuid.uuid4().hex[:8]}", str(tmp_path / "lake")
    rng = random.Random(5)
    tight = MaintenanceConfig(min_small_files=3, checkpoint_interval=4, retention_hours=0,
                              allow_short_retention=True, vacuum_interval=0, budget=30, rescan_interval=0)
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        start = server_binlog_status(conn)
        _schema(conn, db)
        _workload(conn, db, 1, 120, rng)
        config = PipelineConfig(source=server.dsn("repl"), lake=lake, tables=rf"{db}\..*", trigger="once",
                                starting_position=f"{start.file}:{start.pos}", max_rows_per_batch=12,
                                maintenance=tight)
        pipeline = Pipeline(config)
        stats = pipeline.run(handle_signals=False)
        assert stats.batches >= 30
        assert pipeline.upkeep.failures == 0 and pipeline.upkeep.steps_run >= 10
        _check_exact(server, db, lake, start)
        for name in ("_sluice/changes", f"{db}/accounts", f"{db}/events"):
            dt = DeltaTable(f"{lake}/{name}")
            assert len(dt.file_uris()) < stats.batches / 3, name  # without compaction: a file or more per batch
            operations = {h["operation"] for h in dt.history()}
            if name != f"{db}/accounts":  # its MERGEs rewrite the files they update: it gathers few
                assert "OPTIMIZE" in operations, (name, operations)
            assert any(f.endswith(".checkpoint.parquet") for f in os.listdir(f"{lake}/{name}/_delta_log")), name
            on_disk = [f for f in os.listdir(f"{lake}/{name}") if f.endswith(".parquet")]
            assert len(on_disk) < stats.batches / 2, name  # each batch wrote a file or more: VACUUM removed them
        last = DeltaTable(f"{lake}/_sluice/changes").transaction_version(pipeline.app_id)
        assert last == pipeline.lake.committed_batch() and last is not None and last >= stats.batches - 1
        _workload(conn, db, 121, 30, rng)
        again = Pipeline(config)  # the same pipeline id: goes on after the last batch, skips none twice
        assert again.app_id == pipeline.app_id
        again.run(handle_signals=False)
        _check_exact(server, db, lake, start)
        conn.execute(f"DROP DATABASE {db}")
