"""MySQL column -> Arrow / Spark type and value conversion (``sluice.lake.types.mirror_columns``), no server.

The golden binlogs' TABLE_MAPs give the real type codes, metadata and column facts of both servers;
their decoded rows go through ``to_arrow_table`` and must come out as the exact values. Constructed
maps cover what the golden files do not: every integer width signed and unsigned at its limits,
DECIMAL precision 38 and 39, zero and partial dates, unknown collations / ENUM / SET members, BIT
widths, CHAR over 255 bytes, VECTOR, JSON with DECIMALs inside, and the errors.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sluice
from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.events import TableMapEvent
from sluice.binlog.values.geometry import Geometry
from sluice.binlog.values.json_binary import JsonDecimal
from sluice.cdc.jsonl import change_line, json_text, json_texts
from sluice.errors import SchemaError
from sluice.lake.types.mirror_columns import (
    GEOMETRY_TYPE,
    mirror_columns,
    mirror_schema,
    spark_ddl,
    to_arrow_table,
)

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"


@dataclass
class Map:
    """Stand-in for TableMapEvent: the attributes ``mirror_columns`` reads."""

    column_types: tuple[int, ...]
    column_meta: tuple[int, ...]
    schema: str = "db"
    table: str = "t"


def one(t: int, meta: int = 0, **info: Any) -> Any:
    (col,) = mirror_columns(Map((t,), (meta,)), (ColumnInfo(name="c", **info),))
    return col


def convert(col: Any, values: list[Any]) -> list[Any]:
    return to_arrow_table([col], [{"c": v} for v in values]).column("c").to_pylist()


def golden(name: str) -> tuple[TableMapEvent, list[Any]]:
    path = DATA / name
    tmap = next(ev for _f, _p, ev in sluice.read_events(path) if isinstance(ev, TableMapEvent))
    return tmap, list(sluice.read_changes(path))


# -- golden TABLE_MAPs of both servers -----------------------------------------------------------

GOLDEN_TYPES = [
    ("id", "int", "int"),
    ("ti", "tinyint", "tinyint"),
    ("biu", "bigint unsigned", "decimal(20,0)"),
    ("fl", "float", "float"),
    ("db", "double", "double"),
    ("d65", "decimal(65,30)", "string"),
    ("d10", "decimal(10,2)", "decimal(10,2)"),
    ("dt", "date", "date"),
    ("dtm", "datetime(6)", "timestamp_ntz"),
    ("ts", "timestamp(3)", "timestamp"),
    ("tm", "time(2)", "string"),
    ("yr", "year", "smallint"),
    ("c10", "char", "string"),
    ("vc", "varchar", "string"),
    ("lat", "varchar", "string"),
    ("bn", "binary(4)", "binary"),
    ("vb", "varbinary(20)", "binary"),
    ("tx", "text", "string"),
    ("bl", "blob", "binary"),
    ("en", "enum('a','bb','ccc')", "string"),
    ("st", "set('x','y','z')", "array<string>"),
    ("b12", "bit(12)", "bigint"),
    ("b64", "bit(64)", "decimal(20,0)"),
    ("pt", "point", "struct<srid:bigint,wkb:binary>"),
]


@pytest.mark.parametrize("name", ["mysql-matrix.binlog", "mariadb-matrix.binlog"])
def test_golden_matrix_types(name: str) -> None:
    tmap, _ = golden(name)
    cols = mirror_columns(tmap, tmap.columns)
    expected = GOLDEN_TYPES + ([("js", "json", "string")] if name.startswith("mysql") else [])
    assert [(c.name, c.mysql_type, c.spark_type) for c in cols] == expected
    schema = mirror_schema(cols)
    assert schema.field("dtm").type == pa.timestamp("us")
    assert schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert schema.field("biu").type == pa.decimal128(20, 0)
    assert schema.field("st").type == pa.list_(pa.string())
    assert schema.field("pt").type == GEOMETRY_TYPE
    assert all(f.nullable for f in schema)


@pytest.mark.parametrize("name", ["mysql-matrix.binlog", "mariadb-matrix.binlog"])
def test_golden_matrix_values(name: str) -> None:
    tmap, changes = golden(name)
    cols = mirror_columns(tmap, tmap.columns)
    inserts = [c.after for c in changes if c.op == "insert"]
    rows = to_arrow_table(cols, inserts).to_pylist()
    assert [r["id"] for r in rows] == [1, 2, 3]
    assert all(v is None for k, v in rows[0].items() if k != "id")
    low, high = rows[1], rows[2]
    assert (low["ti"], high["ti"]) == (-128, 127)
    assert (low["biu"], high["biu"]) == (Decimal(0), Decimal(2**64 - 1))
    assert (low["fl"], high["fl"]) == (-1.5, 3.25)
    assert high["db"] == 1.7976931348623157e308
    assert low["d65"] == "-99999999999999999999999999999999999.999999999999999999999999999999"
    assert high["d65"] == "0.000000000000000000000000000001"
    assert (low["d10"], high["d10"]) == (Decimal("-0.05"), Decimal("12345678.90"))
    assert (low["dt"], high["dt"]) == (date(1000, 1, 1), date(9999, 12, 31))
    assert high["dtm"] == datetime(9999, 12, 31, 23, 59, 59, 999999)
    assert low["ts"] == datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert high["ts"] == datetime(2038, 1, 19, 3, 14, 7, 999000, tzinfo=UTC)
    assert (low["tm"], high["tm"]) == ("-838:59:59.00", "838:59:59.00")
    assert (low["yr"], high["yr"]) == (1901, 2155)
    assert high["vc"] == "naïve 🎉 中文"
    assert high["lat"] == "café ÿ"
    assert (low["bn"], high["bn"]) == (b"abcd", b"\x00\xff\x00\xff")
    assert high["bl"] == b"\x00\x01\xfe\xff"
    assert (low["en"], high["en"]) == ("a", "ccc")
    assert (low["st"], high["st"]) == ([], ["x", "z"])
    assert (high["b12"], high["b64"]) == (4095, Decimal(2**64 - 1))
    assert high["pt"]["srid"] == 0 and high["pt"]["wkb"][:5] == b"\x01\x01\x00\x00\x00"
    if "js" in high:
        assert high["js"] == '{"a":[1,2.5,"x",null,true,false],"u":"é🎉","big":18446744073709551615}'
        assert low["js"] == "[]"
        # the JSON text is the change record's encoding of the value
        record = json.loads(change_line(changes[2]))
        assert json.loads(high["js"]) == record["after"]["js"]


# -- constructed columns -----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("t", "unsigned", "mysql_type", "arrow_type", "spark_type", "lo", "hi"),
    [
        (T.TINY, False, "tinyint", pa.int8(), "tinyint", -(2**7), 2**7 - 1),
        (T.TINY, True, "tinyint unsigned", pa.int16(), "smallint", 0, 2**8 - 1),
        (T.SHORT, False, "smallint", pa.int16(), "smallint", -(2**15), 2**15 - 1),
        (T.SHORT, True, "smallint unsigned", pa.int32(), "int", 0, 2**16 - 1),
        (T.INT24, False, "mediumint", pa.int32(), "int", -(2**23), 2**23 - 1),
        (T.INT24, True, "mediumint unsigned", pa.int32(), "int", 0, 2**24 - 1),
        (T.LONG, False, "int", pa.int32(), "int", -(2**31), 2**31 - 1),
        (T.LONG, True, "int unsigned", pa.int64(), "bigint", 0, 2**32 - 1),
        (T.LONGLONG, False, "bigint", pa.int64(), "bigint", -(2**63), 2**63 - 1),
        (T.LONGLONG, True, "bigint unsigned", pa.decimal128(20, 0), "decimal(20,0)", 0, 2**64 - 1),
    ],
)
def test_integers_widen_unsigned_to_the_next_signed_width(t, unsigned, mysql_type, arrow_type, spark_type,
                                                          lo, hi) -> None:
    col = one(t, unsigned=unsigned)
    assert (col.mysql_type, col.arrow_type, col.spark_type) == (mysql_type, arrow_type, spark_type)
    assert [int(v) if v is not None else None for v in convert(col, [lo, hi, None])] == [lo, hi, None]


def test_unknown_signedness_is_signed_as_the_decoder_reads_it() -> None:
    assert one(T.LONG).arrow_type == pa.int32()
    with pytest.raises(SchemaError, match=r"column 'c' \(tinyint\).*200"):
        convert(one(T.TINY), [1, 200])


@given(st.integers(0, 2**64 - 1))
def test_bigint_unsigned_round_trips_any_value(v: int) -> None:
    assert convert(one(T.LONGLONG, unsigned=True), [v]) == [Decimal(v)]


def test_decimal_up_to_38_digits_is_decimal128_and_wider_is_exact_text() -> None:
    d38 = one(T.NEWDECIMAL, 38 << 8 | 10)
    assert (d38.arrow_type, d38.spark_type) == (pa.decimal128(38, 10), "decimal(38,10)")
    big = Decimal("-" + "9" * 28 + "." + "9" * 10)
    assert convert(d38, [big, Decimal("0.0000000000")]) == [big, Decimal(0)]
    d39 = one(T.NEWDECIMAL, 39 << 8 | 0)
    assert (d39.mysql_type, d39.arrow_type, d39.spark_type) == ("decimal(39,0)", pa.string(), "string")
    assert convert(d39, [Decimal("9" * 39), Decimal("-1")]) == ["9" * 39, "-1"]
    d65 = one(T.NEWDECIMAL, 65 << 8 | 30)
    assert convert(d65, [Decimal("-0.001000000000000000000000000000")]) == ["-0.001000000000000000000000000000"]


def test_zero_and_partial_dates_become_null() -> None:
    d = one(T.DATE)
    assert convert(d, ["2024-02-29", "0000-00-00", "2024-00-15", "2024-05-00", "0000-01-01", "2023-02-29"]) == [
        date(2024, 2, 29), None, None, None, None, None]
    dtm = one(T.DATETIME2, 6)
    assert dtm.mysql_type == "datetime(6)"
    assert convert(dtm, ["2024-01-02 03:04:05.000006", "0000-00-00 00:00:00.000000", "2024-00-00 10:00:00.5"]) == [
        datetime(2024, 1, 2, 3, 4, 5, 6), None, None]
    assert one(T.DATETIME).mysql_type == "datetime"
    assert convert(one(T.DATETIME), ["1999-12-31 23:59:59"]) == [datetime(1999, 12, 31, 23, 59, 59)]
    ts = one(T.TIMESTAMP2, 3)
    assert convert(ts, ["2024-02-29T12:34:56.789Z", "0000-00-00 00:00:00.000", "1970-01-01T00:00:01.000Z"]) == [
        datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=UTC), None, datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)]
    assert convert(one(T.TIMESTAMP), ["0000-00-00 00:00:00", "2000-01-01T00:00:00Z"]) == [
        None, datetime(2000, 1, 1, tzinfo=UTC)]


def test_time_stays_text_and_year_is_smallint() -> None:
    tm = one(T.TIME2, 2)
    assert (tm.mysql_type, tm.spark_type) == ("time(2)", "string")
    assert convert(tm, ["-838:59:59.00", "100:00:00.50"]) == ["-838:59:59.00", "100:00:00.50"]
    assert convert(one(T.YEAR), [0, 1901, 2155]) == [0, 1901, 2155]


def test_text_or_binary_follows_the_decoder() -> None:
    assert one(T.VARCHAR, 40).spark_type == "string"  # collation unknown: UTF-8 text
    assert one(T.VARCHAR, 40, collation=63).mysql_type == "varbinary(40)"
    assert one(T.BLOB, 2).mysql_type == "blob"  # collation unknown: bytes
    assert one(T.BLOB, 2, collation=255).mysql_type == "text"
    assert one(T.BLOB, 4, collation=45).mysql_type == "longtext"
    assert one(T.BLOB, 1, collation=63).mysql_type == "tinyblob"
    assert one(T.BLOB, 3).spark_type == "binary"
    assert one(T.STRING, T.STRING << 8 | 40).mysql_type == "char"
    assert convert(one(T.STRING, T.STRING << 8 | 4, collation=63), [b"ab\x00\x00"]) == [b"ab\x00\x00"]


def test_char_longer_than_255_bytes_uses_the_folded_metadata() -> None:
    meta = ((T.STRING ^ ((300 & 0x300) >> 4)) << 8) | (300 & 0xFF)
    assert one(T.STRING, meta, collation=63).mysql_type == "binary(300)"
    assert one(T.STRING, meta, collation=255).spark_type == "string"


def test_enum_and_set_with_and_without_members() -> None:
    en = one(T.STRING, T.ENUM << 8 | 1, enum_values=("a", "it's"))
    assert (en.mysql_type, en.spark_type) == ("enum('a','it''s')", "string")
    st_ = one(T.STRING, T.SET << 8 | 1, set_values=("x", "y"))
    assert (st_.arrow_type, st_.spark_type) == (pa.list_(pa.string()), "array<string>")
    assert convert(st_, [("x", "y"), (), None]) == [["x", "y"], [], None]
    # without members the decoder yields the index / bitmask
    assert convert(one(T.STRING, T.ENUM << 8 | 2), [65535]) == [65535]
    assert one(T.STRING, T.SET << 8 | 4).arrow_type == pa.int64()
    assert convert(one(T.STRING, T.SET << 8 | 8), [2**64 - 1]) == [Decimal(2**64 - 1)]


def test_bit_widths() -> None:
    assert (one(T.BIT, 1 << 8 | 0).mysql_type, one(T.BIT, 1 << 8 | 0).arrow_type) == ("bit(1)", pa.int64())
    b63 = one(T.BIT, 7 << 8 | 7)
    assert (b63.mysql_type, convert(b63, [2**63 - 1])) == ("bit(63)", [2**63 - 1])
    b64 = one(T.BIT, 8)
    assert (b64.mysql_type, b64.spark_type, convert(b64, [2**64 - 1])) == ("bit(64)", "decimal(20,0)", [2**64 - 1])


def test_json_text_keeps_decimals_exact_and_is_compact() -> None:
    col = one(T.JSON, 4)
    doc = {"price": JsonDecimal("10.50"), "list": [JsonDecimal("-0.000"), 1, 2.5, None, True], "s": "é\"x"}
    (text,) = convert(col, [doc])
    assert text == '{"price":10.50,"list":[-0.000,1,2.5,null,true],"s":"é\\"x"}'
    assert json.loads(text, parse_float=Decimal)["price"] == Decimal("10.50")
    assert convert(col, [None, "scalar", 7]) == [None, '"scalar"', "7"]


def test_json_texts_equals_json_text_for_every_value() -> None:
    values = [None, {"a": JsonDecimal("1.0")}, {"d": Decimal("2.50"), "b": b"\x00\xff", "g": Geometry(4326, b"\x01")},
              [1, "x"], {}, {"n": None, "f": 1e300}]
    assert json_texts(values) == [json_text(v) for v in values]
    assert json_texts(values)[2] == '{"d":"2.50","b":"AP8=","g":{"srid":4326,"wkb":"AQ=="}}'


def test_geometry_is_srid_and_wkb() -> None:
    col = one(T.GEOMETRY, 4, geometry_type=3)
    assert (col.mysql_type, col.arrow_type) == ("polygon", GEOMETRY_TYPE)
    assert convert(col, [Geometry(4326, b"\x01\x02"), None]) == [{"srid": 4326, "wkb": b"\x01\x02"}, None]
    assert one(T.GEOMETRY, 4).mysql_type == "geometry"


def test_vector_is_a_list_of_float32() -> None:
    col = one(T.VECTOR, 4, vector_dimension=3)
    assert (col.mysql_type, col.arrow_type, col.spark_type) == ("vector(3)", pa.list_(pa.float32()), "array<float>")
    assert convert(col, [(1.5, -2.0, 0.25), ()]) == [[1.5, -2.0, 0.25], []]


def test_mariadb_vector_uuid_inet_follow_the_schema_type() -> None:
    # MariaDB's VECTOR(3) is a binary VARCHAR(12); its UUID / INET4 / INET6 binary STRINGs of 16 / 4 / 16
    vec = one(T.VARCHAR, 12, collation=63, vector_dimension=3)
    assert (vec.mysql_type, vec.arrow_type, vec.spark_type) == ("vector(3)", pa.list_(pa.float32()), "array<float>")
    assert convert(vec, [(1.5, -2.0, 0.25)]) == [[1.5, -2.0, 0.25]]
    for kind, n, text in (("uuid", 16, "0b8a1c2d-3e4f-11ef-a5b6-c7d8e9f00102"), ("inet4", 4, "192.0.2.1"),
                          ("inet6", 16, "2001:db8::1")):
        col = one(T.STRING, (T.STRING << 8) | n, collation=63, mariadb_type=kind)
        assert (col.mysql_type, col.arrow_type, col.spark_type) == (kind, pa.string(), "string")
        assert convert(col, [text, None]) == [text, None]
    # without the schema's type, the binary they are logged as
    assert one(T.STRING, (T.STRING << 8) | 16, collation=63).arrow_type == pa.binary()


def test_rows_missing_columns_are_null_and_extra_keys_ignored() -> None:
    cols = mirror_columns(Map((T.LONG, T.VARCHAR), (0, 40)), (ColumnInfo("id"), ColumnInfo("v")))
    table = to_arrow_table(cols, [{"id": 1}, {"id": 2, "v": "x", "dropped": 5}])
    assert table.schema == mirror_schema(cols)
    assert table.to_pylist() == [{"id": 1, "v": None}, {"id": 2, "v": "x"}]
    assert to_arrow_table(cols, []).num_rows == 0


def test_errors_name_the_table_and_column() -> None:
    with pytest.raises(SchemaError, match=r"column #1 of db\.t has no name"):
        mirror_columns(Map((T.LONG, T.LONG), (0, 0)), (ColumnInfo("id"), ColumnInfo()))
    with pytest.raises(SchemaError, match=r"2 columns .* 1 column descriptions"):
        mirror_columns(Map((T.LONG, T.LONG), (0, 0)), (ColumnInfo("id"),))
    with pytest.raises(SchemaError, match="two columns are named 'ID'"):
        mirror_columns(Map((T.LONG, T.LONG), (0, 0)), (ColumnInfo("id"), ColumnInfo("ID")))
    with pytest.raises(SchemaError, match="DECIMAL, which has no mirror type"):
        one(T.DECIMAL)


def test_spark_ddl_and_pickling() -> None:
    cols = mirror_columns(Map((T.LONG, T.NEWDECIMAL, T.DATETIME2), (0, 10 << 8 | 2, 3)),
                          (ColumnInfo("id"), ColumnInfo("amount"), ColumnInfo("odd `name`")))
    assert spark_ddl(cols) == "`id` int, `amount` decimal(10,2), `odd ``name``` timestamp_ntz"
    again = pickle.loads(pickle.dumps(cols))
    assert again == cols
    assert again[2].convert("2024-01-01 00:00:00.500") == datetime(2024, 1, 1, 0, 0, 0, 500000)
