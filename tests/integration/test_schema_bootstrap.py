"""Schema bootstrap and tracking against real servers.

On the suite's MariaDB (``binlog_row_metadata`` NO_LOG: TABLE_MAPs without names or charsets) and
MySQL 9.7 (MINIMAL: charsets and signedness, no names) servers:

* ``bootstrap_catalog`` describes every table exactly as ``apply_ddl`` of its CREATE TABLE does,
  column by column (all types, latin1 / utf8mb4 / binary charsets, ENUM/SET with escapes,
  composite and absent primary keys, invisible columns, MariaDB's system-versioned tables with
  implicit and explicit period columns), and still does after a series of ALTER,
  RENAME and DROP statements replayed from the binlog;
* a ``SchemaTracker`` started from the bootstrap follows the binlog over the replication protocol —
  QUERY events into ``on_query``, TABLE_MAPs into ``resolve`` — and the rows decoded with the
  resolved columns equal what SELECT returns, before and after DDL in the middle of the stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from sluice.binlog import rowplan
from sluice.binlog.events import QueryEvent, RowsEvent, TableMapEvent
from sluice.binlog.parser import EventParser, ParserConfig
from sluice.binlog.values.geometry import Geometry
from sluice.cdc.schema import Catalog, SchemaTracker, apply_ddl, bootstrap_catalog
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import ReplicationStream, StreamConfig, server_binlog_status

DB = "schema_boot"

FLAVORS = [
    pytest.param("mariadb", marks=pytest.mark.mariadb, id="mariadb"),
    pytest.param("mysql", marks=pytest.mark.mysql, id="mysql"),
]


def tables_ddl(flavor: str) -> list[str]:
    extra = ", u uuid, i6 inet6, i4 inet4" if flavor == "mariadb" else ", vec vector(3)"
    return [
        "CREATE TABLE types (id int NOT NULL, k varchar(10) NOT NULL, ti tinyint, si smallint unsigned, "
        "mi mediumint, bi bigint unsigned, de decimal(12,4), de0 decimal, fl float, db double, bt bit(10), "
        "dt date, tm time(3), dtm datetime(6), ts timestamp(2) NULL, yr year, c char(5), vc varchar(40), "
        "vu varchar(40) CHARACTER SET utf8mb4, vb varchar(10) COLLATE latin1_bin, bn binary(4), vbn varbinary(12), "
        "cb char(3) CHARACTER SET binary, tt tinytext, tx text, mt mediumtext CHARACTER SET utf8mb4, lt longtext, "
        "tb tinyblob, bl blob, mb mediumblob, lb longblob, "
        r"en enum('a','b''c','d\\e') NOT NULL DEFAULT 'a', st set('x','y','z'), js json, pt point, "
        "inv int INVISIBLE, PRIMARY KEY (id, k))",
        "CREATE TABLE utf (id int PRIMARY KEY, name varchar(20), note text) "
        "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci",
        "CREATE TABLE bin (id int PRIMARY KEY, b varbinary(8), t text) DEFAULT CHARSET=binary",
        "CREATE TABLE nopk (a int, b varchar(3), z int zerofill, f float(30), s serial)",
        f"CREATE TABLE special (id int PRIMARY KEY{extra})",
        *(VERSIONED if flavor == "mariadb" else []),
    ]


# MariaDB's system-versioned tables: information_schema lists explicit period columns, not the
# implicit row_start / row_end, which the bootstrap appends as the DDL replay does.
VERSIONED = [
    "CREATE TABLE ver (id int PRIMARY KEY, a varchar(10), b int WITHOUT SYSTEM VERSIONING) WITH SYSTEM VERSIONING",
    "CREATE TABLE verx (id int, v int, s timestamp(6) GENERATED ALWAYS AS ROW START, e timestamp(6) GENERATED "
    "ALWAYS AS ROW END, PRIMARY KEY (id, e), PERIOD FOR SYSTEM_TIME (s, e)) WITH SYSTEM VERSIONING",
]


def replay(catalog: Catalog, statements: list[str]) -> Catalog:
    for sql in statements:
        catalog, outcome = apply_ddl(catalog, sql, DB)
        assert outcome.understood, (sql, outcome)
    return catalog


def assert_same_tables(booted: Catalog, replayed: Catalog) -> None:
    assert {t.name for t in booted.tables(DB)} == {t.name for t in replayed.tables(DB)}
    for b in booted.tables(DB):
        r = replayed.get(DB, b.name)
        assert r is not None
        assert r.names == b.names, b.name
        for bc, rc in zip(b.columns, r.columns, strict=True):
            assert rc == bc, f"{b.name}.{bc.name}: information_schema {bc}, DDL {rc}"
        assert (r.primary_key, r.charset, r.collation) == (b.primary_key, b.charset, b.collation), b.name
        assert r.system_time == b.system_time, b.name


@dataclass
class Setup:
    flavor: str
    server: Any
    boot: Catalog  # read right after the CREATE TABLEs
    start: tuple[str, int]  # binlog position of the bootstrap


@pytest.fixture(scope="module", params=FLAVORS)
def setup(request) -> Iterator[Setup]:
    flavor = request.param
    server = request.getfixturevalue(f"{flavor}_server")
    with Connection.open(parse_dsn(server.dsn())) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB}")
        conn.execute(f"CREATE DATABASE {DB} CHARACTER SET latin1")
        conn.execute(f"USE {DB}")
        for sql in tables_ddl(flavor):
            conn.execute(sql)
        status = server_binlog_status(conn)
        boot = bootstrap_catalog(conn)
    yield Setup(flavor, server, boot, (status.file, status.pos))
    with Connection.open(parse_dsn(server.dsn())) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB}")


def test_bootstrap_reads_server_defaults(setup: Setup) -> None:
    boot = setup.boot
    assert boot.flavor == setup.flavor
    if setup.flavor == "mysql":
        assert (boot.server_charset, boot.server_collation) == ("utf8mb4", "utf8mb4_0900_ai_ci")
    else:
        assert (boot.server_charset, boot.server_collation) == ("latin1", "latin1_swedish_ci")
    assert boot.database_charset(DB) == "latin1" and boot.database_collation(DB) == "latin1_swedish_ci"
    assert not {"mysql", "sys", "information_schema", "performance_schema"} & set(boot.databases())
    types = boot.get(DB, "types")
    assert types is not None and types.primary_key == ("id", "k")
    by_name = {c.name: c for c in types.columns}
    assert by_name["en"].enum_values == ("a", "b'c", "d\\e") and by_name["st"].set_values == ("x", "y", "z")
    assert (by_name["vc"].charset, by_name["vu"].charset, by_name["bn"].charset) == ("latin1", "utf8mb4", "binary")
    assert by_name["cb"].data_type == "binary" and not by_name["inv"].visible
    only = bootstrap_catalog_of(setup, lambda db, t: db == DB and t == "utf")
    assert [t.name for t in only] == ["utf"]


def bootstrap_catalog_of(setup: Setup, include: Any) -> Catalog:
    with Connection.open(parse_dsn(setup.server.dsn())) as conn:
        return bootstrap_catalog(conn, include)


def test_bootstrap_equals_ddl_replay(setup: Setup) -> None:
    boot = setup.boot
    empty = Catalog(databases=boot.database_defaults(), server_charset=boot.server_charset,
                    server_collation=boot.server_collation, flavor=boot.flavor,
                    default_collations=boot.default_collations())
    assert_same_tables(boot, replay(empty, tables_ddl(setup.flavor)))


# ------------------------------------------------------------------------------------------ following the binlog

DML = [
    "INSERT INTO types (id, k, ti, si, mi, bi, de, de0, fl, db, bt, dt, tm, dtm, ts, yr, c, vc, vu, vb, bn, vbn, cb, "
    "tt, tx, mt, lt, tb, bl, mb, lb, en, st, js, pt, inv) VALUES "
    "(1, 'one', -128, 65535, -8388608, 18446744073709551615, '-12345678.1234', 42, -1.5, 2.5e-300, b'1010101010', "
    "'2024-02-29', '-838:59:59.000', '1000-01-01 00:00:00.000001', '2038-01-19 03:14:07.99', 2155, 'ab', "
    "'café ÿ', 'naïve 🎉 中文', 'Bin', X'00FF', X'DEADBEEF', 'xy', 'tiny', 'text é', 'medium 🎉', 'long', "
    "X'01', X'0203', X'', X'FF00FF', 'd\\\\e', 'x,z', '{\"a\": [1, 2]}', ST_GeomFromText('POINT(1.5 -2)'), 7), "
    "(2, 'two', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'b''c', NULL, NULL, NULL, NULL)",
    "UPDATE types SET vc = 'ÀÉÎ', st = 'y', en = 'a', bi = 0 WHERE id = 1",
    "INSERT INTO utf VALUES (1, 'Zoë', 'note 1'), (2, '中文', NULL)",
    "INSERT INTO bin VALUES (1, X'00010203', 'raw')",
    "INSERT INTO nopk (a, b, z, f) VALUES (1, 'x', 5, 2.5), (2, 'y', 6, -0.25)",
    "DELETE FROM nopk WHERE a = 2",
    "ALTER TABLE utf ADD COLUMN extra varchar(5) CHARACTER SET latin1 AFTER id, DROP COLUMN note",
    "INSERT INTO utf VALUES (3, 'àé', 'new')",
    "UPDATE utf SET name = CONCAT(name, '!'), extra = 'é' WHERE id <= 2",  # every row in the new layout
    "CREATE TABLE late (id int PRIMARY KEY, v varchar(10), e enum('p','q'))",
    "INSERT INTO late VALUES (1, 'ü', 'q')",
    "RENAME TABLE late TO late2",
    "INSERT INTO late2 VALUES (2, 'ß', 'p')",
    "ALTER TABLE bin CONVERT TO CHARACTER SET utf8mb4",
    "INSERT INTO bin VALUES (2, X'FF', '日本')",
    "DROP TABLE nopk",
]
SPECIAL = {
    "mariadb": "INSERT INTO special VALUES (1, 'e0e1e2e3-0000-4000-8000-a0a1a2a3a4a5', '2001:db8::1', '192.0.2.7')",
    "mysql": "INSERT INTO special VALUES (1, TO_VECTOR('[1.5, -2, 3]'))",
}


def select_rows(conn: Connection, table: str, types: dict[str, str]) -> dict[Any, dict[str, Any]]:
    """Every row of a table as the row decoder gives it, keyed by ``id``."""
    exprs = []
    for name, dt in types.items():
        if dt in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "point", "uuid", "inet6",
                  "inet4", "vector"):
            exprs.append(f"HEX(`{name}`)")
        elif dt == "bit":
            exprs.append(f"CAST(`{name}` AS UNSIGNED)")
        else:
            exprs.append(f"`{name}`")
    result = conn.query(f"SELECT {', '.join(exprs)} FROM {DB}.{table}")
    out = {}
    for row in result.rows:
        values = {name: convert(types[name], text) for name, text in zip(types, row, strict=True)}
        out[values["id"]] = values
    return out


def convert(dt: str, text: str | None) -> Any:
    if text is None:
        return None
    if dt in ("tinyint", "smallint", "mediumint", "int", "bigint", "year", "bit"):
        return int(text)
    if dt == "decimal":
        return Decimal(text)
    if dt in ("float", "double"):
        return float(text)
    if dt == "timestamp":
        return text.replace(" ", "T") + "Z"
    if dt == "point":
        raw = bytes.fromhex(text)
        return Geometry(int.from_bytes(raw[:4], "little"), raw[4:])
    if dt in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "uuid", "inet6", "inet4",
              "vector"):
        return bytes.fromhex(text)
    if dt == "set":
        return tuple(text.split(",")) if text else ()
    if dt == "json":
        return json.loads(text)
    return text


def follow(setup: Setup, tracker: SchemaTracker) -> tuple[dict[str, dict[Any, dict[str, Any]]], list[Any]]:
    """Stream from the bootstrap position to the end; the tables' final rows from the row images."""
    state: dict[str, dict[Any, dict[str, Any]]] = {}
    where = {"file": "", "pos": 0}
    maps: list[TableMapEvent] = []

    def plan_for(table_map: TableMapEvent) -> Any:
        maps.append(table_map)
        resolved = tracker.resolve(table_map, where["file"], where["pos"])
        return rowplan.plan_for(table_map, resolved.columns)

    config = StreamConfig(parse_dsn(setup.server.dsn("repl")), file=setup.start[0], pos=setup.start[1],
                          until_end=True, heartbeat_period=0)
    with ReplicationStream(config) as stream:
        parser = None
        for raw in stream:
            if parser is None:
                parser = EventParser(ParserConfig(initial_checksum=stream.checksum_algorithm, plan_for=plan_for,
                                                  table_filter=lambda db, t: db == DB))
            where["file"], where["pos"] = raw.file, raw.pos
            event = parser.parse(raw.data, file=raw.file, offset=raw.pos)
            for ev in (event, *getattr(event, "events", ())):
                if isinstance(ev, QueryEvent):
                    tracker.on_query(ev.sql, ev.schema, raw.file, raw.pos)
                elif isinstance(ev, RowsEvent):
                    names = tracker.resolve(ev.table, raw.file, raw.pos).names
                    table = state.setdefault(ev.table.table, {})
                    for row in ev.rows:
                        before, after = row if ev.kind == "update" else (row, row)
                        if ev.kind in ("update", "delete"):
                            table.pop(dict(zip(names, before, strict=True)).get("id", before), None)
                        if ev.kind in ("update", "write"):
                            image = dict(zip(names, after, strict=True))
                            table[image.get("id", after)] = image
    return state, maps


