"""Every column type, value by value: what sluice decodes from the binlog equals what SELECT returns.

A table with every column type the server has is filled with rows of NULLs, minimum and maximum
values and every fractional-seconds precision, then updated and deleted, on servers started with
``binlog_row_metadata=FULL`` and ``binlog_row_image=FULL``. The row changes are read back twice —
through the live ``ReplicationStream`` (file + position start, ``until_end``) and through
``sluice dump`` on the server's binlog files — and every value is compared with what ``SELECT``
returns over the text protocol (``time_zone='+00:00'``), converted to the JSON encoding of
DESIGN.md ("Value encoding").
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from sluice.binlog import rowplan
from sluice.binlog.parser import EventParser, ParserConfig
from sluice.cdc.filters import table_filter
from sluice.cdc.jsonl import change_line
from sluice.cdc.records import RowChangeBuilder
from sluice.cli import main as sluice_main
from sluice.dsn import parse_dsn
from sluice.io.binlog_file import iter_events
from sluice.io.connection import Connection
from sluice.io.replication import ReplicationStream, StreamConfig, server_binlog_status
from tests.conftest import THREE_FLAVORS

SETTINGS = {"binlog_row_metadata": "FULL", "binlog_row_image": "FULL"}
DB = "type_matrix"


def f32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _int(text: str) -> int:
    return int(text)


def _str(text: str) -> str:
    return text


def _float32(text: str) -> float:
    return f32(float(text))


def _hex_b64(text: str) -> str:
    return base64.b64encode(bytes.fromhex(text)).decode("ascii")


def _timestamp(text: str) -> str:
    if text.startswith("0000-00-00"):
        return text
    return text.replace(" ", "T") + "Z"


def _set(text: str) -> list[str]:
    return text.split(",") if text else []


def _geometry(text: str) -> dict[str, Any]:
    srid, wkb = text.split(":")
    return {"srid": int(srid), "wkb": _hex_b64(wkb)}


def _vector(text: str) -> list[float]:
    raw = bytes.fromhex(text)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


@dataclass(frozen=True)
class Col:
    name: str
    ddl: str
    select: str = "{c}"  # SQL expression giving the text the converter reads
    convert: Callable[[str], Any] = _str
    compare: Callable[[Any], Any] | None = None  # normalises decoded values before comparing


def _json_loads(text: str) -> Any:
    return json.loads(text)


def _as_float32(value: Any) -> Any:
    return f32(value) if isinstance(value, (int, float)) else value


def columns(flavor: str, version: tuple[int, ...]) -> list[Col]:
    cols = [
        Col("ti", "TINYINT", convert=_int), Col("tiu", "TINYINT UNSIGNED", convert=_int),
        Col("si", "SMALLINT", convert=_int), Col("siu", "SMALLINT UNSIGNED", convert=_int),
        Col("mi", "MEDIUMINT", convert=_int), Col("miu", "MEDIUMINT UNSIGNED", convert=_int),
        Col("i", "INT", convert=_int), Col("iu", "INT UNSIGNED", convert=_int),
        Col("bi", "BIGINT", convert=_int), Col("biu", "BIGINT UNSIGNED", convert=_int),
        Col("fl", "FLOAT", select="CAST({c} AS DOUBLE)", convert=_float32, compare=_as_float32),
        Col("db", "DOUBLE", convert=float),
        Col("d65", "DECIMAL(65,30)"), Col("d10", "DECIMAL(10,2)"), Col("d5", "DECIMAL(5,0)"),
        Col("dt", "DATE"),
        *[Col(f"dtm{n}", f"DATETIME({n})") for n in range(7)],
        *[Col(f"ts{n}", f"TIMESTAMP({n}) NULL", convert=_timestamp) for n in range(7)],
        *[Col(f"tm{n}", f"TIME({n})") for n in range(7)],
        Col("yr", "YEAR", convert=_int),
        Col("c10", "CHAR(10)"), Col("c255", "CHAR(255) CHARACTER SET utf8mb4"),
        Col("vc10", "VARCHAR(10)"), Col("vc1000", "VARCHAR(1000) CHARACTER SET utf8mb4"),
        Col("bn4", "BINARY(4)", select="HEX({c})", convert=_hex_b64),
        Col("vb", "VARBINARY(300)", select="HEX({c})", convert=_hex_b64),
        Col("ttx", "TINYTEXT"), Col("tx", "TEXT"), Col("mtx", "MEDIUMTEXT"), Col("ltx", "LONGTEXT"),
        *[Col(n, t, select="HEX({c})", convert=_hex_b64)
          for n, t in (("tbl", "TINYBLOB"), ("bl", "BLOB"), ("mbl", "MEDIUMBLOB"), ("lbl", "LONGBLOB"))],
        Col("en", "ENUM('a','bb','ccc')"), Col("st", "SET('x','y','z')", convert=_set),
        Col("b1", "BIT(1)", select="{c}+0", convert=_int), Col("b12", "BIT(12)", select="{c}+0", convert=_int),
        Col("b64", "BIT(64)", select="{c}+0", convert=_int),
        Col("lat", "VARCHAR(40) CHARACTER SET latin1"), Col("u4", "VARCHAR(40) CHARACTER SET utf8mb4"),
        Col("geo", "GEOMETRY", select="CONCAT(ST_SRID({c}), ':', HEX(ST_AsWKB({c})))", convert=_geometry),
        Col("pt", "POINT", select="CONCAT(ST_SRID({c}), ':', HEX(ST_AsWKB({c})))", convert=_geometry),
    ]
    if flavor == "mysql":
        cols.append(Col("js", "JSON", convert=_json_loads))
        if version >= (9, 0):
            cols.append(Col("vec", "VECTOR(3)", select="HEX({c})", convert=_vector))
        cols.append(Col("jsd", "JSON", convert=_json_loads))  # JSON holding opaque DECIMAL / temporal values
    else:
        cols.append(Col("js", "JSON"))  # MariaDB: LONGTEXT with a JSON_VALID check, text in the binlog
    return cols


def _dtm(n: int, base: str, frac: str) -> str:
    return f"'{base}.{frac[:n]}'" if n else f"'{base}'"


def rows(flavor: str, version: tuple[int, ...]) -> dict[int, dict[str, str]]:
    """id -> {column: SQL literal}; columns left out are NULL."""
    emoji = "🎉"
    big = "é" * 85  # with 42 emoji and 128 x: 255 characters, 586 bytes
    mn: dict[str, str] = {
        "ti": "-128", "tiu": "0", "si": "-32768", "siu": "0", "mi": "-8388608", "miu": "0",
        "i": "-2147483648", "iu": "0", "bi": "-9223372036854775808", "biu": "0",
        "fl": "-3.4028234663852886e38", "db": "-1.7976931348623157e308",
        "d65": "'-99999999999999999999999999999999999.999999999999999999999999999999'",
        "d10": "'-99999999.99'", "d5": "'-99999'",
        "dt": "'1000-01-01'",
        **{f"dtm{n}": _dtm(n, "1000-01-01 00:00:00", "000000") for n in range(7)},
        **{f"ts{n}": _dtm(n, "1970-01-01 00:00:01", "000000") for n in range(7)},
        **{f"tm{n}": _dtm(n, "-838:59:59", "000000") for n in range(7)},
        "yr": "1901", "c10": "''", "c255": "''", "vc10": "''", "vc1000": "''",
        "bn4": "X'00000000'", "vb": "X''", "ttx": "''", "tx": "''", "mtx": "''", "ltx": "''",
        "tbl": "X''", "bl": "X''", "mbl": "X''", "lbl": "X''",
        "en": "'a'", "st": "''", "b1": "b'0'", "b12": "b'0'", "b64": "b'0'",
        "lat": "''", "u4": "''",
        "geo": "ST_GeomFromText('POINT(0 0)')", "pt": "ST_GeomFromText('POINT(-1.5 -2.25)')",
        "js": "'[]'",
    }
    mx: dict[str, str] = {
        "ti": "127", "tiu": "255", "si": "32767", "siu": "65535", "mi": "8388607", "miu": "16777215",
        "i": "2147483647", "iu": "4294967295", "bi": "9223372036854775807", "biu": "18446744073709551615",
        "fl": "3.4028234663852886e38", "db": "1.7976931348623157e308",
        "d65": "'99999999999999999999999999999999999.999999999999999999999999999999'",
        "d10": "'99999999.99'", "d5": "'99999'",
        "dt": "'9999-12-31'",
        **{f"dtm{n}": _dtm(n, "9999-12-31 23:59:59", "999999") for n in range(7)},
        **{f"ts{n}": _dtm(n, "2038-01-19 03:14:07", "999999") for n in range(7)},
        **{f"tm{n}": _dtm(n, "838:59:59", "000000") for n in range(7)},
        "yr": "2155", "c10": "'abcdefghij'", "c255": f"'{big}{emoji * 42}{'x' * 128}'",
        "vc10": "'0123456789'", "vc1000": f"'{emoji * 1000}'",
        "bn4": "X'FFFFFFFF'", "vb": "X'" + "00FF" * 150 + "'",
        "ttx": "'" + "t" * 255 + "'", "tx": "REPEAT('x', 65535)", "mtx": "REPEAT('m', 70000)",
        "ltx": f"REPEAT('{emoji}', 20000)",
        "tbl": "UNHEX(REPEAT('FE', 255))", "bl": "UNHEX(REPEAT('01', 65535))",
        "mbl": "UNHEX(REPEAT('AB', 70000))", "lbl": "UNHEX(REPEAT('00', 100000))",
        "en": "'ccc'", "st": "'x,y,z'", "b1": "b'1'", "b12": "b'111111111111'", "b64": "0xFFFFFFFFFFFFFFFF",
        "lat": "'café ÿ£'", "u4": f"'naïve {emoji} 中文'",
        "geo": "ST_GeomFromText('LINESTRING(0 0, 1 1, 2 5.5)')",
        "pt": "ST_GeomFromText('POINT(1e10 -1e-10)')",
        "js": "'{\"a\": 1, \"b\": [1, 2, {\"c\": null}], \"d\": true, \"e\": false, \"f\": \"x\"}'",
    }
    mid: dict[str, str] = {
        "ti": "-1", "tiu": "128", "si": "-1", "siu": "32768", "mi": "-1", "miu": "8388608",
        "i": "-1", "iu": "2147483648", "bi": "-1", "biu": "9223372036854775808",
        "fl": "1.1", "db": "-0.1", "d65": "'-0.000000000000000000000000000001'", "d10": "'-0.05'", "d5": "'0'",
        "dt": "'2024-02-29'",
        **{f"dtm{n}": _dtm(n, "2024-02-29 12:34:56", "123456") for n in range(7)},
        **{f"ts{n}": _dtm(n, "2024-02-29 12:34:56", "123456") for n in range(7)},
        **{f"tm{n}": _dtm(n, "-00:00:00", "500001") if n else "'-00:00:01'" for n in range(7)},
        "yr": "0", "c10": "'ab'", "c255": "'trailing  '", "vc10": "' sp '", "vc1000": "REPEAT('v', 300)",
        "bn4": "X'61'", "vb": "X'0001'", "ttx": "'ä'", "tx": "'line\\nbreak\\ttab'",
        "mtx": "'\"quoted\" \\\\ back'", "ltx": "''",
        "tbl": "X'00'", "bl": "X'DEADBEEF'", "mbl": "X'20'", "lbl": "X'FF00'",
        "en": "'bb'", "st": "'x,z'", "b1": "b'1'", "b12": "b'100000000001'", "b64": "b'1'",
        "lat": "'Ææ Øø'", "u4": "'𝄞'",
        "geo": "ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0),(1 1,2 1,2 2,1 1))', 3857)",
        "pt": "ST_GeomFromText('POINT(3 4)', 3857)",
        "js": "'[18446744073709551615, -9223372036854775808, 3.141592653589793, 1e300, -0.5, "
              "\"ünïcødé 🎉\", null, {\"nested\": {\"deeper\": [[], {}]}}, \"\"]'",
    }
    times: dict[str, str] = {  # more TIME values: > 24 h, negative with fractions
        "tm0": "'100:00:00'", "tm1": "'-12:34:56.7'", "tm2": "'25:00:00.01'", "tm3": "'-838:59:58.999'",
        "tm4": "'00:00:00.0001'", "tm5": "'-00:00:00.00001'", "tm6": "'837:59:59.999999'",
        "js": "'\"just a string\"'", "dt": "'2000-01-01'", "yr": "1970",
        **{f"ts{n}": _dtm(n, "2000-01-01 00:00:00", "000001") for n in range(7)},
    }
    if flavor == "mysql":
        mx["vec"] = "STRING_TO_VECTOR('[1.5, -2.25, 3.4028234663852886e38]')"
        mn["vec"] = "STRING_TO_VECTOR('[0, 0, 0]')"
        mid["vec"] = "STRING_TO_VECTOR('[0.1, 1e-30, -7]')"
        times["jsd"] = ("JSON_OBJECT('dec', CAST(1.50 AS DECIMAL(5,2)), 'date', CAST('2020-01-02' AS DATE), "
                       "'dt', CAST('2020-01-02 03:04:05.5' AS DATETIME(1)), 'big', 9223372036854775807, "
                       "'neg', -1, 'dbl', 0.25e0, 'u', 'é€')")
        mid["jsd"] = "JSON_ARRAY(CAST('-0.001' AS DECIMAL(10,5)), CAST('12:00:01.25' AS TIME(2)), 1.5e0)"
    return {1: {}, 2: mn, 3: mx, 4: mid, 5: times}


def _literal_row(cols: list[Col], values: dict[str, str], row_id: int) -> str:
    present = [c for c in cols if c.name in values]
    names = ", ".join(["id", *(c.name for c in present)])
    vals = ", ".join([str(row_id), *(values[c.name] for c in present)])
    return f"INSERT INTO {DB}.matrix ({names}) VALUES ({vals})"


def _expected(conn: Connection, cols: list[Col], table: str = "matrix") -> dict[int, dict[str, Any]]:
    exprs = ", ".join(["id", *(c.select.format(c=f"`{c.name}`") for c in cols)])
    result = conn.query(f"SELECT {exprs} FROM {DB}.{table} ORDER BY id")
    out = {}
    for row in result.rows:
        assert row[0] is not None
        values: dict[str, Any] = {"id": int(row[0])}
        for col, text in zip(cols, row[1:], strict=True):
            values[col.name] = None if text is None else col.convert(text)
        out[values["id"]] = values
    return out


def _normalise(cols: list[Col], image: dict[str, Any] | None) -> dict[str, Any] | None:
    if image is None:
        return None
    out = dict(image)
    for c in cols:
        if c.compare is not None and out.get(c.name) is not None:
            out[c.name] = c.compare(out[c.name])
    return out


def _compare(label: str, cols: list[Col], decoded: dict[str, Any] | None, expected: dict[str, Any]) -> list[str]:
    problems = []
    got = _normalise(cols, decoded)
    assert got is not None, f"{label}: no image"
    for name in ["id", *(c.name for c in cols)]:
        if name not in expected:
            continue
        if name not in got:
            problems.append(f"{label} {name}: missing from the image")
        elif got[name] != expected[name]:
            want, found = repr(expected[name]), repr(got[name])
            problems.append(f"{label} {name}: expected {want[:300]}, found {found[:300]}")
    return problems


FLAVORS = THREE_FLAVORS


@dataclass
class Capture:
    flavor: str
    server: Any
    cols: list[Col]
    start_file: str
    start_pos: int
    snapshots: list[tuple[str, dict[int, dict[str, Any]]]]  # (step, SELECT result after it)
    zero: dict[int, dict[str, Any]]


def _version(conn: Connection) -> tuple[int, ...]:
    return tuple(conn.server_version_tuple)


@pytest.fixture(scope="module", params=FLAVORS)
def capture(request, module_sandbox_factory) -> Capture:
    flavor = request.param
    server = module_sandbox_factory(flavor, settings=SETTINGS)
    config = parse_dsn(server.dsn())
    with Connection.open(config) as conn:
        cols = columns(flavor, _version(conn))
        data = rows(flavor, _version(conn))
        conn.execute("SET time_zone = '+00:00'")
        conn.execute("SET NAMES utf8mb4")
        conn.execute(f"CREATE DATABASE {DB}")
        ddl = ", ".join(["id INT PRIMARY KEY", *(f"`{c.name}` {c.ddl}" for c in cols)])
        conn.execute(f"CREATE TABLE {DB}.matrix ({ddl}) DEFAULT CHARSET=utf8mb4")
        conn.execute(f"CREATE TABLE {DB}.zero (id INT PRIMARY KEY, d DATE, dt DATETIME, dt6 DATETIME(6), "
                     "ts TIMESTAMP NULL)")
        status = server_binlog_status(conn)
        snapshots = []
        for row_id, values in data.items():
            conn.execute(_literal_row(cols, values, row_id))
        snapshots.append(("insert", _expected(conn, cols)))
        # Update: every row's values move to the next row's values (before and after images).
        conn.execute("BEGIN")
        conn.execute(f"UPDATE {DB}.matrix SET id = id + 100")
        for row_id in data:
            nxt = data[row_id % len(data) + 1]
            sets = ", ".join(f"`{c.name}` = {nxt.get(c.name, 'NULL')}" for c in cols)
            conn.execute(f"UPDATE {DB}.matrix SET {sets} WHERE id = {row_id + 100}")
        conn.execute("COMMIT")
        snapshots.append(("update", _expected(conn, cols)))
        conn.execute(f"DELETE FROM {DB}.matrix WHERE id IN (102, 103)")
        conn.execute("SET SESSION sql_mode = ''")
        conn.execute(f"INSERT INTO {DB}.zero VALUES (1, '0000-00-00', '0000-00-00 00:00:00', "
                     "'0000-00-00 00:00:00.000000', '0000-00-00 00:00:00'), "
                     "(2, '2024-00-00', '2024-02-00 10:00:00', '0000-01-01 00:00:00.5', NULL)")
        zero_cols = [Col("d", "DATE"), Col("dt", "DATETIME"), Col("dt6", "DATETIME(6)"),
                     Col("ts", "TIMESTAMP", convert=_timestamp)]
        zero = _expected(conn, zero_cols, "zero")
        conn.execute("FLUSH BINARY LOGS")
    return Capture(flavor, server, cols, status.file, status.pos, snapshots, zero)


# Columns whose decoding is known to differ from the contract, left out of the matrix comparison
# (each needs its own strict-xfail test while it is listed here). None at present.
KNOWN_BUGS: dict[str, str] = {}


def _lines(changes: Any) -> list[dict[str, Any]]:
    return [json.loads(change_line(change)) for change in changes]


def _without(change: Any, names: frozenset[str]) -> Any:
    def strip(image: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if image is None else {k: v for k, v in image.items() if k not in names}

    return replace(change, before=strip(change.before), after=strip(change.after))


def _stream_changes(cap: Capture) -> list[Any]:
    """RowChange objects of the test database, read through the live replication stream."""
    config = StreamConfig(parse_dsn(cap.server.dsn("repl")), file=cap.start_file, pos=cap.start_pos,
                          until_end=True, heartbeat_period=0)
    builder = RowChangeBuilder()
    out = []
    with ReplicationStream(config) as stream:
        parser = None
        for raw in stream:
            if parser is None:
                parser = EventParser(ParserConfig(initial_checksum=stream.checksum_algorithm))
            event = parser.parse(raw.data, file=raw.file, offset=raw.pos)
            out += [c for c in builder.feed(event, raw.file, raw.pos) if c.db == DB]
    return out


def _file_changes(cap: Capture) -> list[Any]:
    """RowChange objects of the test database, read from the server's binlog files as ``sluice dump`` does."""
    builder = RowChangeBuilder()
    out = []
    for name in cap.server.binlog_files():
        parser = EventParser(ParserConfig(table_filter=table_filter(f"{DB}\\..*", None)))
        for offset, event in iter_events(cap.server.binlog_dir / name, parser):
            out += builder.feed(event, name, offset)
    return out


