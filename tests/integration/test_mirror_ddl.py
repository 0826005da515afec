"""Every kind of DDL reaches the Delta mirror with the server's semantics (real servers, real Spark).

The lake is snapshotted first; then DDL of every kind runs with DML between, and `sluice run
--trigger once` catches up: every mirror must equal `SELECT` value by value (`sluice verify` and a
direct comparison), dropped and renamed-away tables leave no mirror behind, and the change log
holds each DDL once as a `ddl` record. Run with the server's default row metadata and with FULL;
on MariaDB 11.8 with its default (NO_LOG) only, where the names come from the DDL it logs (FULL
metadata is the binlog's own names, which the type matrix covers on 11.8).
"""

from __future__ import annotations

import json
import os
import uuid
from decimal import Decimal
from typing import Any

import deltalake
import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.verify.check import verify_lake

pytestmark = pytest.mark.spark


def _mirror(lake: str, db: str, table: str) -> list[dict[str, Any]]:
    rows = deltalake.DeltaTable(f"{lake}/{db}/{table}").to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: r["id"])


def _columns(lake: str, db: str, table: str) -> list[str]:
    return deltalake.DeltaTable(f"{lake}/{db}/{table}").schema().to_arrow().names


def _run(server, lake: str, db: str, snapshot: str = "initial") -> Any:
    config = PipelineConfig(source=server.dsn("root"), lake=lake, tables=rf"{db}\..*", trigger="once",
                            snapshot=snapshot)
    return Pipeline(config).run(handle_signals=False)


def _setup(conn: Connection, db: str) -> None:
    conn.execute(f"CREATE DATABASE {db}")
    conn.execute(f"CREATE TABLE {db}.orders (id INT PRIMARY KEY, qty INT, price DECIMAL(10,2), note VARCHAR(20))")
    conn.execute(f"CREATE TABLE {db}.scratch (id INT PRIMARY KEY, v INT)")
    conn.execute(f"CREATE TABLE {db}.events (id INT PRIMARY KEY, k VARCHAR(10))")
    conn.execute(f"CREATE TABLE {db}.tmp (id INT PRIMARY KEY, a INT)")
    conn.execute(f"CREATE TABLE {db}.items (id INT PRIMARY KEY, name VARCHAR(20), color VARCHAR(10))")
    for i in range(1, 41):
        conn.execute(f"INSERT INTO {db}.orders VALUES ({i}, {i}, {i}.50, 'n{i}')")
    for t in ("scratch", "tmp"):
        conn.execute(f"INSERT INTO {db}.{t} VALUES (1, 1), (2, 2), (3, 3), (4, 4)")
    conn.execute(f"INSERT INTO {db}.events VALUES (1, 'a'), (2, 'b')")
    conn.execute(f"INSERT INTO {db}.items VALUES (1, 'pen', 'red'), (2, 'cup', NULL)")


def _ddl_script(conn: Connection, db: str) -> None:
    x = conn.execute
    x(f"ALTER TABLE {db}.orders ADD COLUMN status VARCHAR(10) DEFAULT 'new'")
    x(f"INSERT INTO {db}.orders (id, qty, price, note, status) VALUES (100, 7, 7.25, 'late', 'paid')")
    x(f"ALTER TABLE {db}.orders ADD COLUMN flag INT NOT NULL FIRST, ADD COLUMN w DECIMAL(6,2) DEFAULT 1.5 AFTER qty")
    x(f"UPDATE {db}.orders SET flag = 2 WHERE id % 5 = 0")
    x(f"ALTER TABLE {db}.orders MODIFY qty BIGINT, MODIFY price DECIMAL(14,3)")
    x(f"UPDATE {db}.orders SET qty = 5000000000, price = 1.125 WHERE id = 3")
    x(f"ALTER TABLE {db}.orders RENAME COLUMN note TO remark")
    x(f"ALTER TABLE {db}.orders DROP COLUMN flag")
    x(f"DELETE FROM {db}.orders WHERE id = 4")
    x(f"ALTER TABLE {db}.orders ADD COLUMN created DATETIME DEFAULT CURRENT_TIMESTAMP")  # not computable: re-read
    x(f"UPDATE {db}.orders SET status = 'sent' WHERE id = 6")
    x(f"TRUNCATE TABLE {db}.scratch")
    x(f"INSERT INTO {db}.scratch VALUES (9, 9)")
    x(f"ALTER TABLE {db}.scratch DROP PRIMARY KEY, ADD PRIMARY KEY (id, v)")
    x(f"INSERT INTO {db}.scratch VALUES (9, 10)")
    x(f"RENAME TABLE {db}.events TO {db}.events_v2")
    x(f"INSERT INTO {db}.events_v2 VALUES (3, 'c')")
    x(f"DROP TABLE {db}.tmp")
    x(f"CREATE TABLE {db}.tmp (id INT PRIMARY KEY, b VARCHAR(5))")
    x(f"INSERT INTO {db}.tmp VALUES (1, 'new')")
    x(f"ALTER TABLE {db}.items MODIFY name VARCHAR(5), MODIFY color VARCHAR(10) AFTER id")  # narrowing: re-read
    x(f"UPDATE {db}.items SET color = 'blue' WHERE id = 2")
    x(f"ALTER TABLE {db}.items ADD COLUMN size INT DEFAULT 3")  # a run of DDLs: one batch
    x(f"ALTER TABLE {db}.items RENAME COLUMN size TO qty")
    x(f"UPDATE {db}.items SET qty = 4 WHERE id = 1")