def test_tracker_follows_the_binlog_and_decodes_rows(setup: Setup) -> None:
    tracker = SchemaTracker(setup.boot, flavor=setup.flavor)
    with Connection.open(parse_dsn(setup.server.dsn())) as conn:
        conn.execute("SET NAMES utf8mb4")
        conn.execute("SET time_zone = '+00:00'")
        conn.execute(f"USE {DB}")
        for sql in [*DML, SPECIAL[setup.flavor]]:
            conn.execute(sql)
        state, maps = follow(setup, tracker)
        assert maps and all(not c.name for tm in maps for c in tm.columns)  # the binlog names no column
        assert tracker.unparsed == []
        state["late2"] = {**state.pop("late", {}), **state.get("late2", {})}
        for table in ("types", "utf", "bin", "late2"):
            schema = tracker.catalog.get(DB, table)
            assert schema is not None, table
            expected = select_rows(conn, table, {c.name: c.data_type for c in schema.columns})
            assert state[table] == expected, table
        assert tracker.catalog.get(DB, "nopk") is None
        # The replayed DDL left the catalog where the server is.
        assert_same_tables(bootstrap_catalog(conn, lambda db, t: db == DB), tracker.catalog)
    types = state["types"]
    assert types[1]["vc"] == "ÀÉÎ" and types[1]["vu"] == "naïve 🎉 中文" and types[1]["en"] == "a"
    assert types[1]["bn"] == b"\x00\xff\x00\x00" and types[1]["cb"] == b"xy\x00"
    assert state["utf"][3] == {"id": 3, "extra": "àé", "name": "new"}
    special = state["special"][1]
    if setup.flavor == "mysql":
        assert special["vec"] == (1.5, -2.0, 3.0)
    else:  # MariaDB's fixed-size binary types decode to the text the server prints
        assert special["i6"] == "2001:db8::1"
        assert special["i4"] == "192.0.2.7"
        assert special["u"] == "e0e1e2e3-0000-4000-8000-a0a1a2a3a4a5"


