"""MySQL binary JSON: round trips of nested documents, every scalar type, opaque values, diffs."""

from __future__ import annotations

import struct
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.binlog.values.json_binary import JsonDiff, JsonDiffs, parse_json, parse_json_diffs
from tests.conftest import examples

try:
    from tests.unit.binlog.encoders import encode_decimal, encode_json, lenenc
except ImportError:  # collected without package __init__ files
    from encoders import encode_decimal, encode_json, lenenc  # type: ignore[no-redef]

pytestmark = pytest.mark.unit

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=40)
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6),
    max_leaves=40,
)


@settings(max_examples=examples(300))
@given(documents)
def test_round_trip(doc: Any) -> None:
    assert parse_json(encode_json(doc)) == doc


@settings(max_examples=examples(100))
@given(st.lists(documents, max_size=4) | st.dictionaries(st.text(max_size=8), documents, max_size=4))
def test_round_trip_large_containers(doc: Any) -> None:
    assert parse_json(encode_json(doc, large=True)) == doc


def test_large_document_switches_to_large_form() -> None:
    doc = {"big": "x" * 70000, "n": [1, -70000, 2**40, 2**64 - 1, 1.5, None, True, False]}
    raw = encode_json(doc)
    assert raw[0] == 0x01  # large object
    assert parse_json(raw) == doc


def test_annotated_small_object() -> None:
    # {"a": 1}: type 0x00, count 1, size 12, key entry (offset 11, len 1),
    # value entry (int16 inline: type 0x05, value 1), key "a"
    raw = bytes.fromhex("00" "0100" "0C00" "0B00" "0100" "05" "0100" "61")
    assert parse_json(raw) == {"a": 1}
    # [true, "hi"]: count 2, size 13, entries: literal true inline; string at offset 10
    raw = bytes.fromhex("02" "0200" "0D00" "04" "0100" "0C" "0A00" "02" "6869")
    assert parse_json(raw) == [True, "hi"]


def test_scalars_at_top_level() -> None:
    assert parse_json(b"") is None
    assert parse_json(b"\x04\x00") is None
    assert parse_json(b"\x0b" + struct.pack("<d", 2.5)) == 2.5
    assert parse_json(b"\x0a" + struct.pack("<Q", 2**64 - 1)) == 2**64 - 1
    assert parse_json(b"\x0c\x03abc") == "abc"


def _opaque(field_type: int, data: bytes) -> bytes:
    return bytes([0x0F, field_type, len(data)]) + data


def test_opaque_values() -> None:
    dec = bytes([5, 2]) + encode_decimal(Decimal("-10.50"), 5, 2)
    got = parse_json(_opaque(246, dec))
    assert got == Decimal("-10.50") and str(got) == "-10.50"
    ymd = ((2024 * 13 + 2) << 5) | 29
    packed = ((ymd << 17 | (13 << 12 | 14 << 6 | 15)) << 24) | 123456
    assert parse_json(_opaque(12, struct.pack("<q", packed))) == "2024-02-29 13:14:15.123456"
    assert parse_json(_opaque(10, struct.pack("<q", ymd << 17 << 24))) == "2024-02-29"
    time_packed = -((1 << 12 | 2 << 6 | 3) << 24 | 500000)
    assert parse_json(_opaque(11, struct.pack("<q", time_packed))) == "-01:02:03.500000"
    assert parse_json(_opaque(252, b"\x01\x02")) == "base64:type252:AQI="


@pytest.mark.parametrize(
    "raw",
    [b"\x00\x01", b"\x00\x01\x00\xff\xff", b"\x0c\x05ab", b"\x0f", b"\x04\x07", b"\x0e",
     bytes.fromhex("00" "0100" "0C00" "0B00" "0500" "05" "0100" "61"), b"\x0c\xff\xff\xff\xff\xff\x01"],
)
def test_malformed_raises_value_error(raw: bytes) -> None:
    with pytest.raises(ValueError):
        parse_json(raw)


@settings(max_examples=examples(300))
@given(st.binary(max_size=60))
def test_random_bytes_raise_only_value_error(raw: bytes) -> None:
    try:
        parse_json(raw)
    except ValueError:
        pass


def test_diffs() -> None:
    value = encode_json([1, 2])
    raw = (
        b"\x00" + lenenc(6) + b"$.a[1]" + lenenc(len(value)) + value
        + b"\x01" + lenenc(3) + b"$.b" + lenenc(2) + b"\x04\x00"
        + b"\x02" + lenenc(3) + b"$.c"
    )
    diffs = parse_json_diffs(raw)
    assert isinstance(diffs, JsonDiffs)
    assert list(diffs) == [
        JsonDiff("replace", "$.a[1]", [1, 2]),
        JsonDiff("insert", "$.b", None),
        JsonDiff("remove", "$.c"),
    ]
    with pytest.raises(ValueError):
        parse_json_diffs(b"\x03\x01$")
    with pytest.raises(ValueError):
        parse_json_diffs(b"\x00\x05$.a")
