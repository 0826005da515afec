"""Compiled row plans: hand-annotated row images for every column type, minimal images, updates,
partial JSON, and malformed bodies that must raise only MalformedEventError."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.binlog import rowplan
from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.rowplan import ABSENT, Geometry, JsonDiff, JsonDiffs, plan_for
from sluice.binlog.values.charsets import CharsetDecodeError
from sluice.errors import MalformedEventError, UnsupportedError
from tests.conftest import examples

try:
    from tests.unit.binlog.encoders import (
        char_meta,
        encode_datetime2,
        encode_decimal,
        encode_json,
        encode_time2,
        image,
        lenenc,
        prefixed,
    )
except ImportError:  # collected without package __init__ files
    from encoders import (  # type: ignore[no-redef]
        char_meta,
        encode_datetime2,
        encode_decimal,
        encode_json,
        encode_time2,
        image,
        lenenc,
        prefixed,
    )

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True, params=["compiled", "python"])
def row_core(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test runs on the compiled core and on its Python twin."""
    if request.param == "compiled" and rowplan._compiled_core is None:
        pytest.skip("the compiled core is not built (test_compiled_core_loaded says so)")
    previous = rowplan.use_compiled(request.param == "compiled")
    try:
        yield
    finally:
        rowplan.use_compiled(previous)


@dataclass
class Map:
    """Stand-in for TableMapEvent: only the attributes row plans use."""

    column_types: tuple[int, ...]
    column_meta: tuple[int, ...]
    columns: tuple[ColumnInfo, ...] = ()
    raw: bytes = field(default=b"")
    schema: str = "db"
    table: str = "t"

    @property
    def column_count(self) -> int:
        return len(self.column_types)

    def __post_init__(self) -> None:
        if not self.raw:
            self.raw = repr((self.column_types, self.column_meta, self.columns)).encode()


def rows(m: Map, body: bytes, present: int | None = None, kind: str = "write",
         present_after: int | None = None, partial: bool = False) -> list[Any]:
    full = (1 << m.column_count) - 1
    p = full if present is None else present
    return plan_for(m).decode_rows(kind, body, 0, len(body), p, present_after, partial)


def one(t: int, meta: int, value: bytes | None, info: ColumnInfo | None = None) -> Any:
    m = Map((t,), (meta,), (info or ColumnInfo(),))
    (row,) = rows(m, image([value]))
    return row[0]


def test_integers_signed_unsigned_and_max() -> None:
    types = (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG)
    widths = (1, 2, 3, 4, 8)
    signed = Map(types, (0,) * 5, (ColumnInfo(unsigned=False),) * 5)
    unsigned = Map(types, (0,) * 5, (ColumnInfo(unsigned=True),) * 5, raw=b"u")
    ones = [b"\xff" * w for w in widths]
    assert rows(signed, image(ones)) == [(-1, -1, -1, -1, -1)]
    assert rows(unsigned, image(ones)) == [(255, 65535, 2**24 - 1, 2**32 - 1, 2**64 - 1)]
    mins = [b"\x00" * (w - 1) + b"\x80" for w in widths]
    assert rows(signed, image(mins)) == [(-128, -32768, -(2**23), -(2**31), -(2**63))]
    # with NULLs the per-column path decodes the same values
    assert rows(unsigned, image([None, ones[1], None, ones[3], None])) == [
        (None, 65535, None, 2**32 - 1, None)
    ]
    # unknown signedness decodes as signed
    assert one(T.LONG, 0, b"\xff\xff\xff\xff", ColumnInfo()) == -1


def test_float_double_year_null_bit() -> None:
    assert one(T.FLOAT, 4, struct.pack("<f", 0.1)) == struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert one(T.DOUBLE, 8, struct.pack("<d", -2.5)) == -2.5
    assert one(T.YEAR, 0, b"\x00") == 0
    assert one(T.YEAR, 0, b"\x7c") == 2024
    assert one(T.NULL, 0, None) is None
    for bits in range(1, 65):
        meta = (bits % 8) << 8 | bits // 8
        nbytes = (bits + 7) // 8
        top = (1 << bits) - 1
        assert one(T.BIT, meta, top.to_bytes(nbytes, "big")) == top
        assert one(T.BIT, meta, (1).to_bytes(nbytes, "big")) == 1