class _DdlAfterTablesRead:
    """A connection that runs ``ddl`` on another one right after the bootstrap's list of tables."""

    def __init__(self, conn: Connection, other: Connection, ddl: str) -> None:
        self.conn, self.other, self.ddl, self.done = conn, other, ddl, False

    @property
    def is_mariadb(self) -> bool:
        return self.conn.is_mariadb

    @property
    def flavor(self) -> str:
        return self.conn.flavor

    def query(self, sql: str) -> Any:
        result = self.conn.query(sql)
        if "information_schema.TABLES" in sql and not self.done:
            self.done = True
            self.other.execute(self.ddl)
        return result


@pytest.mark.parametrize("ddl", ["DROP TABLE {db}.gone", "RENAME TABLE {db}.gone TO {db}.moved"])
def test_a_table_gone_between_the_bootstraps_reads_is_left_out(setup: Setup, ddl: str) -> None:
    db = f"{DB}_gone"
    with Connection.open(parse_dsn(setup.server.dsn())) as conn, \
            Connection.open(parse_dsn(setup.server.dsn())) as other:
        conn.execute(f"DROP DATABASE IF EXISTS {db}")
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.kept (id int PRIMARY KEY)")
        conn.execute(f"CREATE TABLE {db}.gone (id int PRIMARY KEY, v int)")
        racing = _DdlAfterTablesRead(conn, other, ddl.format(db=db))
        catalog = bootstrap_catalog(racing, lambda d, _t: d == db)  # type: ignore[arg-type]
        assert racing.done
        assert [t.name for t in catalog.tables(db)] == ["kept"], catalog.tables(db)
        conn.execute(f"DROP DATABASE {db}")
