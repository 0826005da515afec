"""MariaDB's system-versioned tables, captured from real servers (10.11 and 11.8).

The server keeps a versioned table's old rows in the table itself: an UPDATE is logged as the
update of the current row plus a WRITE of the history row, a DELETE as an UPDATE that ends the
row's period, ``DELETE HISTORY`` as DELETE_ROWS of history rows. ``sluice tail`` gives each row
the op that says so (``insert``, ``update``, ``delete``, ``history``, ``delete_history``); the
pipeline mirrors the current rows only (``sluice verify`` compares them with ``SELECT``, which
reads the current rows), without the implicit ``row_start`` / ``row_end``, and its change log
holds the history rows with their ops. Tables with implicit and explicit period columns are
snapshotted (their schema read from ``information_schema``) and one more is created after the
snapshot (its schema from the replayed DDL); an ALTER ADD COLUMN and ADD / DROP SYSTEM VERSIONING
run between the changes. Transaction-precise tables, whose changes both servers log as
statements, are refused by ``sluice run`` (``test_source_checks``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections import Counter
from typing import Any

import deltalake
import pytest

from sluice.cdc.source_checks import transaction_precise_tables
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.verify.check import verify_lake

SERVERS = [pytest.param("mariadb_server", marks=pytest.mark.mariadb, id="mariadb"),
           pytest.param("mariadb11_server", marks=pytest.mark.mariadb11, id="mariadb11")]
KEEP = "SET SESSION system_versioning_alter_history = KEEP"


@pytest.fixture(params=SERVERS)
def versioning_server(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def _run(server: Any, lake: str, db: str, snapshot: str = "initial") -> Any:
    config = PipelineConfig(source=server.dsn("root"), lake=lake, tables=rf"{db}\..*", trigger="once",
                            snapshot=snapshot)
    return Pipeline(config).run(handle_signals=False)


def _mirror(lake: str, db: str, table: str) -> tuple[list[str], list[dict[str, Any]]]:
    dt = deltalake.DeltaTable(f"{lake}/{db}/{table}")
    return dt.schema().to_arrow().names, sorted(dt.to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


@pytest.mark.spark
def test_versioned_tables_mirror_their_current_rows(spark, versioning_server, tmp_path) -> None:
    server = versioning_server
    db = f"sv_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        x = conn.execute
        x(f"CREATE DATABASE {db}")
        x(f"CREATE TABLE {db}.imp (id INT PRIMARY KEY, name VARCHAR(20), n INT WITHOUT SYSTEM VERSIONING) "
          "WITH SYSTEM VERSIONING")
        x(f"CREATE TABLE {db}.exp (id INT PRIMARY KEY, v INT, vs TIMESTAMP(6) GENERATED ALWAYS AS ROW START, "
          "ve TIMESTAMP(6) GENERATED ALWAYS AS ROW END, PERIOD FOR SYSTEM_TIME (vs, ve)) WITH SYSTEM VERSIONING")
        x(f"CREATE TABLE {db}.plain (id INT PRIMARY KEY, v INT)")
        x(f"INSERT INTO {db}.imp VALUES (1, 'one', 1), (2, 'two', 2), (3, 'three', 3)")
        x(f"UPDATE {db}.imp SET name = 'uno' WHERE id = 1")  # history before the snapshot: not mirrored
        x(f"INSERT INTO {db}.exp (id, v) VALUES (1, 10), (2, 20)")
        x(f"INSERT INTO {db}.plain VALUES (1, 1), (2, 2)")
        _run(server, lake, db, snapshot="only")
        assert _mirror(lake, db, "imp")[0] == ["id", "name", "n"]
        assert _mirror(lake, db, "exp")[0] == ["id", "v", "vs", "ve"]

        x(f"INSERT INTO {db}.imp VALUES (4, 'four', 4)")
        x(f"UPDATE {db}.imp SET name = 'dos' WHERE id = 2")  # update + history
        x(f"UPDATE {db}.imp SET n = 30 WHERE id = 3")  # a column WITHOUT SYSTEM VERSIONING: update only
        x(f"DELETE FROM {db}.imp WHERE id = 4")  # delete: the row ends, kept as history
        x(f"DELETE HISTORY FROM {db}.imp")  # delete_history of every history row
        x(KEEP)
        x(f"ALTER TABLE {db}.imp ADD COLUMN extra INT DEFAULT 7")
        x(f"UPDATE {db}.imp SET extra = 8 WHERE id = 1")
        x(f"UPDATE {db}.exp SET v = 21 WHERE id = 2")
        x(f"DELETE FROM {db}.exp WHERE id = 1")
        x(f"INSERT INTO {db}.exp (id, v) VALUES (3, 30)")
        x(f"ALTER TABLE {db}.plain ADD SYSTEM VERSIONING")
        x(f"UPDATE {db}.plain SET v = 5 WHERE id = 1")
        x(f"DELETE FROM {db}.plain WHERE id = 2")
        x(f"CREATE TABLE {db}.late (id INT PRIMARY KEY, v VARCHAR(10)) WITH SYSTEM VERSIONING")
        x(f"INSERT INTO {db}.late VALUES (1, 'a'), (2, 'b')")
        x(f"UPDATE {db}.late SET v = 'c' WHERE id = 1")
        x(f"DELETE FROM {db}.late WHERE id = 2")
        x(KEEP)
        x(f"ALTER TABLE {db}.late DROP SYSTEM VERSIONING")
        x(f"UPDATE {db}.late SET v = 'd' WHERE id = 1")
        x(f"INSERT INTO {db}.late VALUES (3, 'e')")
        _run(server, lake, db)

        verdicts = verify_lake(parse_dsn(server.dsn("root")), lake, tables=lambda d, _t: d == db)
        assert {v.table for v in verdicts} == {"imp", "exp", "plain", "late"}, verdicts
        assert all(v.ok for v in verdicts), [v for v in verdicts if not v.ok]
        columns, imp = _mirror(lake, db, "imp")
        assert columns == ["id", "name", "n", "extra"]
        assert [(r["id"], r["name"], r["n"], r["extra"]) for r in imp] == [
            (1, "uno", 1, 8), (2, "dos", 2, 7), (3, "three", 30, 7)]
        columns, exp = _mirror(lake, db, "exp")
        assert columns == ["id", "v", "vs", "ve"] and [(r["id"], r["v"]) for r in exp] == [(2, 21), (3, 30)]
        assert len({r["ve"] for r in exp}) == 1  # every row current: the largest TIMESTAMP of the server
        assert _mirror(lake, db, "plain") == (["id", "v"], [{"id": 1, "v": 5}])
        assert _mirror(lake, db, "late") == (["id", "v"], [{"id": 1, "v": "d"}, {"id": 3, "v": "e"}])

        log = deltalake.DeltaTable(f"{lake}/_sluice/changes").to_pyarrow_table().to_pylist()
        ops = Counter((r["table"], r["op"]) for r in log if r["op"] not in ("ddl", "read"))
        assert ops == {
            ("imp", "insert"): 1, ("imp", "update"): 3, ("imp", "history"): 2, ("imp", "delete"): 1,
            ("imp", "delete_history"): 3,
            ("exp", "update"): 1, ("exp", "history"): 1, ("exp", "delete"): 1, ("exp", "insert"): 1,
            ("plain", "update"): 1, ("plain", "history"): 1, ("plain", "delete"): 1,
            ("late", "insert"): 3, ("late", "update"): 2, ("late", "history"): 1, ("late", "delete"): 1,
        }, ops
        history = [json.loads(r["after"]) for r in log if r["table"] == "imp" and r["op"] == "history"]
        assert sorted(h["name"] for h in history) == ["two", "uno"]  # the old rows, as the server keeps them
        assert all(h["row_end"] < "2038" for h in history)
        gone = [json.loads(r["before"]) for r in log if r["table"] == "imp" and r["op"] == "delete_history"]
        assert sorted(g["id"] for g in gone) == [1, 2, 4]
        deleted = next(r for r in log if r["table"] == "imp" and r["op"] == "delete")
        assert json.loads(deleted["before"])["id"] == 4 and json.loads(deleted["after"])["row_end"] < "2038"
        assert _run(server, lake, db).rows == 0
        x(f"DROP DATABASE {db}")


def _sluice(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "sluice.cli", *args], capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    return out.stdout.decode()


def test_tail_gives_the_versioned_ops(versioning_server) -> None:
    server = versioning_server
    db = f"st_{uuid.uuid4().hex[:8]}"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        x = conn.execute
        x(f"CREATE DATABASE {db}")
        x(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT) WITH SYSTEM VERSIONING")
        start = server_binlog_status(conn)  # the table is known from information_schema
        x(f"INSERT INTO {db}.t VALUES (1, 1), (2, 2)")
        x(f"UPDATE {db}.t SET v = 10 WHERE id = 1")
        x(f"DELETE FROM {db}.t WHERE id = 2")
        x(f"DELETE HISTORY FROM {db}.t")
        where = f"{start.file}:{start.pos}"
        lines = _sluice("tail", server.dsn("repl"), "--from", where, "--until-end", "--tables", rf"{db}\..*")
        history = _sluice("tail", server.dsn("repl"), "--from", where, "--until-end", "--tables", rf"{db}\..*",
                          "--ops", "history,delete_history")
        x(f"DROP DATABASE {db}")
    changes = [json.loads(line) for line in lines.splitlines()]
    assert [(c["op"], (c["after"] or c["before"])["id"]) for c in changes] == [
        ("insert", 1), ("insert", 2), ("update", 1), ("history", 1), ("delete", 2),
        ("delete_history", 1), ("delete_history", 2)]
    assert all(c["pk"] == ["id"] for c in changes)
    assert changes[3]["after"]["v"] == 1 and changes[3]["after"]["row_end"] == changes[2]["after"]["row_start"]
    assert [c["op"] for c in map(json.loads, history.splitlines())] == ["history", "delete_history", "delete_history"]


def test_transaction_precise_tables_are_logged_as_statements(versioning_server) -> None:
    """Why ``sluice run`` refuses them: both servers log a transaction-precise table's changes as
    their statements, also with ``binlog_format=ROW``, and ``transaction_precise_tables`` finds it."""
    server = versioning_server
    db = f"sx_{uuid.uuid4().hex[:8]}"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        x = conn.execute
        x(f"CREATE DATABASE {db}")
        x(f"CREATE TABLE {db}.trx (id INT PRIMARY KEY, a INT, s BIGINT UNSIGNED GENERATED ALWAYS AS ROW START, "
          "e BIGINT UNSIGNED GENERATED ALWAYS AS ROW END, PERIOD FOR SYSTEM_TIME (s, e)) WITH SYSTEM VERSIONING")
        x(f"CREATE TABLE {db}.ts (id INT PRIMARY KEY, a INT) WITH SYSTEM VERSIONING")
        assert conn.query("SELECT @@binlog_format").rows[0][0] == "ROW"
        start = server_binlog_status(conn)
        x(f"INSERT INTO {db}.trx (id, a) VALUES (1, 1)")
        x(f"UPDATE {db}.trx SET a = 2")
        x(f"INSERT INTO {db}.ts VALUES (1, 1)")
        found = transaction_precise_tables(conn, lambda d, _t: d == db)
        lines = _sluice("tail", server.dsn("repl"), "--from", f"{start.file}:{start.pos}", "--until-end",
                        "--tables", rf"{db}\..*", "--events")
        x(f"DROP DATABASE {db}")
    assert found == [f"{db}.trx"]
    events = [json.loads(line) for line in lines.splitlines()]
    queries = [e["query"] for e in events if e["type"] == "QUERY_EVENT"]
    assert any(q.startswith(f"INSERT INTO {db}.trx") for q in queries), queries
    assert any(q.startswith(f"UPDATE {db}.trx") for q in queries), queries
    mapped = [e["table"] for e in events if e["type"] == "TABLE_MAP_EVENT"]
    assert mapped == ["ts"], mapped  # rows events of the timestamp-versioned table only
