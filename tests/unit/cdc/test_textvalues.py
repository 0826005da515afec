"""Text-protocol values -> decoded values (``sluice.cdc.textvalues``), no server.

Every declared type is converted from the text the server prints (binary values built the way the
result-set parser hands them over, non-UTF-8 bytes as surrogate escapes) and compared with what the
binlog value decoders produce for the same value: DECIMAL, TIMESTAMP, FLOAT and BIT also as
properties over random values. Then the JSON number rule, the flavors' differences (MariaDB JSON,
VECTOR, INET4/INET6/UUID), the compiled row converter, the select list and the errors.
"""

from __future__ import annotations

import json
import struct
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.binlog.values.decimal import decimal_decoder
from sluice.binlog.values.geometry import Geometry
from sluice.binlog.values.json_binary import JsonDecimal, parse_json
from sluice.binlog.values.temporal import timestamp2_decoder
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.textvalues import (
    convert_rows,
    json_number,
    row_converter,
    select_expression,
    select_list,
    text_converter,
    text_converters,
)
from sluice.errors import SchemaError
from sluice.wire.resultset import parse_text_row
from tests.unit.binlog.encoders import encode_decimal, encode_json, encode_timestamp2

pytestmark = pytest.mark.unit


def wire(raw: bytes) -> str:
    """A value as the text-row parser delivers it (one column, length-prefixed)."""
    assert len(raw) < 251
    (text,) = parse_text_row(bytes([len(raw)]) + raw, 1)
    assert text is not None
    return text


def conv(data_type: str, flavor: str | None = None, **facts: Any) -> Any:
    f = text_converter(ColumnDef("c", data_type, **facts), flavor)
    return (lambda text: text) if f is None else f


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


# -- numbers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("data_type", ["tinyint", "smallint", "mediumint", "int", "bigint"])
def test_integers(data_type: str) -> None:
    c = conv(data_type)
    assert c("-9223372036854775808") == -9223372036854775808
    assert c("0") == 0
    assert c("0042") == 42  # ZEROFILL
    u = conv(data_type, unsigned=True)
    assert u("18446744073709551615") == 18446744073709551615
    assert type(u("1")) is int


def test_year() -> None:
    c = conv("year")
    assert c("0000") == 0  # the decoder's 0 for YEAR 0000
    assert c("1901") == 1901
    assert c("2155") == 2155


def test_float_is_the_float32_value() -> None:
    c = conv("float")
    # select_list reads a FLOAT as CAST(... AS DOUBLE): the float32 value written out in full
    assert c("1.100000023841858") == f32(1.1) == 1.100000023841858
    assert c("3.4028234663852886e38") == f32(3.4028234663852886e38)
    assert c("-1.1754943508222875e-38") == f32(-1.1754943508222875e-38)
    # the server's own FLOAT text (six digits) rounds to the nearest float32
    assert c("1.1") == f32(1.1)
    assert c("-0") == 0.0 and str(c("-0")) == "-0.0"


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float32_round_trips_through_double_text(x: float) -> None:
    assert conv("float")(repr(x)) == x
    assert conv("float")(repr(f32(x))) == x


def test_double() -> None:
    c = conv("double")
    assert c("1.7976931348623157e308") == 1.7976931348623157e308
    assert c("-0.1") == -0.1
    assert c("1e-7") == 1e-7
    assert c("1.10") == 1.1  # DOUBLE(10,2) prints its declared decimals


@pytest.mark.parametrize(("precision", "scale", "text"), [
    (10, 2, "10.50"), (10, 2, "-0.05"), (5, 0, "99999"), (5, 0, "-99999"), (10, 5, "-0.00100"),
    (65, 30, "-99999999999999999999999999999999999.999999999999999999999999999999"),
    (65, 30, "0.000000000000000000000000000001"), (10, 2, "0.00"),
])
def test_decimal_equals_the_binlog_decoder(precision: int, scale: int, text: str) -> None:
    value = conv("decimal", precision=precision, scale=scale)(text)
    decoded = decimal_decoder(precision, scale)(encode_decimal(Decimal(text), precision, scale), 0)
    assert value == decoded
    assert format(value, "f") == format(decoded, "f") == text  # the digits, scale included
    assert value.as_tuple().exponent == -scale