def test_decimal_and_temporal_columns() -> None:
    assert str(one(T.NEWDECIMAL, 5 << 8 | 2, encode_decimal(Decimal("-10.5"), 5, 2))) == "-10.50"
    assert one(T.NEWDECIMAL, 65 << 8 | 30, encode_decimal(Decimal(0), 65, 30)) == Decimal(0)
    assert one(T.DATE, 0, b"\x00\x00\x00") == "0000-00-00"
    assert one(T.DATETIME2, 6, encode_datetime2(2024, 2, 29, 23, 59, 58, 123456, 6)) == (
        "2024-02-29 23:59:58.123456"
    )
    assert one(T.TIMESTAMP2, 0, b"\x00\x00\x00\x00") == "0000-00-00 00:00:00"
    assert one(T.TIMESTAMP2, 2, b"\x65\x53\xf1\x00\x05") == "2023-11-14T22:13:20.05Z"
    assert one(T.TIME2, 3, encode_time2(True, 838, 59, 59, 0, 3)) == "-838:59:59.000"
    assert one(T.TIME2, 0, encode_time2(True, 0, 0, 1, 0, 0)) == "-00:00:01"


def test_strings_and_charsets() -> None:
    utf8 = ColumnInfo(collation=255)
    # VARCHAR(10) utf8mb4: max 40 bytes -> 1-byte length
    assert one(T.VARCHAR, 40, prefixed("héllo".encode(), 1), utf8) == "héllo"
    # VARCHAR(100) utf8mb4: max 400 bytes -> 2-byte length
    assert one(T.VARCHAR, 400, prefixed(b"x" * 300, 2), utf8) == "x" * 300
    # CHAR(100) utf8mb4 = 400 bytes: the high bits of the length hide in the type byte
    meta = char_meta(T.STRING, 400)
    assert meta >> 8 != T.STRING
    assert one(T.STRING, meta, prefixed("é".encode() * 150, 2), utf8) == "é" * 150
    assert one(T.STRING, char_meta(T.STRING, 40), prefixed(b"abc", 1), utf8) == "abc"
    # binary collation -> bytes, padded back to BINARY(4)'s n bytes (the binlog drops trailing
    # zero bytes); latin1 is cp1252
    assert one(T.STRING, char_meta(T.STRING, 4), prefixed(b"\x00\x01", 1), ColumnInfo(collation=63)) == (
        b"\x00\x01\x00\x00"
    )
    assert one(T.VARCHAR, 10, prefixed(b"\x80", 1), ColumnInfo(collation=8)) == "\u20ac"
    assert one(T.VARCHAR, 10, prefixed(b"\xe9", 1), ColumnInfo(collation=8)) == "é"
    # unknown collation: VARCHAR as UTF-8, BLOB family as bytes
    assert one(T.VARCHAR, 10, prefixed("ü".encode(), 1)) == "ü"
    assert one(T.BLOB, 2, prefixed(b"\xff\x00", 2)) == b"\xff\x00"
    assert one(T.BLOB, 3, prefixed(b"text", 3), utf8) == "text"
    assert one(T.BLOB, 4, prefixed(b"", 4), utf8) == ""
    assert one(T.BLOB, 1, prefixed(b"tiny", 1), ColumnInfo(collation=63)) == b"tiny"


def test_invalid_text_is_a_typed_error_naming_column_and_charset() -> None:
    m = Map((T.LONG, T.VARCHAR), (0, 40), (ColumnInfo(name="id"), ColumnInfo(name="note", collation=45)))
    body = image([b"\x01\x00\x00\x00", prefixed(b"ok", 1)]) + image([b"\x02\x00\x00\x00", prefixed(b"\xff", 1)])
    with pytest.raises(CharsetDecodeError) as err:
        rows(m, body)
    assert err.value.charset == "utf8mb4"
    assert "'note'" in err.value.column
    assert "row 1" in str(err.value) and "utf8mb4" in str(err.value)
    assert isinstance(err.value, MalformedEventError)


