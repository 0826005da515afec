"""Schema at event time, end to end: a workload that alters its tables mid-stream, captured live.

For each flavor, with the schema read at the start or only after the workload (an older start), and
with the binlog carrying column names (``binlog_row_metadata=FULL``) and without
them (MySQL MINIMAL, MariaDB NO_LOG: names come from the schema history), the workload adds,
drops, modifies and renames columns, renames a table, drops and re-creates it with another layout
and runs a multi-table transaction, interleaved with DML. Every phase ends with a snapshot of
``SELECT *``. The captured changes are replayed into a model, which must equal each snapshot at
the phase's end position — value by value, under the right column names.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from decimal import Decimal
from typing import Any

import pytest

from sluice.binlog.position import binlog_file_key
from sluice.cdc.capture import CaptureConfig, ChangeCapture, DdlRecord
from sluice.cdc.capture_start import StartRequest, prepare_capture
from sluice.cdc.follow import FollowConfig, follow
from sluice.cdc.jsonl import record_line
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status


@pytest.fixture
def server(server3):
    """Every test of this suite runs on the three servers (tests/conftest.py)."""
    return server3


def _norm(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (tuple, list, frozenset)):
        return ",".join(value)
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def _norm_text(column_type: str, text: str | None) -> str | None:
    if text is None:
        return None
    if column_type == "double":
        return repr(float(text))
    return text


class Workload:
    """Runs SQL over one root connection and snapshots the tables after each phase."""

    def __init__(self, server: Any, db: str) -> None:
        self.conn = Connection.open(parse_dsn(server.dsn("root")))
        self.db = db
        self.snapshots: list[tuple[tuple[str, int, int], dict[str, dict[tuple[str, ...], dict[str, Any]]]]] = []

    def run(self, *statements: str) -> None:
        for sql in statements:
            self.conn.execute(sql)

    def snapshot(self, tables: list[tuple[str, tuple[str, ...]]]) -> None:
        """Record (position, {table: {pk: row}}) at the current end of the binlog."""
        state: dict[str, dict[tuple[str, ...], dict[str, Any]]] = {}
        for table, pk in tables:
            types = {
                r[0]: r[1]
                for r in self.conn.query(
                    "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS "
                    f"WHERE TABLE_SCHEMA='{self.db}' AND TABLE_NAME='{table}'"
                ).rows
            }
            result = self.conn.query(f"SELECT * FROM `{self.db}`.`{table}`")
            rows = {}
            for raw in result.rows:
                row = {c: _norm_text(types[c], v) for c, v in zip(result.columns, raw, strict=True)}
                rows[tuple(row[k] for k in pk)] = row
            state[table] = rows
        status = server_binlog_status(self.conn)
        self.snapshots.append(((*binlog_file_key(status.file), status.pos), state))

    def close(self) -> None:
        self.conn.close()


def _capture_workload(server: Any, names_in_binlog: bool, late: bool) -> None:
    metadata = "FULL" if names_in_binlog else "NO_LOG" if server.is_mariadb else "MINIMAL"
    db = f"cap_{metadata.lower()}_{uuid.uuid4().hex[:6]}"
    admin = Connection.open(parse_dsn(server.dsn("root")))
    old = admin.query("SELECT @@GLOBAL.binlog_row_metadata").rows[0][0]
    admin.execute(f"SET GLOBAL binlog_row_metadata = {metadata}")
    try:
        admin.execute(f"CREATE DATABASE {db} CHARACTER SET utf8mb4")
        # A table that exists before capture starts: its schema comes from information_schema.
        admin.execute(
            f"CREATE TABLE {db}.pre (id INT PRIMARY KEY, u INT UNSIGNED, label VARCHAR(30) CHARACTER SET latin1,"
            " mood ENUM('happy','sad'), tags SET('a','b','c'))"
        )
        admin.execute(f"INSERT INTO {db}.pre VALUES (1, 4294967295, 'caf\u00e9', 'sad', 'a,c')")
        keep = lambda d, t: d == db  # noqa: E731
        if late:  # the schema is read after the workload, for a start before it
            here = server_binlog_status(admin)
            request = StartRequest(file=here.file, pos=here.pos)
        else:
            begin = prepare_capture(parse_dsn(server.dsn("repl")), StartRequest(from_now=True), include=keep)
        work = Workload(server, db)
        t = f"{db}.t"
        pre_pk = ("id",)
        work.run(
            f"UPDATE {db}.pre SET u = 7, tags = 'b' WHERE id = 1",
            f"INSERT INTO {db}.pre VALUES (2, 0, 'x', 'happy', '')",
            f"CREATE TABLE {t} (id INT PRIMARY KEY, a INT UNSIGNED, b VARCHAR(20) CHARACTER SET latin1,"
            " e ENUM('x','y','z'), s SET('p','q'))",
            f"INSERT INTO {t} VALUES (1, 4000000000, '\u00e9t\u00e9', 'y', 'p,q'), (2, 5, NULL, 'z', ''),"
            " (3, 6, 'three', 'x', 'q')",
        )
        work.snapshot([("pre", pre_pk), ("t", ("id",))])
        work.run(
            f"ALTER TABLE {t} ADD COLUMN c DECIMAL(10,2) AFTER a, ADD COLUMN first_col INT FIRST",
            f"UPDATE {t} SET c = id * 1.25, first_col = -id",
            f"INSERT INTO {t} (id, a, b, e, s, c, first_col) VALUES (4, 1, 'four', 'x', 'p', -3.50, 44)",
        )
        work.snapshot([("t", ("id",))])
        work.run(
            f"ALTER TABLE {t} DROP COLUMN b",
            f"UPDATE {t} SET a = a + 1",
            f"DELETE FROM {t} WHERE id = 2",
        )
        work.snapshot([("t", ("id",))])
        work.run(
            f"ALTER TABLE {t} MODIFY a BIGINT NOT NULL",
            f"ALTER TABLE {t} CHANGE e mood ENUM('x','y','z','w')",
            f"ALTER TABLE {t} RENAME COLUMN c TO amount",
            f"UPDATE {t} SET a = a * 1000000, mood = 'w'",
        )
        work.snapshot([("t", ("id",))])
        work.run(f"RENAME TABLE {t} TO {db}.t2", f"UPDATE {db}.t2 SET amount = amount + 1")
        work.snapshot([("t2", ("id",))])
        work.run(
            f"CREATE TABLE IF NOT EXISTS {db}.u (k VARCHAR(10) PRIMARY KEY, n INT)",
            "BEGIN",
            f"INSERT INTO {db}.u VALUES ('one', 1), ('two', 2)",
            f"UPDATE {db}.t2 SET a = a + 1 WHERE id = 1",
            f"UPDATE {db}.pre SET label = 'multi' WHERE id = 2",
            f"DELETE FROM {db}.u WHERE k = 'two'",
            "COMMIT",
        )
        work.snapshot([("t2", ("id",)), ("u", ("k",)), ("pre", pre_pk)])
        work.run(
            f"DROP TABLE {db}.t2",
            f"CREATE TABLE {db}.t2 (id VARCHAR(8) PRIMARY KEY, z DOUBLE, note TEXT)",
            f"INSERT INTO {db}.t2 VALUES ('a', 1.5, 'first'), ('b', -2.25e10, NULL)",
            f"UPDATE {db}.t2 SET z = z / 3",
            f"ALTER TABLE {db}.u ADD COLUMN extra INT DEFAULT 5",
            f"INSERT INTO {db}.u VALUES ('three', 3, 7)",
            f"UPDATE {db}.u SET extra = 6 WHERE k = 'one'",  # the model does not add columns to old rows
        )
        work.snapshot([("t2", ("id",)), ("u", ("k",))])
        work.close()
        if late:
            begin = prepare_capture(parse_dsn(server.dsn("repl")), request, include=keep)
            assert begin.tracker.read_at is not None and begin.tracker.catalog.get(db, "t2") is not None
        capture = ChangeCapture(CaptureConfig(table_filter=keep, ddl=True), begin.start, begin.tracker)
        committed = list(follow(FollowConfig(parse_dsn(server.dsn("repl")), until_end=True), capture))
        # Offline, with no server: the DDL in the files is the schema history.
        files = [str(server.binlog_dir / name) for name in server.binlog_files()]
        dumped = subprocess.run(
            [sys.executable, "-m", "sluice.cli", "dump", "--tables", rf"{db}\..*", *files],
            capture_output=True, timeout=300,
        )
    finally:
        admin.execute(f"SET GLOBAL binlog_row_metadata = {old}")
        admin.execute(f"DROP DATABASE IF EXISTS {db}")
        admin.close()

    assert not capture.tracker.unparsed, capture.tracker.unparsed
    assert dumped.returncode == 0, dumped.stderr.decode()
    live = [record_line(r) for tx in committed for r in tx.records if not isinstance(r, DdlRecord)]
    offline = dumped.stdout.decode().splitlines()
    assert offline[-len(live):] == live, "sluice dump of the files differs from the live capture"
    model: dict[str, dict[tuple[str, ...], dict[str, Any]]] = {}
    pks: dict[str, tuple[str, ...]] = {}
    snapshots = iter(work.snapshots)
    at, expected = next(snapshots)
    n_rows = 0

    def check(expected: dict[str, dict[tuple[str, ...], dict[str, Any]]]) -> None:
        for table, rows in expected.items():
            got = model.get(table, {})
            assert set(got) == set(rows), f"{table}: keys {sorted(got)} != {sorted(rows)}"
            for key, row in rows.items():
                assert got[key] == row, f"{table} {key}: captured {got[key]} != SELECT {row}"

    for tx in committed:
        end = (*binlog_file_key(tx.end.file), tx.end.pos)
        while end > at:
            check(expected)
            at, expected = next(snapshots, ((("~", 0), 0), {}))  # type: ignore[assignment]
        for record in tx.records:
            if isinstance(record, DdlRecord):
                if record.kind == "rename_table":
                    (_, old_name), (_, new_name) = record.tables
                    model[new_name] = model.pop(old_name, {})
                elif record.kind == "drop_table":
                    for _, name in record.tables:
                        model.pop(name, None)
                continue
            n_rows += 1
            rows = model.setdefault(record.table, {})
            pks[record.table] = record.pk
            if record.before is not None:
                key = tuple(_norm(record.before[k]) for k in record.pk)
                # Only rows of `pre` may predate the capture.
                assert key in rows or record.table == "pre", f"{record.table}: before image of an unknown row {key}"
                rows.pop(key, None)
            if record.after is not None:
                image = {k: _norm(v) for k, v in record.after.items()}
                rows[tuple(image[k] for k in record.pk)] = image
    check(expected)
    assert next(snapshots, None) is None, "the capture ended before the last phase"
    assert n_rows == 31  # every statement above, row by row
    assert pks["t2"] == ("id",) and pks["u"] == ("k",)


@pytest.mark.parametrize(("names_in_binlog", "late"), [(True, False), (False, False), (False, True), (True, True)],
                         ids=["metadata-full", "metadata-none", "metadata-none-read-late", "metadata-full-read-late"])
def test_schema_at_event_time_through_a_changing_workload(server, names_in_binlog, late, caplog):
    """``read-late``: the capture starts before the workload with the schema read after it, as a
    start at an older position does; the tracker must sort out the DDL in between as it meets it."""
    with caplog.at_level("WARNING", logger="sluice.cdc.schema.tracker"):
        _capture_workload(server, names_in_binlog, late)
    assert caplog.records == []  # every table the workload changes, it made itself
