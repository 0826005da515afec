"""A table renamed or dropped between the snapshot's catalog read and its planning or scan.

The snapshot reads the catalog, then plans each table (its key's range) and, for a table without a
primary key, scans it. A DDL can land in between: the planning's or the scan's ``SELECT`` then
fails with ER_NO_SUCH_TABLE. That is not an error of the run: the table is planned again in the
next pass, which finds it gone and leaves it to the stream (which meets its RENAME or DROP), while
every other table is snapshotted as usual.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.layout import open_lake
from sluice.spark.snapshot.driver import SnapshotRunner
from sluice.spark.verify.check import verify_lake

pytestmark = [pytest.mark.spark]


class _MovesATable(SnapshotRunner):
    """Runs ``ddl`` once, just before the table ``victim`` is planned (keyed) or scanned (key-less)."""

    db = ""
    victim = ""
    ddl = ""
    done = False

    def _move(self) -> None:
        if not self.done:
            self.done = True
            with Connection.open(parse_dsn(self.source)) as conn:
                conn.execute(self.ddl)

    def _mirror_empty(self, db: str, name: str) -> bool:  # the last step before plan_table
        if name == self.victim:
            self._move()
        return super()._mirror_empty(db, name)

    def _settle_interrupted(self, state: Any) -> None:  # after planning, before the chunks and the scans
        if f"{self.db}.{self.victim}" in state.tables and "scan" in state.tables[f"{self.db}.{self.victim}"]:
            self._move()
        super()._settle_interrupted(state)


def _snapshot(server: Any, spark: Any, tmp_path: Path, victim: str, ddl: str, keyless: bool) -> None:
    db = f"snapm_{uuid.uuid4().hex[:8]}"
    key = "" if keyless else " PRIMARY KEY"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.a (id INT PRIMARY KEY, v VARCHAR(10))")
        conn.execute(f"CREATE TABLE {db}.{victim} (id INT{key}, v VARCHAR(10))")
        conn.execute(f"CREATE TABLE {db}.z (id INT PRIMARY KEY, v VARCHAR(10))")
        for t in ("a", victim, "z"):
            conn.execute(f"INSERT INTO {db}.{t} VALUES " + ", ".join(f"({i}, 'r{i}')" for i in range(50)))
    lake = tmp_path / "lake"
    (lake / "_sluice").mkdir(parents=True)
    lines: list[str] = []
    runner = _MovesATable(spark, server.dsn("root"), open_lake(str(lake)), "test",
                          lambda d, _t: d == db, chunk_rows=20, progress=lines.append)
    runner.db, runner.victim, runner.ddl = db, victim, ddl.format(db=db)
    state = runner.run()
    assert runner.done and state.complete
    assert state.tables[f"{db}.{victim}"].get("lost") is True, state.tables[f"{db}.{victim}"]
    assert any(f"{db}.{victim} changed (DDL)" in line for line in lines), lines
    verdicts = verify_lake(parse_dsn(server.dsn("root")), lake, tables=lambda d, t: d == db and t in ("a", "z"))
    assert sorted(v.table for v in verdicts) == ["a", "z"]
    assert all(v.ok for v in verdicts), verdicts
    assert not (lake / db / victim).exists()
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"DROP DATABASE {db}")


@pytest.mark.parametrize("ddl", ["RENAME TABLE {db}.m TO {db}.m2", "DROP TABLE {db}.m"], ids=["renamed", "dropped"])
def test_a_table_gone_before_it_is_planned_is_left_to_the_stream(server, spark, tmp_path, ddl) -> None:
    _snapshot(server, spark, tmp_path, "m", ddl, keyless=False)


def test_a_keyless_table_gone_before_its_scan_is_left_to_the_stream(server, spark, tmp_path) -> None:
    _snapshot(server, spark, tmp_path, "m", "DROP TABLE {db}.m", keyless=True)