def test_enum_and_set() -> None:
    info = ColumnInfo(enum_values=("small", "large"), set_values=("a", "b", "c"))
    assert one(T.STRING, char_meta(T.ENUM, 1), b"\x02", info) == "large"
    assert one(T.STRING, char_meta(T.ENUM, 1), b"\x00", info) == ""
    assert one(T.STRING, char_meta(T.ENUM, 2), b"\x01\x00") == 1
    assert one(T.STRING, char_meta(T.SET, 1), b"\x05", info) == ("a", "c")
    assert one(T.STRING, char_meta(T.SET, 1), b"\x00", info) == ()
    assert one(T.STRING, char_meta(T.SET, 3), b"\x05\x00\x01") == 0x010005
    assert one(T.STRING, char_meta(T.SET, 8), b"\xff" * 8) == 2**64 - 1
    with pytest.raises(MalformedEventError):
        one(T.STRING, char_meta(T.ENUM, 1), b"\x03", info)
    with pytest.raises(MalformedEventError):
        one(T.STRING, char_meta(T.SET, 1), b"\x08", info)


def test_json_geometry_vector() -> None:
    doc = {"a": [1, 2, {"b": None}], "c": "d"}
    assert one(T.JSON, 4, prefixed(encode_json(doc), 4)) == doc
    assert one(T.JSON, 4, prefixed(b"", 4)) is None
    wkb = bytes.fromhex("0101000000000000000000f03f0000000000000040")
    assert one(T.GEOMETRY, 4, prefixed(struct.pack("<I", 4326) + wkb, 4)) == Geometry(4326, wkb)
    assert one(T.VECTOR, 4, prefixed(struct.pack("<3f", 1.0, -2.5, 0.5), 4)) == (1.0, -2.5, 0.5)


def test_mariadb_uuid_inet4_inet6_vector_as_the_schema_types_them() -> None:
    uuid = ColumnInfo(collation=63, mariadb_type="uuid")
    raw = bytes.fromhex("0b8a1c2d3e4f11efa5b6c7d8e9f00102")
    assert one(T.STRING, char_meta(T.STRING, 16), prefixed(raw, 1), uuid) == "0b8a1c2d-3e4f-11ef-a5b6-c7d8e9f00102"
    # logged without its trailing zero bytes, as BINARY(n) is
    assert one(T.STRING, char_meta(T.STRING, 16), prefixed(b"\x01", 1), uuid) == "01000000-0000-0000-0000-000000000000"
    inet4 = ColumnInfo(collation=63, mariadb_type="inet4")
    assert one(T.STRING, char_meta(T.STRING, 4), prefixed(bytes([192, 0, 2, 1]), 1), inet4) == "192.0.2.1"
    assert one(T.STRING, char_meta(T.STRING, 4), prefixed(b"\x0a", 1), inet4) == "10.0.0.0"
    inet6 = ColumnInfo(collation=63, mariadb_type="inet6")
    addr = bytes.fromhex("20010db8000000000000000000000001")
    assert one(T.STRING, char_meta(T.STRING, 16), prefixed(addr, 1), inet6) == "2001:db8::1"
    with pytest.raises(MalformedEventError, match="INET4 value has 4 bytes"):
        one(T.STRING, char_meta(T.STRING, 4), prefixed(b"12345", 1), inet4)
    with pytest.raises(UnsupportedError, match="UUID column logged as 12 bytes"):
        one(T.STRING, char_meta(T.STRING, 12), prefixed(raw[:12], 1), uuid)
    # Without the schema's type they are the BINARY(n) they are logged as.
    assert one(T.STRING, char_meta(T.STRING, 16), prefixed(raw, 1), ColumnInfo(collation=63)) == raw
    vector = ColumnInfo(collation=63, vector_dimension=3)
    assert one(T.VARCHAR, 12, prefixed(struct.pack("<3f", 1.0, -2.5, 0.5), 1), vector) == (1.0, -2.5, 0.5)