def test_decimal_zero_is_never_signed() -> None:
    value = conv("decimal", precision=10, scale=2)("-0.00")
    assert str(value) == "0.00"
    assert not value.is_signed()


@given(st.decimals(min_value=Decimal("-99999999.9999"), max_value=Decimal("99999999.9999"), places=4,
                   allow_nan=False, allow_infinity=False))
def test_decimal_property(d: Decimal) -> None:
    text = format(d, "f")
    decoded = decimal_decoder(12, 4)(encode_decimal(d, 12, 4), 0)
    assert str(conv("decimal", precision=12, scale=4)(text)) == str(decoded)


# -- temporal -----------------------------------------------------------------------------------

def test_date_datetime_time_are_the_text() -> None:
    for data_type, text in [("date", "2024-02-29"), ("date", "0000-00-00"), ("date", "2024-00-15"),
                            ("datetime", "9999-12-31 23:59:59.999999"), ("datetime", "0000-00-00 00:00:00"),
                            ("time", "-838:59:59.000000"), ("time", "-00:00:00.500001"), ("time", "100:00:00")]:
        assert conv(data_type, fsp=6)(text) == text


def test_timestamp_is_a_utc_instant() -> None:
    c = conv("timestamp", fsp=3)
    assert c("2024-02-29 12:34:56.123") == "2024-02-29T12:34:56.123Z"
    assert conv("timestamp")("1970-01-01 00:00:01") == "1970-01-01T00:00:01Z"
    assert conv("timestamp")("2038-01-19 03:14:07") == "2038-01-19T03:14:07Z"
    # the zero timestamp stays as the server prints it, like the decoder writes it
    assert c("0000-00-00 00:00:00.000") == "0000-00-00 00:00:00.000"
    assert conv("timestamp")("0000-00-00 00:00:00") == timestamp2_decoder(0)(encode_timestamp2(0, 0, 0), 0)
    assert c("0000-00-00 00:00:00.000") == timestamp2_decoder(3)(encode_timestamp2(0, 0, 3), 0)


@given(st.integers(1, 2**31 - 1), st.integers(0, 6), st.integers(0, 999999))
def test_timestamp_property(sec: int, fsp: int, usec: int) -> None:
    usec = usec // 10 ** (6 - fsp) * 10 ** (6 - fsp)
    when = datetime.fromtimestamp(sec, UTC)
    text = when.strftime("%Y-%m-%d %H:%M:%S") + (f".{usec:06d}"[: fsp + 1] if fsp else "")
    decoded = timestamp2_decoder(fsp)(encode_timestamp2(sec, usec, fsp), 0)
    assert conv("timestamp", fsp=fsp)(text) == decoded


# -- strings and binary -------------------------------------------------------------------------

def test_character_columns_are_the_text() -> None:
    for data_type in ("char", "varchar", "tinytext", "text", "mediumtext", "longtext"):
        c = conv(data_type, charset="latin1", collation="latin1_swedish_ci")
        assert c("café ÿ£") == "café ÿ£"
        assert c("") == ""
    assert conv("varchar", charset="utf8mb4")("naïve 🎉 中文") == "naïve 🎉 中文"


def test_binary_charset_and_unknown_collation_give_bytes_like_the_decoder() -> None:
    raw = b"\x00\xff\xfe a"
    assert conv("varchar", charset="binary", collation="binary")(wire(raw)) == raw
    assert conv("text", charset="binary")(wire(raw)) == raw
    # no known collation: CHAR/VARCHAR decode as UTF-8 text, the TEXT family as bytes
    assert conv("varchar")("abc") == "abc"
    assert conv("text")(wire(b"abc")) == b"abc"


@pytest.mark.parametrize("data_type", ["binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"])
def test_binary_types(data_type: str) -> None:
    c = conv(data_type, charset="binary", collation="binary")
    for raw in (b"", b"\x00\x00\x00\x00", bytes(range(200)), "é🎉".encode(), b"\xed\xa0\x80", b"\xc3"):
        value = c(wire(raw))
        assert value == raw and type(value) is bytes


@given(st.binary(max_size=250))
def test_any_bytes_survive_the_text_row(raw: bytes) -> None:
    assert conv("varbinary", charset="binary")(wire(raw)) == raw