def test_every_ddl_reaches_the_mirror(spark, server, row_metadata, tmp_path):
    _every_ddl_reaches_the_mirror(server, tmp_path)


@pytest.mark.mariadb11
def test_every_ddl_reaches_the_mirror_on_mariadb11(spark, mariadb11_server, tmp_path):
    _every_ddl_reaches_the_mirror(mariadb11_server, tmp_path)


def _every_ddl_reaches_the_mirror(server: Any, tmp_path: Any) -> None:
    db = f"md_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        _setup(conn, db)
        _run(server, lake, db, snapshot="only")
        _ddl_script(conn, db)  # after the snapshot, before the stream's first batch
        _run(server, lake, db)
        verdicts = verify_lake(parse_dsn(server.dsn("root")), lake, tables=lambda d, _t: d == db)
        assert {v.table for v in verdicts} == {"orders", "scratch", "events_v2", "tmp", "items"}, verdicts
        assert all(v.ok for v in verdicts), [v for v in verdicts if not v.ok]
        assert not os.path.exists(f"{lake}/{db}/events"), "the renamed table's old mirror is still there"
        assert _columns(lake, db, "orders") == ["id", "qty", "w", "price", "remark", "status", "created"]
        assert _columns(lake, db, "items") == ["id", "color", "name", "qty"]
        assert sorted((r["id"], r["qty"]) for r in _mirror(lake, db, "items")) == [(1, 4), (2, 3)]
        orders = {r["id"]: r for r in _mirror(lake, db, "orders")}
        assert orders[1]["status"] == "new" and orders[100]["status"] == "paid" and orders[6]["status"] == "sent"
        assert orders[3]["qty"] == 5000000000 and orders[3]["price"] == Decimal("1.125")
        assert orders[2]["w"] == Decimal("1.50") and orders[2]["remark"] == "n2" and 4 not in orders
        assert sorted((r["id"], r["v"]) for r in _mirror(lake, db, "scratch")) == [(9, 9), (9, 10)]
        assert [(r["id"], r["b"]) for r in _mirror(lake, db, "tmp")] == [(1, "new")]
        assert [(r["id"], r["k"]) for r in _mirror(lake, db, "events_v2")] == [(1, "a"), (2, "b"), (3, "c")]
        archived = os.listdir(f"{lake}/_sluice/archive/{db}")
        assert any(name.startswith("tmp@") for name in archived), archived
        log = deltalake.DeltaTable(f"{lake}/_sluice/changes").to_pyarrow_table().to_pylist()
        ddl = [json.loads(r["ddl"]) for r in log if r["op"] == "ddl"]
        statements = [d["sql"] for d in ddl]
        assert len(statements) == len(set(statements)) == 14, statements
        # The two ALTERs in a row were one batch: one range, one change-log file.
        files = deltalake.DeltaTable(f"{lake}/_sluice/changes").to_pyarrow_dataset().to_table(
            columns=["op", "ddl", "__filename"]).to_pylist()
        run = [r["__filename"] for r in files if r["op"] == "ddl" and "COLUMN size" in json.loads(r["ddl"])["sql"]]
        assert len(run) == 2 and run[0] == run[1], run
        assert {d["kind"] for d in ddl} >= {"alter_table", "truncate_table", "rename_table", "drop_table",
                                            "create_table"}
        # A second run changes nothing.
        again = _run(server, lake, db)
        assert again.rows == 0
        conn.execute(f"DROP DATABASE {db}")