def test_minimal_images_and_updates() -> None:
    m = Map((T.LONG, T.VARCHAR, T.LONG), (0, 40, 0), (ColumnInfo(), ColumnInfo(collation=255), ColumnInfo()))
    before = image([b"\x07\x00\x00\x00"])  # only column 0 (the key)
    after = image([prefixed(b"new", 1), None])  # columns 1 and 2
    got = rows(m, before + after, present=0b001, kind="update", present_after=0b110)
    assert got == [((7, ABSENT, ABSENT), (ABSENT, "new", None))]
    # delete with a full image, two rows
    body = image([b"\x01\0\0\0", None, b"\x02\0\0\0"]) + image([b"\x03\0\0\0", prefixed(b"x", 1), None])
    assert rows(m, body, kind="delete") == [(1, None, 2), (3, "x", None)]
    # images with no column and an empty body
    assert rows(m, b"", present=0) == []
    with pytest.raises(MalformedEventError):
        rows(m, b"\x00", present=0)


def test_partial_json_update() -> None:
    m = Map((T.LONG, T.JSON, T.JSON), (0, 4, 4))
    diff = b"\x00" + lenenc(3) + b"$.a" + lenenc(3) + b"\x05\x05\x00"
    before = image([b"\x01\0\0\0", prefixed(encode_json({"a": 1}), 4), prefixed(encode_json([]), 4)])
    shared = b"\x01" + b"\x01"  # value_options = PARTIAL_JSON_UPDATES, partial_bits: first JSON column
    after = image([b"\x01\0\0\0", prefixed(diff, 4), prefixed(encode_json([1]), 4)])
    (row,) = rows(m, before + shared + after, kind="update", partial=True)
    assert row[0] == (1, {"a": 1}, [])
    assert row[1][0] == 1 and row[1][2] == [1]
    assert row[1][1] == JsonDiffs([JsonDiff("replace", "$.a", 5)])
    # value_options = 0: no partial bits, full documents
    after_full = image([b"\x01\0\0\0", prefixed(encode_json({"a": 5}), 4), None])
    (row,) = rows(m, before + b"\x00" + after_full, kind="update", partial=True)
    assert row[1] == (1, {"a": 5}, None)


def test_null_bitmap_trailing_bits_set_like_old_servers() -> None:
    # MariaDB / MySQL 5.x leave unused bits of the null bitmap at 1
    m = Map((T.LONG,), (0,))
    assert rows(m, b"\xfe\x05\x00\x00\x00") == [(5,)]


def test_memoryview_and_offsets() -> None:
    m = Map((T.LONG,), (0,))
    body = b"HEADER" + image([b"\x05\0\0\0"]) + b"CRC!"
    got = plan_for(m).decode_rows("write", memoryview(body), 6, len(body) - 4, 1, None, False)
    assert got == [(5,)]
    assert plan_for(m).decode_rows("write", body, 6, len(body) - 4, 1, None, False) == [(5,)]


def test_plan_cache_and_overridden_columns() -> None:
    m = Map((T.VARCHAR,), (40,), (ColumnInfo(),))
    assert plan_for(m) is plan_for(m)
    bin_cols = (ColumnInfo(collation=63),)
    assert plan_for(m, bin_cols) is not plan_for(m)
    body = image([prefixed(b"ab", 1)])
    assert plan_for(m, bin_cols).decode_rows("write", body, 0, len(body), 1, None, False) == [(b"ab",)]


def test_truncated_and_overlong_bodies_name_row_and_column() -> None:
    m = Map((T.LONG, T.VARCHAR), (0, 40), (ColumnInfo(name="id"), ColumnInfo(name="s", collation=255)))
    body = image([b"\x01\0\0\0", prefixed(b"abc", 1)])
    with pytest.raises(MalformedEventError, match=r"row 0, column #1 's'"):
        rows(m, body[:-1])
    with pytest.raises(MalformedEventError, match="row 1"):
        rows(m, body + b"\x00\x01")
    with pytest.raises(MalformedEventError, match=r"db\.t"):
        rows(m, body[:3])


def test_unsupported_types_fail_at_plan_time() -> None:
    with pytest.raises(UnsupportedError, match="DECIMAL"):
        plan_for(Map((T.DECIMAL,), (0,)))
    with pytest.raises(UnsupportedError, match="collation id 4000"):
        plan_for(Map((T.VARCHAR,), (10,), (ColumnInfo(collation=4000),)))
    with pytest.raises(MalformedEventError):
        plan_for(Map((T.NEWDECIMAL,), (2 << 8 | 5,)))