def test_enum_and_set() -> None:
    enum = conv("enum", enum_values=("a", "bb", "ccc"))
    assert enum("bb") == "bb"
    assert enum("") == ""  # the error member, index 0
    members = conv("set", set_values=("x", "y", "z"))
    assert members("x,z") == ("x", "z")
    assert members("") == ()
    assert members("x,y,z") == ("x", "y", "z")
    with pytest.raises(SchemaError, match="members"):
        text_converter(ColumnDef("e", "enum"))
    with pytest.raises(SchemaError, match="members"):
        text_converter(ColumnDef("s", "set"))


@pytest.mark.parametrize(("bits", "raw", "value"), [
    (1, b"\x00", 0), (1, b"\x01", 1), (12, b"\x0f\xff", 4095), (12, b"\x08\x01", 2049),
    (64, b"\xff" * 8, 2**64 - 1), (64, b"\x00" * 7 + b"\x01", 1), (9, b"\x01\x00", 256),
])
def test_bit(bits: int, raw: bytes, value: int) -> None:
    assert conv("bit", length=bits)(wire(raw)) == value


@given(st.integers(1, 64).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, 2**n - 1))))
def test_bit_property(case: tuple[int, int]) -> None:
    bits, value = case
    raw = value.to_bytes((bits + 7) // 8, "big")  # what the server sends, as the binlog holds it
    assert conv("bit", length=bits)(wire(raw)) == int.from_bytes(raw, "big") == value


# -- JSON, spatial, vector, MariaDB's fixed binary types ----------------------------------------

def test_mysql_json_is_the_parsed_document() -> None:
    c = conv("json")
    text = '{"a": 1, "b": [1, 2, {"c": null}], "d": true, "e": false, "f": "x", "u": "é€🎉"}'
    assert c(text) == {"a": 1, "b": [1, 2, {"c": None}], "d": True, "e": False, "f": "x", "u": "é€🎉"}
    assert c("18446744073709551615") == 18446744073709551615
    assert c('"just a string"') == "just a string"
    assert c("null") is None  # a JSON null, unlike SQL NULL (which never reaches the converter)
    # the server's text of a document equals what the binlog decoder gives
    doc = {"dec": Decimal("1.50"), "dbl": 0.25, "big": 9223372036854775807, "neg": -1}
    decoded = parse_json(encode_json(doc))
    parsed = c('{"big": 9223372036854775807, "dbl": 0.25, "dec": 1.50, "neg": -1}')
    assert parsed == decoded
    assert type(parsed["dec"]) is JsonDecimal and str(parsed["dec"]) == "1.50"
    assert type(parsed["dbl"]) is float


@pytest.mark.parametrize(("text", "value"), [
    ("0.1", 0.1), ("1e300", 1e300), ("1e20", 1e20), ("100.0", 100.0), ("-0.0", -0.0),
    ("0.0000001", 1e-7), ("1.2345678901234568e20", 1.2345678901234568e20), ("5e-324", 5e-324),
    ("1.7976931348623157e308", 1.7976931348623157e308), ("123456.0", 123456.0),
])
def test_json_number_doubles(text: str, value: float) -> None:
    got = json_number(text)
    assert type(got) is float and got == value
    assert repr(got) == repr(value)


@pytest.mark.parametrize("text", ["1.50", "-0.00100", "1000000000000000.00000", "0.10", "3.14159265358979323846"])
def test_json_number_decimals_keep_their_digits(text: str) -> None:
    got = json_number(text)
    assert type(got) is JsonDecimal
    assert format(got, "f") == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_json_number_reads_any_double_the_server_prints(x: float) -> None:
    shortest = repr(x)
    fixed = format(Decimal(shortest), "f")
    if "." not in fixed:
        fixed += ".0"  # the server marks a double that prints as an integer
    for text in {shortest.replace("e+", "e"), fixed}:
        got = json_number(text)
        assert type(got) is float and got == x and repr(got) == shortest


def test_mariadb_json_is_text() -> None:
    text = '{"a": 1.50, "b": [1e300]}'
    assert conv("json", "mariadb")(text) == text
    assert conv("longtext", "mariadb", charset="utf8mb4", collation="utf8mb4_bin")(text) == text


def test_geometry() -> None:
    wkb = bytes.fromhex("0101000000000000000000f83f000000000000024000")[:21]
    for srid in (0, 3857, 4326):
        raw = srid.to_bytes(4, "little") + wkb
        for data_type in ("geometry", "point", "polygon", "geometrycollection"):
            assert conv(data_type)(wire(raw)) == Geometry(srid, wkb)


def test_vector() -> None:
    floats = (1.5, -2.25, f32(0.1))
    raw = struct.pack("<3f", *floats)
    assert conv("vector", length=3)(wire(raw)) == floats
    # MariaDB logs a VARBINARY; the row decoder makes the floats of it as of MySQL's VECTOR
    assert conv("vector", "mariadb", length=3)(wire(raw)) == floats


def test_mariadb_inet_and_uuid_are_the_text_the_row_decoder_makes() -> None:
    assert conv("inet4", "mariadb")("10.0.0.3") == "10.0.0.3"
    assert conv("inet6", "mariadb")("::ffff:1.2.3.0") == "::ffff:1.2.3.0"
    assert conv("inet6", "mariadb")("2001:0db8:0:0::1") == "2001:db8::1"
    assert conv("uuid", "mariadb")("6CCD780C-BABA-1026-9564-5B8C656024DB") == "6ccd780c-baba-1026-9564-5b8c656024db"


def test_unknown_type_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match=r"`odd`.*cannot read"):
        text_converter(ColumnDef("odd", "xml"))
    schema = TableSchema("shop", "t", (ColumnDef("id", "int"), ColumnDef("odd", "xml")))
    with pytest.raises(SchemaError, match=r"shop\.t: column `odd`"):
        text_converters(schema)