def _dump_cli(cap: Capture, capsys) -> list[dict[str, Any]]:
    files = [str(cap.server.binlog_dir / name) for name in cap.server.binlog_files()]
    capsys.readouterr()
    code = sluice_main(["dump", "--tables", f"{DB}\\..*", *files])
    out, err = capsys.readouterr()
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


def _check(cap: Capture, changes: list[dict[str, Any]], only: frozenset[str] | None = None) -> None:
    """Compare every image with the SELECT snapshots; ``only``: just these columns (and id)."""
    cols = [c for c in cap.cols if (c.name in only if only is not None else c.name not in KNOWN_BUGS)]
    matrix = [c for c in changes if c["table"] == "matrix"]
    inserted, updated = cap.snapshots[0][1], cap.snapshots[1][1]
    ops = [c["op"] for c in matrix]
    n = len(inserted)
    # inserts; the id shift (n updates); the value updates (n); the deletes (2)
    assert ops == ["insert"] * n + ["update"] * (2 * n) + ["delete"] * 2, ops
    problems: list[str] = []
    for change in matrix[:n]:
        row_id = change["after"]["id"]
        assert change["before"] is None
        problems += _compare(f"insert id={row_id}", cols, change["after"], inserted[row_id])
    for change in matrix[n:2 * n]:
        row_id = change["before"]["id"]
        problems += _compare(f"shift before id={row_id}", cols, change["before"], inserted[row_id])
        shifted = dict(inserted[row_id], id=row_id + 100)
        problems += _compare(f"shift after id={row_id}", cols, change["after"], shifted)
    for change in matrix[2 * n:3 * n]:
        row_id = change["after"]["id"]
        before = dict(inserted[row_id - 100], id=row_id)
        problems += _compare(f"update before id={row_id}", cols, change["before"], before)
        problems += _compare(f"update after id={row_id}", cols, change["after"], updated[row_id])
    for change in matrix[3 * n:]:
        row_id = change["before"]["id"]
        assert change["after"] is None
        problems += _compare(f"delete id={row_id}", cols, change["before"], updated[row_id])
    if only is None:
        names = {"id", *(c.name for c in cols)}
        for change in matrix:
            for image in (change["before"], change["after"]):
                assert image is None or set(image) == names, sorted(set(image) ^ names)
    for change in changes:
        assert change["pk"] == ["id"]
        assert isinstance(change["ts"], int) and change["ts"] > 0
        assert change["gtid"]
    if only is None:
        zero_cols = [Col("d", "DATE"), Col("dt", "DATETIME"), Col("dt6", "DATETIME(6)"), Col("ts", "TIMESTAMP")]
        zero = [c for c in changes if c["table"] == "zero"]
        assert [c["op"] for c in zero] == ["insert", "insert"]
        for change in zero:
            row_id = change["after"]["id"]
            problems += _compare(f"zero id={row_id}", zero_cols, change["after"], cap.zero[row_id])
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems)