WIDE = Map(
    (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.FLOAT, T.DOUBLE, T.NEWDECIMAL, T.DATE,
     T.DATETIME2, T.TIMESTAMP2, T.TIME2, T.YEAR, T.VARCHAR, T.STRING, T.BLOB, T.STRING, T.STRING,
     T.BIT, T.JSON, T.GEOMETRY, T.VECTOR),
    (0, 0, 0, 0, 0, 4, 8, 10 << 8 | 2, 0, 6, 3, 2, 0, 400, char_meta(T.STRING, 600), 2,
     char_meta(T.ENUM, 1), char_meta(T.SET, 1), 3 << 8 | 1, 4, 4, 4),
    (
        *(ColumnInfo(collation=255) for _ in range(16)),
        ColumnInfo(enum_values=("a", "b")),
        ColumnInfo(set_values=("x", "y")),
        *(ColumnInfo() for _ in range(4)),
    ),
)


@settings(max_examples=examples(400))
@given(st.binary(max_size=120), st.integers(0, 2**22 - 1), st.sampled_from(["write", "update"]),
       st.booleans())
def test_random_bytes_raise_only_malformed_event_error(body: bytes, present: int, kind: str,
                                                      partial: bool) -> None:
    try:
        plan_for(WIDE).decode_rows(kind, body, 0, len(body), present, present, partial)
    except MalformedEventError:
        pass


def test_inspection_marks_what_the_binlog_does_not_say() -> None:
    """``mark_unsure``: an integer of unknown signedness with its top bit set gives both readings;
    text of an unknown charset, or not valid in its own, keeps its bytes, marked; what is known
    decodes as always."""
    from sluice.binlog.values.marked import EitherSign, UndecodedText

    unsure = ColumnInfo(mark_unsure=True)
    widths = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 8}
    for t, w in widths.items():
        top = 1 << (8 * w - 1)
        assert one(t, 0, (top - 1).to_bytes(w, "little"), unsure) == top - 1
        value = one(t, 0, b"\xfe" + b"\xff" * (w - 1), unsure)
        assert value == EitherSign(-2, 2 * top - 2)
        assert one(t, 0, b"\xff" * w, ColumnInfo(unsigned=True, mark_unsure=True)) == 2 * top - 1
        assert one(t, 0, b"\xff" * w, ColumnInfo(unsigned=False, mark_unsure=True)) == -1
    for t, meta in ((T.VARCHAR, 40), (T.STRING, char_meta(T.STRING, 40)), (T.BLOB, 2)):
        width = 2 if t == T.BLOB else 1
        raw = one(t, meta, prefixed(b"caf\xc3\xa9", width), unsure)
        assert type(raw) is UndecodedText and raw == b"caf\xc3\xa9"
        utf8mb4 = ColumnInfo(collation=45, mark_unsure=True)
        assert one(t, meta, prefixed(b"caf\xc3\xa9", width), utf8mb4) == "café"
        bad = one(t, meta, prefixed(b"\xff\x00", width), utf8mb4)
        assert type(bad) is UndecodedText and bad == b"\xff\x00"
        binary = one(t, meta, prefixed(b"\xff", width), ColumnInfo(collation=63, mark_unsure=True))
        assert type(binary) is bytes
    latin1 = ColumnInfo(collation=8, mark_unsure=True)
    assert one(T.VARCHAR, 20, prefixed(b"caf\xe9", 1), latin1) == "café"
    # BINARY(n) keeps its trailing zero bytes the server trims, as without mark_unsure
    assert one(T.STRING, char_meta(T.STRING, 4), prefixed(b"ab", 1), ColumnInfo(collation=63, mark_unsure=True)) \
        == b"ab\x00\x00"


def test_marked_values_in_json() -> None:
    from sluice.binlog.values.marked import EitherSign, UndecodedText
    from sluice.cdc.jsonl import encode

    assert encode([UndecodedText(b"\xff\x00"), EitherSign(-1, 255), b"\xff"]) == \
        '[{"hex":"ff00"},{"signed":-1,"unsigned":255},"/w=="]'