# -- rows ---------------------------------------------------------------------------------------

SCHEMA = TableSchema("shop", "orders", (
    ColumnDef("id", "bigint", unsigned=True, nullable=False),
    ColumnDef("amount", "decimal", precision=10, scale=2),
    ColumnDef("note", "varchar", length=20, charset="utf8mb4", collation="utf8mb4_general_ci"),
    ColumnDef("at", "timestamp", fsp=0),
    ColumnDef("w", "float"),
    ColumnDef("tags", "set", set_values=("a", "b")),
    ColumnDef("odd `name`", "blob", charset="binary", collation="binary", visible=False),
), ("id",))


def test_row_converter() -> None:
    convert = row_converter(text_converters(SCHEMA))
    row = convert(("7", "12.00", "gift", "2024-01-02 03:04:05", "0.5", "a,b", wire(b"\xff")))
    assert row == (7, Decimal("12.00"), "gift", "2024-01-02T03:04:05Z", 0.5, ("a", "b"), b"\xff")
    assert convert(("8", None, None, None, None, None, None)) == (8, None, None, None, None, None, None)
    assert row_converter([int])(("5",)) == (5,)
    assert row_converter([None])((None,)) == (None,)


def test_convert_rows_names_the_bad_value() -> None:
    converters = text_converters(SCHEMA)
    good = ("1", "1.00", "x", None, None, "", None)
    assert convert_rows(SCHEMA, converters, [good]) == [(1, Decimal("1.00"), "x", None, None, (), None)]
    bad = ("2", "not a number", "x", None, None, "", None)
    with pytest.raises(SchemaError, match=r"shop\.orders, column `amount` \(decimal\(10,2\)\).*'not a number'"):
        convert_rows(SCHEMA, converters, [good, bad])


def test_select_list() -> None:
    # every column, INVISIBLE ones too, names quoted; FLOAT read as its exact double
    assert select_list(SCHEMA) == ("`id`, `amount`, `note`, `at`, CAST(`w` AS DOUBLE), `tags`, `odd ``name```")
    assert select_expression(ColumnDef("f", "float")) == "CAST(`f` AS DOUBLE)"
    assert select_expression(ColumnDef("d", "double")) == "`d`"


def test_converters_are_plain_functions_decided_once() -> None:
    # the per-value work is one call of a fixed function: no dispatch on the value
    converters = text_converters(SCHEMA)
    assert converters[0] is int
    assert converters[2] is None
    assert json.dumps([c is None for c in converters]) == "[false, false, true, false, false, false, false]"