_KNOWN = frozenset(KNOWN_BUGS)


def test_type_matrix_over_the_replication_stream(capture: Capture) -> None:
    _check(capture, _lines(_without(c, _KNOWN) for c in _stream_changes(capture)))


def test_type_matrix_from_binlog_files(capture: Capture) -> None:
    _check(capture, _lines(_without(c, _KNOWN) for c in _file_changes(capture)))


def test_stream_and_files_agree(capture: Capture) -> None:
    streamed = _lines(_without(c, _KNOWN) for c in _stream_changes(capture))
    from_files = _lines(_without(c, _KNOWN) for c in _file_changes(capture))
    assert len(streamed) == len(from_files) > 0
    assert streamed == from_files


def test_sluice_dump_command_on_the_matrix(capture: Capture, capsys) -> None:
    dumped = _dump_cli(capture, capsys)
    _check(capture, [{**c, "before": _drop(c["before"]), "after": _drop(c["after"])} for c in dumped])


def _drop(image: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if image is None else {k: v for k, v in image.items() if k not in _KNOWN}


def test_compiled_core_and_python_twin_agree(capture: Capture) -> None:
    """Every value of the matrix decodes to the same JSON line by the compiled core and its twin."""
    if not rowplan.compiled():
        pytest.skip("the compiled core is off here (SLUICE_NO_EXTENSIONS); test_compiled_core_loaded says why")
    compiled = [change_line(c) for c in _file_changes(capture)]
    rowplan.use_compiled(False)
    try:
        twin = [change_line(c) for c in _file_changes(capture)]
    finally:
        rowplan.use_compiled(True)
    assert len(compiled) == len(twin) > 0
    assert compiled == twin


# -- MariaDB's own types: UUID, INET4, INET6 ------------------------------------------------------
# The binlog logs them as BINARY(16) / BINARY(4) / BINARY(16); only the schema says what they are, so
# they are read through what keeps a schema (sluice dump: the CREATE TABLE in the files; sluice tail:
# information_schema), with the default metadata (NO_LOG) and with FULL.

OWN_VALUES = [
    # a time-based UUID (stored with its segments swapped), a random one, the nil one
    "(1, '0b8a1c2d-3e4f-11ef-a5b6-c7d8e9f00102', '192.0.2.1', '2001:db8::1')",
    "(2, 'F47AC10B-58CC-4372-A567-0E02B2C3D479', '10.0.0.0', '::ffff:192.0.2.128')",
    "(3, '00000000-0000-0000-0000-000000000000', '255.255.255.255', '::')",
    "(4, NULL, NULL, 'fe80::1:0:0:0')",
]


def _own_rows(conn: Connection) -> dict[int, dict[str, Any]]:
    result = conn.query(f"SELECT id, CAST(u AS CHAR), CAST(i4 AS CHAR), CAST(i6 AS CHAR) FROM {DB}_own.t ORDER BY id")
    return {int(r[0]): {"id": int(r[0]), "u": r[1], "i4": r[2], "i6": r[3]} for r in result.rows if r[0] is not None}


@pytest.mark.mariadb
@pytest.mark.parametrize("metadata", ["NO_LOG", "FULL"])
def test_mariadb_uuid_inet4_inet6_are_their_text(mariadb_server: Any, metadata: str, capsys) -> None:
    server = mariadb_server
    with Connection.open(parse_dsn(server.dsn())) as conn:
        old = conn.query("SELECT @@GLOBAL.binlog_row_metadata").rows[0][0]
        conn.execute(f"SET GLOBAL binlog_row_metadata = '{metadata}'")
        try:
            conn.execute(f"DROP DATABASE IF EXISTS {DB}_own")
            conn.execute("FLUSH BINARY LOGS")
            conn.execute(f"CREATE DATABASE {DB}_own")
            conn.execute(f"CREATE TABLE {DB}_own.t (id INT PRIMARY KEY, u UUID, i4 INET4, i6 INET6)")
            start = server_binlog_status(conn)
            conn.execute(f"INSERT INTO {DB}_own.t VALUES " + ", ".join(OWN_VALUES))
            inserted = _own_rows(conn)
            conn.execute(f"UPDATE {DB}_own.t SET u = '6ccd780c-baba-1026-9564-5b8c656024db', "
                         "i4 = '198.51.100.7', i6 = '1:0:0:2:0:0:3:4' WHERE id = 4")
            updated = _own_rows(conn)
            conn.execute(f"DELETE FROM {DB}_own.t WHERE id = 1")
            conn.execute("FLUSH BINARY LOGS")
        finally:
            conn.execute(f"SET GLOBAL binlog_row_metadata = '{old}'")
    assert inserted[1]["u"] == "0b8a1c2d-3e4f-11ef-a5b6-c7d8e9f00102" and inserted[2]["i6"] == "::ffff:192.0.2.128"
    files = server.binlog_files()
    first = files.index(start.file)
    paths = [str(server.binlog_dir / name) for name in files[first:]]
    capsys.readouterr()
    assert sluice_main(["dump", "--tables", rf"{DB}_own\.t", *paths]) == 0
    dumped = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sluice_main(["tail", server.dsn("repl"), "--from", f"{start.file}:{start.pos}", "--until-end",
                        "--tables", rf"{DB}_own\.t"]) == 0
    tailed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for changes in (dumped, tailed):
        images = [(c["op"], c["before"], c["after"]) for c in changes]
        assert images == [
            *[("insert", None, inserted[i]) for i in (1, 2, 3, 4)],
            ("update", inserted[4], updated[4]),
            ("delete", updated[1], None),
        ]
