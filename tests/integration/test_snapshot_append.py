"""The snapshot's append path on Spark and real servers: typed values, crash resume, MERGE fallback.

A table with a column of most types (NULLs, zero dates, negative zero, extremes, non-UTF-8 bytes, SETs,
JSON documents with DECIMALs, doubles, escapes and JSON's null)
is snapshotted into an empty lake: its chunks are appended, and ``verify`` finds the mirror equal
to the source. A crash is simulated at both sides of a chunk's Delta commit: after it landed but
before the snapshot state recorded it (the restart keeps it and reads nothing again), and before
it landed (the restart reads the chunk again and appends it once). A table whose mirror already
holds rows when its snapshot is planned is merged, never appended, so no key is doubled.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import deltalake
import pytest

from sluice.cdc.table_read.chunks import Chunk
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.layout import open_lake
from sluice.spark.snapshot.driver import SnapshotRunner
from sluice.spark.snapshot.state import SnapshotState
from sluice.spark.verify.check import verify_lake

pytestmark = [pytest.mark.spark]

ROWS = 3000
CHUNK = 400


def _setup(server: Any, db: str) -> None:
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(
            f"CREATE TABLE {db}.t (id INT PRIMARY KEY, u BIGINT UNSIGNED, d DATE, dt DATETIME(6), ts TIMESTAMP(3) "
            "NULL, amt DECIMAL(10,2), wide DECIMAL(50,10), f FLOAT, x DOUBLE, s VARCHAR(20), b VARBINARY(8), "
            "e ENUM('a','b'), tm TIME(2), bits BIT(5), y YEAR, tx TEXT, st SET('x','y','zé'), j JSON) "
            "DEFAULT CHARSET=utf8mb4"
        )
        conn.execute("SET SESSION sql_mode = ''")
        conn.execute("SET SESSION time_zone = '+00:00'")
        conn.execute("SET SESSION cte_max_recursion_depth = 100000" if not conn.is_mariadb
                     else "SET SESSION max_recursive_iterations = 100000")
        conn.execute(
            f"INSERT INTO {db}.t WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {ROWS}) "
            "SELECT n, IF(n % 7 = 0, 18446744073709551615, n * 1000003), "
            "IF(n % 11 = 0, '0000-00-00', DATE_ADD('1999-12-31', INTERVAL n DAY)), "
            "DATE_ADD('2024-01-01 00:00:00', INTERVAL n * 1001 MICROSECOND), "
            "IF(n % 13 = 0, NULL, FROM_UNIXTIME(n * 1000 + 0.125)), "
            "IF(n % 5 = 0, -0.00, (n - 1500) / 7), IF(n % 3 = 0, NULL, n / 3), n / 9, IF(n % 17 = 0, -0e0, n / 7e3), "
            "CONCAT('é', n, '  '), UNHEX(CONCAT('FF', HEX(n))), IF(n % 2, 'a', 'b'), "
            "SEC_TO_TIME(n * 37 - 50000), n % 32, 1901 + n % 200, IF(n % 4 = 0, NULL, REPEAT('t', n % 300)), "
            "ELT(1 + n % 4, '', 'x', 'y,zé', 'x,y,zé'), IF(n % 19 = 0, NULL, IF(n % 23 = 0, 'null', "
            "JSON_OBJECT('n', n, 'half', n / 2, 'f', n * 1.5e0, 'tags', JSON_ARRAY('é', n % 3 = 0, NULL), "
            "'s', CONCAT('q\"', n, '\\\\ \\t')))) FROM s"
        )


def _runner(spark: Any, server: Any, db: str, lake: Path,
            cls: type[SnapshotRunner] = SnapshotRunner, app_id: str = "test") -> SnapshotRunner:
    (lake / "_sluice").mkdir(parents=True, exist_ok=True)
    return cls(spark, server.dsn("root"), open_lake(lake), app_id, lambda d, _t: d == db,
               chunk_rows=CHUNK)


def _check(server: Any, db: str, lake: Path) -> None:
    verdicts = verify_lake(parse_dsn(server.dsn("root")), lake, tables=lambda d, _t: d == db)
    assert [v.table for v in verdicts] == ["t"]
    assert all(v.ok for v in verdicts), verdicts
    ids = deltalake.DeltaTable(str(lake / db / "t")).to_pyarrow_table(columns=["id"]).column("id").to_pylist()
    assert len(ids) == len(set(ids)), "a key is in the mirror twice"


class _CrashBefore(SnapshotRunner):
    """Dies in the write of chunk ``crash_seq``, before its Delta commit."""

    crash_seq = 3

    def _append(self, table: dict[str, Any], seq: int, rows: Any, flavor: str | None) -> None:
        if seq == self.crash_seq:
            raise KeyboardInterrupt("simulated crash")
        super()._append(table, seq, rows, flavor)


def test_appended_snapshot_equals_the_source_and_resumes_around_a_commit(server, spark, tmp_path) -> None:
    db = f"snapa_{uuid.uuid4().hex[:8]}"
    _setup(server, db)
    lake = tmp_path / "lake"
    with pytest.raises(KeyboardInterrupt):
        _runner(spark, server, db, lake, _CrashBefore).run()
    state_path = lake / "_sluice" / "snapshot.json"
    state = json.loads(state_path.read_text())
    table = state["tables"][f"{db}.t"]
    assert table["append"] is True
    assert table["writing"]["seq"] == _CrashBefore.crash_seq and len(table["done"]) == _CrashBefore.crash_seq
    # The restart finds chunk 3 not landed: it reads it again and appends it once.
    state = _runner(spark, server, db, lake).run()
    assert state.complete and len(state.tables[f"{db}.t"]["done"]) == len(state.tables[f"{db}.t"]["chunks"]) > 6
    _check(server, db, lake)
    # A crash after chunk 5's commit landed, before the state recorded it: the restart keeps it.
    saved = SnapshotState.load(open_lake(lake))
    table = saved.tables[f"{db}.t"]
    chunk_id = Chunk.from_json(table["chunks"][5]).id
    done = table["done"].pop(chunk_id)
    table["writing"] = {"chunk": chunk_id, "seq": 5, **done}
    saved.complete = False
    saved.save(open_lake(lake))
    version = deltalake.DeltaTable(str(lake / db / "t")).version()
    state = _runner(spark, server, db, lake).run()
    assert state.tables[f"{db}.t"]["done"][chunk_id] == done
    assert deltalake.DeltaTable(str(lake / db / "t")).version() == version, "a landed chunk was written again"
    _check(server, db, lake)
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"DROP DATABASE {db}")


def test_a_mirror_that_holds_rows_is_merged(server, spark, tmp_path) -> None:
    db = f"snapm_{uuid.uuid4().hex[:8]}"
    _setup(server, db)
    lake = tmp_path / "lake"
    _runner(spark, server, db, lake).run()
    # The snapshot state is lost but the mirror stays: a new pipeline's snapshot must not append onto it.
    (lake / "_sluice" / "snapshot.json").unlink()
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"UPDATE {db}.t SET s = 'changed', amt = -amt WHERE id % 10 = 1")
        conn.execute(f"INSERT INTO {db}.t (id, s) VALUES ({ROWS + 1}, 'new')")
    state = _runner(spark, server, db, lake, app_id="another").run()
    assert state.tables[f"{db}.t"]["append"] is False
    _check(server, db, lake)
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"DROP DATABASE {db}")


class _AlterAfterFirstChunk(SnapshotRunner):
    """Adds a column to the table once its first chunk is committed: the pass ends with the table
    stale and its mirror removed, and the next pass of the same runner appends it again."""

    db = ""
    altered = False

    def _append(self, table: dict[str, Any], seq: int, rows: Any, flavor: str | None) -> None:
        super()._append(table, seq, rows, flavor)
        if not self.altered:
            self.altered = True
            with Connection.open(parse_dsn(self.source)) as conn:
                conn.execute(f"ALTER TABLE {self.db}.t ADD COLUMN late INT NOT NULL DEFAULT 7")


def test_a_table_altered_during_its_snapshot_is_appended_again_into_a_new_mirror(server, spark, tmp_path) -> None:
    db = f"snapd_{uuid.uuid4().hex[:8]}"
    _setup(server, db)
    lake = tmp_path / "lake"
    runner = _runner(spark, server, db, lake, _AlterAfterFirstChunk)
    assert isinstance(runner, _AlterAfterFirstChunk)
    runner.db = db
    state = runner.run()
    assert runner.altered and state.complete
    table = state.tables[f"{db}.t"]
    assert table["append"] is True and "late" in json.dumps(table["schema"])
    assert "late" in deltalake.DeltaTable(str(lake / db / "t")).schema().to_arrow().names
    _check(server, db, lake)
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"DROP DATABASE {db}")