def test_partition_maintenance_reaches_the_mirror(spark, server3, tmp_path):
    """Dropped, truncated, exchanged and (MariaDB) converted partitions move rows with no row event
    in the binlog: the mirrors of the tables they touch are read again and equal the server's."""
    server = server3
    db = f"mp_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        x = conn.execute
        x(f"CREATE DATABASE {db}")
        x(f"CREATE TABLE {db}.p (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS "
          "THAN (10), PARTITION p1 VALUES LESS THAN (20), PARTITION p2 VALUES LESS THAN (30), "
          "PARTITION p3 VALUES LESS THAN (40), PARTITION p4 VALUES LESS THAN MAXVALUE)")
        x(f"INSERT INTO {db}.p VALUES " + ", ".join(f"({i}, {i})" for i in range(1, 50)))
        x(f"CREATE TABLE {db}.x (id INT PRIMARY KEY, v INT)")
        x(f"INSERT INTO {db}.x VALUES (11, -11), (12, -12)")
        _run(server, lake, db, snapshot="only")
        x(f"ALTER TABLE {db}.p TRUNCATE PARTITION p0")
        x(f"INSERT INTO {db}.p VALUES (5, 55)")
        x(f"ALTER TABLE {db}.p DROP PARTITION p2")
        x(f"ALTER TABLE {db}.p EXCHANGE PARTITION p1 WITH TABLE {db}.x")
        x(f"UPDATE {db}.x SET v = v + 1000 WHERE id = 15")
        x(f"ALTER TABLE {db}.p REORGANIZE PARTITION p4 INTO (PARTITION p4a VALUES LESS THAN (45), "
          "PARTITION p4b VALUES LESS THAN MAXVALUE)")
        x(f"UPDATE {db}.p SET v = 0 WHERE id = 11")
        tables = {"p", "x"}
        if conn.is_mariadb:
            x(f"ALTER TABLE {db}.p CONVERT PARTITION p3 TO TABLE {db}.q")
            x(f"UPDATE {db}.q SET v = -v WHERE id = 33")
            tables.add("q")
        _run(server, lake, db)
        verdicts = verify_lake(parse_dsn(server.dsn("root")), lake, tables=lambda d, _t: d == db)
        assert {v.table for v in verdicts} == tables, verdicts
        assert all(v.ok for v in verdicts), [v for v in verdicts if not v.ok]
        ids = [r["id"] for r in _mirror(lake, db, "p")]
        assert 5 in ids and 1 not in ids and 25 not in ids and 11 in ids and 15 not in ids
        assert _run(server, lake, db).rows == 0
        conn.execute(f"DROP DATABASE {db}")


def test_mariadb_sequences_are_captured(spark, mariadb_server, tmp_path):
    """A MariaDB sequence is a one-row table the server writes as row events (NEXTVAL past its
    cache, SETVAL, ALTER SEQUENCE ... RESTART): the capture knows its columns from the server and
    from CREATE / ALTER / DROP SEQUENCE, and its rows go to the change log (it has no key)."""
    db = f"sq_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    with Connection.open(parse_dsn(mariadb_server.dsn("root"))) as conn:
        x = conn.execute
        x(f"CREATE DATABASE {db}")
        x(f"CREATE SEQUENCE {db}.seq CACHE 2")
        x(f"CREATE TABLE {db}.t (id BIGINT PRIMARY KEY DEFAULT NEXTVAL({db}.seq), v INT)")
        x(f"INSERT INTO {db}.t (v) VALUES (1), (2), (3)")
        _run(mariadb_server, lake, db, snapshot="only")
        x(f"INSERT INTO {db}.t (v) VALUES (4), (5), (6)")
        conn.query(f"SELECT SETVAL({db}.seq, 100)")
        x(f"ALTER SEQUENCE {db}.seq RESTART WITH 500")
        x(f"INSERT INTO {db}.t (v) VALUES (7)")
        x(f"CREATE SEQUENCE {db}.other START WITH 7 CACHE 0")
        conn.query(f"SELECT NEXTVAL({db}.other)")
        x(f"DROP SEQUENCE {db}.other")
        x(f"CREATE OR REPLACE SEQUENCE {db}.seq START WITH 1000 CACHE 0")
        x(f"INSERT INTO {db}.t (v) VALUES (8)")
        _run(mariadb_server, lake, db)
        verdicts = verify_lake(parse_dsn(mariadb_server.dsn("root")), lake, tables=lambda d, _t: d == db)
        # the sequence has no key: no mirror, and verify says so
        assert [(v.table, v.ok, v.compared) for v in verdicts] == [("seq", True, False), ("t", True, True)], verdicts
        ids = sorted(r["id"] for r in _mirror(lake, db, "t"))
        assert ids[-2:] == [500, 1000], ids
        log = deltalake.DeltaTable(f"{lake}/_sluice/changes").to_pyarrow_table().to_pylist()
        sequence_rows = [r for r in log if r["table"] in ("seq", "other") and r["op"] != "ddl"]
        assert {r["table"] for r in sequence_rows} == {"seq", "other"}, sequence_rows
        assert any(r["op"] == "read" and r["table"] == "seq" for r in sequence_rows)
        assert all(r["op"] in ("read", "insert", "update", "delete") for r in sequence_rows)
        x(f"DROP DATABASE {db}")
