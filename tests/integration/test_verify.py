"""``sluice verify`` against real servers: mirrors built from the binlog, then compared with SELECT.

Per flavor, tables with many column types (NULLs, limits, zero dates, latin1 text, binary bytes,
JSON with DECIMALs, spatial values, BIT, FLOAT at its limit, an INVISIBLE column, TIMESTAMPs
written under a non-UTC session time zone, MariaDB's INET6/UUID, MySQL's VECTOR) are filled,
updated and partly deleted on the server. Their row changes are read back with
``sluice.stream_changes`` and merged into Delta mirrors with ``DeltaLake.write_batch`` (a table
without a primary key is written straight from its inserts) — no pipeline. Then ``verify_lake``
must find every mirror equal, read in chunks of a few rows too; each test then changes its own
table on the server without mirroring it (update, delete, insert, a duplicate row, a column added
or dropped, the table dropped) and checks the exact verdict, and the CLI's lines and exit codes.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from deltalake import write_deltalake

import sluice
from sluice.cdc.schema import bootstrap_catalog
from sluice.cli import main as sluice_main
from sluice.dsn import ConnectionConfig, parse_dsn
from sluice.errors import ConfigError
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.sink import DeltaLake
from sluice.lake.types.mirror_columns import to_arrow_table
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.verify import check as verify_module
from sluice.spark.verify.check import TableVerdict, verify_lake

DB = "verify_db"

FLAVORS = [
    pytest.param("mariadb", marks=pytest.mark.mariadb, id="mariadb"),
    pytest.param("mysql", marks=pytest.mark.mysql, id="mysql"),
]

MANY_COLUMNS = [
    "ti TINYINT", "tiu TINYINT UNSIGNED", "mi MEDIUMINT", "i INT", "iu INT UNSIGNED", "bi BIGINT",
    "biu BIGINT UNSIGNED", "fl FLOAT", "db DOUBLE", "d65 DECIMAL(65,30)", "d10 DECIMAL(10,2)", "dt DATE",
    "dtm DATETIME(6)", "ts TIMESTAMP(3) NULL", "ts0 TIMESTAMP NULL", "tm TIME(2)", "yr YEAR",
    "c10 CHAR(10)", "lat VARCHAR(40) CHARACTER SET latin1", "tx TEXT", "bn4 BINARY(4)", "vb VARBINARY(64)",
    "bl BLOB", "en ENUM('a','bb','ccc')", "st SET('x','y','z')", "b12 BIT(12)", "b64 BIT(64)",
    "geo GEOMETRY", "pt POINT", "js JSON", "hid INT INVISIBLE",
]

MANY_ROWS = [
    "(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(2, -128, 0, -8388608, -2147483648, 0, -9223372036854775808, 0, -3.4028234663852886e38, "
    "-1.7976931348623157e308, '-99999999999999999999999999999999999.999999999999999999999999999999', "
    "'-99999999.99', '1000-01-01', '1000-01-01 00:00:00.000000', '1970-01-01 05:00:01.000', "
    "'1970-01-01 05:00:01', '-838:59:59.00', 1901, '', '', '', X'00000000', X'', X'', 'a', '', b'0', b'0', "
    "ST_GeomFromText('POINT(0 0)'), ST_GeomFromText('POINT(-1.5 -2.25)'), '[]', 0)",
    "(3, 127, 255, 8388607, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615, "
    "3.4028234663852886e38, 1.7976931348623157e308, "
    "'99999999999999999999999999999999999.999999999999999999999999999999', '99999999.99', '9999-12-31', "
    "'9999-12-31 23:59:59.999999', '2038-01-19 08:14:07.999', '2038-01-19 08:14:07', '838:59:59.00', 2155, "
    "'abcdefghij', 'café ÿ£ Ææ', REPEAT('x', 3000), X'FFFFFFFF', X'00FF00FF', UNHEX(REPEAT('FE', 300)), "
    "'ccc', 'x,y,z', b'111111111111', 0xFFFFFFFFFFFFFFFF, "
    "ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0),(1 1,2 1,2 2,1 1))', 3857), "
    "ST_GeomFromText('POINT(1e10 -1e-10)'), "
    "'{\"a\": 1, \"b\": [1, 2, {\"c\": null}], \"d\": true, \"u\": \"ünï 🎉\", \"n\": 1e-7, \"f\": 0.1}', 7)",
    "(4, -1, 128, -1, -1, 2147483648, -1, 9223372036854775808, 1.1, -0.1, '-0.000000000000000000000000000001', "
    "'-0.05', '0000-00-00', '0000-00-00 00:00:00.000000', '0000-00-00 00:00:00', '2024-02-29 17:34:56', "
    "'-00:00:00.50', 0, 'ab', 'Ø', 'line\\nbreak', X'61', X'0001', X'DEADBEEF', 'bb', 'x,z', b'100000000001', "
    "b'1', ST_GeomFromText('LINESTRING(0 0, 1 1, 2 5.5)'), ST_GeomFromText('POINT(3 4)', 3857), "
    "'[18446744073709551615, -9223372036854775808, 3.141592653589793, 1e300, -0.5, \"\", null]', NULL)",
    "(5, 1, 1, 1, 1, 1, 1, 1, 0.5, 100.0, '1.5', '1.50', '2024-00-15', '2024-02-00 10:00:00.5', "
    "'2000-01-01 05:00:00.001', NULL, '100:00:00.01', 1970, 'z', 'plain', '', X'00', X'', X'', 'a', 'y', "
    "b'1', b'10', NULL, NULL, '\"just a string\"', 5)",
]


@dataclass
class Setup:
    flavor: str
    server: Any
    config: ConnectionConfig
    lake: Path


def _columns(flavor: str) -> list[str]:
    extra = ["v3 VECTOR(3)", "jd JSON"] if flavor == "mysql" else ["ip INET6", "uu UUID"]
    return MANY_COLUMNS + extra


def _extra_values(flavor: str, row: int) -> str:
    if flavor == "mysql":
        vectors = {1: "NULL", 2: "STRING_TO_VECTOR('[0, 0, 0]')", 3: "STRING_TO_VECTOR('[1.5, -2.25, 3.4e38]')",
                   4: "STRING_TO_VECTOR('[0.1, 1e-30, -7]')", 5: "NULL"}
        docs = {1: "NULL", 2: "JSON_OBJECT('dec', CAST(1.50 AS DECIMAL(5,2)), 'date', CAST('2020-01-02' AS DATE))",
                3: "JSON_ARRAY(CAST('-0.001' AS DECIMAL(10,5)), CAST('12:00:01.25' AS TIME(2)), 1.5e0, 1e16)",
                4: "JSON_OBJECT('big', 9223372036854775807, 'dbl', 0.25e0, 'tiny', 1e-7)", 5: "'{}'"}
        return f"{vectors[row]}, {docs[row]}"
    ips = {1: "NULL", 2: "'::'", 3: "'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'", 4: "'::ffff:1.2.3.4'",
           5: "'2001:db8::1'"}
    uuids = {1: "NULL", 2: "'00000000-0000-0000-0000-000000000000'", 3: "'ffffffff-ffff-ffff-ffff-ffffffffffff'",
             4: "'6ccd780c-baba-1026-9564-5b8c656024db'", 5: "'6ccd780c-baba-4026-9564-5b8c656024db'"}
    return f"{ips[row]}, {uuids[row]}"


def _many_inserts(flavor: str) -> list[str]:
    names = ", ".join(["id", *(c.split()[0] for c in _columns(flavor))])
    out = []
    for n, row in enumerate(MANY_ROWS, start=1):
        out.append(f"INSERT INTO {DB}.many ({names}) VALUES {row[:-1]}, {_extra_values(flavor, n)})")
    return out


SIMPLE_TABLES = ("items", "changed", "gone", "grown", "shrunk", "pairs")


@pytest.fixture(scope="module", params=FLAVORS)
def setup(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    flavor = request.param
    server = request.getfixturevalue(f"{flavor}_server")
    config = parse_dsn(server.dsn("root"))
    with Connection.open(config) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB}")
        start = server_binlog_status(conn)
        conn.execute("SET NAMES utf8mb4")
        conn.execute("SET SESSION sql_mode = ''")  # zero dates
        conn.execute("SET time_zone = '+05:00'")  # TIMESTAMPs are instants: verify reads them in UTC
        conn.execute(f"CREATE DATABASE {DB} DEFAULT CHARSET utf8mb4")
        conn.execute(f"CREATE TABLE {DB}.many (id INT PRIMARY KEY, {', '.join(_columns(flavor))})")
        for statement in _many_inserts(flavor):
            conn.execute(statement)
        conn.execute(f"UPDATE {DB}.many SET lat = 'naïve', d10 = d10 + 1, js = '[1.50, 2]' WHERE id = 4")
        conn.execute(f"UPDATE {DB}.many SET id = 6 WHERE id = 5")  # a key change
        for table in SIMPLE_TABLES:
            if table == "pairs":
                conn.execute(f"CREATE TABLE {DB}.pairs (a INT, b VARCHAR(20), v DECIMAL(8,3), PRIMARY KEY (a, b))")
                conn.execute(f"INSERT INTO {DB}.pairs VALUES (1, 'x', 1.5), (1, 'y', -2), (2, 'x', NULL)")
                continue
            conn.execute(f"CREATE TABLE {DB}.{table} (id INT PRIMARY KEY, name VARCHAR(30), qty INT)")
            rows = ", ".join(f"({n}, 'row {n}', {n * 3})" for n in range(1, 41))
            conn.execute(f"INSERT INTO {DB}.{table} VALUES {rows}")
            conn.execute(f"DELETE FROM {DB}.{table} WHERE id % 10 = 0")
            conn.execute(f"UPDATE {DB}.{table} SET qty = -qty WHERE id % 7 = 0")
        conn.execute(f"CREATE TABLE {DB}.nokey (id INT, v VARCHAR(10))")
        conn.execute(f"INSERT INTO {DB}.nokey VALUES (1, 'a'), (1, 'a'), (2, NULL), (3, 'c')")
        catalog = bootstrap_catalog(conn, lambda db, t: db == DB)
    changes = list(sluice.stream_changes(server.dsn("root"), file=start.file, pos=start.pos, until_end=True,
                                         tables=f"{DB}\\..*"))
    lake_dir = tmp_path_factory.mktemp(f"lake-{flavor}")
    lake = DeltaLake(lake_dir, "verify-test")
    batches = []
    for schema in catalog.tables(DB):
        columns = mirror_columns_for_schema(schema, catalog.flavor)
        mine = [c for c in changes if c.table == schema.name]
        if schema.primary_key:
            batches.append(TableBatch(DB, schema.name, columns, schema.primary_key, mine))
        else:  # the pipeline does not mirror it; write what a mirror of its inserts would hold
            assert {c.op for c in mine} == {"insert"}
            write_deltalake(lake.table_path(DB, schema.name), to_arrow_table(columns, [c.after or {} for c in mine]))
    result = lake.write_batch(0, batches)
    assert {t.table for t in result.tables if t.status == "written"} == {"many", *SIMPLE_TABLES}
    yield Setup(flavor, server, config, lake_dir)
    with Connection.open(config) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB}")


def only(*names: str) -> Any:
    return lambda db, table: db == DB and table in names


def verdict(setup: Setup, table: str) -> TableVerdict:
    (v,) = verify_lake(setup.config, setup.lake, tables=only(table))
    assert v.name == f"{DB}.{table}"
    return v


def sql(setup: Setup, *statements: str) -> None:
    with Connection.open(setup.config) as conn:
        conn.execute("SET SESSION sql_mode = ''")  # the tables hold zero dates
        for statement in statements:
            conn.execute(statement)


# -- equal mirrors -----------------------------------------------------------------------------------

def test_mirrors_built_from_the_binlog_equal_the_source(setup: Setup) -> None:
    verdicts = verify_lake(setup.config, setup.lake, tables=only("many", "items", "pairs", "nokey"))
    assert [v.table for v in verdicts] == ["items", "many", "nokey", "pairs"]  # sorted, _sluice skipped
    for v in verdicts:
        assert v.ok, v
        assert (v.missing, v.extra, v.different, v.note, v.first_keys) == (0, 0, 0, None, ())
    rows = {v.table: (v.source_rows, v.mirror_rows) for v in verdicts}
    assert rows == {"items": (36, 36), "many": (5, 5), "nokey": (4, 4), "pairs": (3, 3)}


def test_chunked_reads_give_the_same_verdicts(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_module, "CHUNK_ROWS", 3)
    for v in verify_lake(setup.config, setup.lake, tables=only("many", "items", "nokey")):
        assert v.ok, v


def test_every_column_is_compared(setup: Setup) -> None:
    # Changing any one value of the many-typed table is seen: no column escapes the checksum.
    table = "many"
    with Connection.open(setup.config) as conn:
        schema = bootstrap_catalog(conn, only(table)).get(DB, table)
    assert schema is not None
    probes = {"fl": "3.4028232635611926e38", "ts": "'2030-01-01 00:00:00.001'", "js": "'[]'", "b64": "b'0'",
              "bn4": "X'FFFFFF00'", "geo": "ST_GeomFromText('POINT(0 1)')", "hid": "8", "tm": "'838:59:58.99'",
              "lat": "'café ÿ£ Ææ '", "d65": "'99999999999999999999999999999999999.999999999999999999999999999998'"}
    names = ", ".join(f"`{c.name}`" for c in schema.columns)  # the INVISIBLE one too
    assert "`hid`" in names
    for column, value in probes.items():
        sql(setup, f"CREATE TABLE {DB}.probe LIKE {DB}.many",
            f"INSERT INTO {DB}.probe ({names}) SELECT {names} FROM {DB}.many")
        try:
            sql(setup, f"UPDATE {DB}.many SET {column} = {value} WHERE id = 3")
            v = verdict(setup, table)
            assert (v.ok, v.missing, v.extra, v.different, v.first_keys) == (False, 0, 0, 1, ("id=3 (different)",)), \
                column
        finally:
            sql(setup, f"DELETE FROM {DB}.many", f"INSERT INTO {DB}.many ({names}) SELECT {names} FROM {DB}.probe",
                f"DROP TABLE {DB}.probe")
        assert verdict(setup, table).ok, column


# -- differences -------------------------------------------------------------------------------------

def test_update_delete_insert_are_counted(setup: Setup) -> None:
    assert verdict(setup, "changed").ok
    sql(setup, f"UPDATE {DB}.changed SET qty = qty + 1 WHERE id IN (3, 5)", f"DELETE FROM {DB}.changed WHERE id = 1",
        f"INSERT INTO {DB}.changed VALUES (100, 'new', 0)", f"UPDATE {DB}.changed SET name = 'x' WHERE id = 999")
    v = verdict(setup, "changed")
    assert (v.ok, v.source_rows, v.mirror_rows, v.missing, v.extra, v.different) == (False, 36, 36, 1, 1, 2)
    assert sorted(v.first_keys) == ["id=1 (extra)", "id=100 (missing)", "id=3 (different)", "id=5 (different)"]
    assert v.note is None
    # the other tables are not affected
    assert all(x.ok for x in verify_lake(setup.config, setup.lake, tables=only("items", "pairs")))


def test_composite_key(setup: Setup) -> None:
    assert verdict(setup, "pairs").ok
    sql(setup, f"UPDATE {DB}.pairs SET v = 1.501 WHERE a = 1 AND b = 'x'")
    v = verdict(setup, "pairs")
    assert (v.missing, v.extra, v.different, v.first_keys) == (0, 0, 1, ('(a=1, b="x") (different)',))


def test_table_without_primary_key_is_a_multiset(setup: Setup) -> None:
    assert verdict(setup, "nokey").ok
    sql(setup, f"INSERT INTO {DB}.nokey VALUES (1, 'a')")  # a third copy of a duplicate row
    v = verdict(setup, "nokey")
    assert (v.ok, v.source_rows, v.mirror_rows, v.missing, v.extra, v.different) == (False, 5, 4, 1, 0, 0)
    sql(setup, f"DELETE FROM {DB}.nokey WHERE id = 3")
    v = verdict(setup, "nokey")
    assert (v.source_rows, v.mirror_rows, v.missing, v.extra, v.different) == (4, 4, 1, 1, 0)
    assert v.first_keys == ()


def test_a_column_added_at_the_source_is_a_difference(setup: Setup) -> None:
    assert verdict(setup, "grown").ok
    sql(setup, f"ALTER TABLE {DB}.grown ADD COLUMN extra INT")
    v = verdict(setup, "grown")
    assert not v.ok
    assert (v.missing, v.extra, v.different) == (0, 0, 0)  # the shared columns still agree
    assert v.note is not None and "`extra`" in v.note and "not in the mirror" in v.note


def test_a_column_dropped_at_the_source_is_a_difference(setup: Setup) -> None:
    # The mirror's columns are the source's: one the source no longer has must not look current.
    sql(setup, f"ALTER TABLE {DB}.shrunk DROP COLUMN qty")
    v = verdict(setup, "shrunk")
    assert not v.ok and v.different == 0 and v.note is not None and "`qty` not on the source" in v.note, v
    sql(setup, f"UPDATE {DB}.shrunk SET name = 'changed' WHERE id = 2")
    assert verdict(setup, "shrunk").different == 1  # the other columns are still compared


def test_a_table_dropped_at_the_source(setup: Setup) -> None:
    sql(setup, f"DROP TABLE {DB}.gone")
    v = verdict(setup, "gone")
    assert (v.ok, v.source_rows, v.mirror_rows, v.extra) == (False, 0, 36, 36)
    assert v.note is not None and "not on the source" in v.note


# -- the lake and the command line ---------------------------------------------------------------------

def test_lake_without_tables(setup: Setup, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a directory"):
        verify_lake(setup.config, tmp_path / "nowhere")
    (tmp_path / "_sluice" / "changes").mkdir(parents=True)
    with pytest.raises(ConfigError, match="holds no Delta tables"):
        verify_lake(setup.config, tmp_path)
    with pytest.raises(ConfigError, match=r"none of the .* tables of the lake"):
        verify_lake(setup.config, setup.lake, tables=lambda db, t: False)


def test_cli(setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dsn = setup.server.dsn("root")
    lake = str(setup.lake)
    capsys.readouterr()
    assert sluice_main(["verify", "--source", dsn, "--lake", lake, "--tables", f"{DB}\\.(items|many)"]) == 0
    out = capsys.readouterr().out.splitlines()  # a lake with no capture.json: what verify compared instead
    assert out[:2] == [f"ok   {DB}.items  36 rows", f"ok   {DB}.many  5 rows"], out
    assert out[2].startswith("capture filter unknown: the lake records no --tables / --exclude-tables"), out
    assert f"the source tables --tables / --exclude-tables take: {DB}.items, {DB}.many. " in out[2], out
    assert out[3:] == ["all 2 tables equal the source (41 rows)"], out
    (setup.lake / "_sluice").mkdir(exist_ok=True)
    (setup.lake / "_sluice" / "capture.json").write_text(json.dumps({"tables": f"{DB}\\..*", "exclude_tables": None}))
    try:  # recorded: no such line
        assert sluice_main(["verify", "--source", dsn, "--lake", lake, "--tables", f"{DB}\\.(items|many)"]) == 0
        assert not [line for line in capsys.readouterr().out.splitlines() if "capture filter" in line]
    finally:
        (setup.lake / "_sluice" / "capture.json").unlink()

    shutil.copytree(Path(lake) / DB / "items", tmp_path / DB / "items")
    sql(setup, f"CREATE TABLE {DB}.items_copy LIKE {DB}.items")
    os.rename(tmp_path / DB / "items", tmp_path / DB / "items_copy")  # a mirror of an empty table: all extra
    os.mkdir(tmp_path / "_sluice")
    code = sluice_main(["verify", "--source", dsn, "--lake", str(tmp_path)])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0].startswith(f"DIFF {DB}.items_copy  source 0 rows, mirror 36: 0 missing, 36 extra, 0 different "
                             "(first keys: id=")
    assert out[-2].startswith("capture filter unknown: ") and f"only the lake's mirrors: {DB}.items_copy. " in out[-2]
    assert out[-1] == "1 of 1 tables differ from the source"

    code = sluice_main(["verify", "--source", dsn, "--lake", str(tmp_path), "--exclude-tables", ".*"])
    captured = capsys.readouterr()
    assert code == 1
    assert "matches --tables / --exclude-tables" in captured.err
    code = sluice_main(["verify", "--source", dsn, "--lake", str(tmp_path / "nowhere")])
    assert code == 1
    assert "is not a directory" in capsys.readouterr().err


def test_cli_help_teaches(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        sluice_main(["verify", "--help"])
    text = capsys.readouterr().out
    for phrase in ("--source", "--lake", "--tables", "missing", "extra", "different", "exits 0"):
        assert phrase in text
