"""DECIMAL and temporal value decoders: round trips over the full ranges and annotated bytes."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.binlog.values.decimal import decimal_decoder, decimal_size
from sluice.binlog.values.temporal import (
    date_decoder,
    datetime2_decoder,
    datetime2_size,
    datetime_decoder,
    time2_decoder,
    time_decoder,
    timestamp2_decoder,
    timestamp_decoder,
)
from tests.conftest import examples

try:
    from tests.unit.binlog.encoders import (
        encode_date,
        encode_datetime2,
        encode_decimal,
        encode_time2,
        encode_timestamp2,
    )
except ImportError:  # collected without package __init__ files
    from encoders import (  # type: ignore[no-redef]
        encode_date,
        encode_datetime2,
        encode_decimal,
        encode_time2,
        encode_timestamp2,
    )

pytestmark = pytest.mark.unit


@st.composite
def decimals(draw: st.DrawFn) -> tuple[Decimal, int, int]:
    precision = draw(st.integers(1, 65))
    scale = draw(st.integers(0, min(precision, 30)))
    intg = precision - scale
    ipart = draw(st.integers(0, 10**intg - 1)) if intg else 0
    fpart = draw(st.integers(0, 10**scale - 1)) if scale else 0
    sign = draw(st.sampled_from(["", "-"]))
    text = f"{sign}{ipart}" + (f".{fpart:0{scale}d}" if scale else "")
    return Decimal(text), precision, scale


@settings(max_examples=examples(400))
@given(decimals())
def test_decimal_round_trip(case: tuple[Decimal, int, int]) -> None:
    value, precision, scale = case
    raw = encode_decimal(value, precision, scale)
    assert len(raw) == decimal_size(precision, scale)
    got = decimal_decoder(precision, scale)(b"\xaa" + raw + b"\xbb", 1)
    assert got == value
    # exactly `scale` fractional digits, and no sign on zero
    assert got.as_tuple().exponent == -scale
    assert str(got) == (str(value) if value else str(abs(value)))


def test_decimal_annotated() -> None:
    # DECIMAL(14,4) 1234567890.1234: 10 integer digits = 1 leading digit in 1 byte (sign bit set)
    # + 9 digits in 4 bytes; 4 fraction digits in 2 bytes.
    raw = bytes.fromhex("81" "0DFB38D2" "04D2")
    assert decimal_decoder(14, 4)(raw, 0) == Decimal("1234567890.1234")
    assert decimal_decoder(14, 4)(bytes(b ^ 0xFF for b in raw), 0) == Decimal("-1234567890.1234")
    assert str(decimal_decoder(4, 2)(bytes.fromhex("8A32"), 0)) == "10.50"
    assert str(decimal_decoder(5, 5)(bytes.fromhex("7FFF9B"), 0)) == "-0.00100"
    assert str(decimal_decoder(3, 0)(bytes.fromhex("8000"), 0)) == "0"
    with pytest.raises(ValueError):
        decimal_decoder(2, 0)(bytes.fromhex("E4"), 0)  # group 100 > 99
    with pytest.raises(ValueError):
        decimal_decoder(66, 0)


@st.composite
def datetimes(draw: st.DrawFn) -> tuple[tuple[int, ...], int]:
    fsp = draw(st.integers(0, 6))
    parts = (
        draw(st.integers(0, 9999)), draw(st.integers(0, 12)), draw(st.integers(0, 31)),
        draw(st.integers(0, 23)), draw(st.integers(0, 59)), draw(st.integers(0, 59)),
    )
    usec = draw(st.integers(0, 10**fsp - 1)) * 10 ** (6 - fsp) if fsp else 0
    return (*parts, usec), fsp


@settings(max_examples=examples(400))
@given(datetimes())
def test_datetime2_round_trip(case: tuple[tuple[int, ...], int]) -> None:
    (y, mo, d, h, mi, s, usec), fsp = case
    raw = encode_datetime2(y, mo, d, h, mi, s, usec, fsp)
    assert len(raw) == datetime2_size(fsp)
    text = f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}"
    if fsp:
        text += "." + f"{usec:06d}"[:fsp]
    assert datetime2_decoder(fsp)(b"\x00" + raw, 1) == text


@settings(max_examples=examples(300))
@given(st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31))
def test_date_round_trip(y: int, m: int, d: int) -> None:
    assert date_decoder()(encode_date(y, m, d), 0) == f"{y:04d}-{m:02d}-{d:02d}"


@settings(max_examples=examples(400))
@given(st.integers(0, 2**32 - 1), st.integers(0, 6), st.integers(0, 999999))
def test_timestamp2_round_trip(sec: int, fsp: int, usec: int) -> None:
    usec = usec // 10 ** (6 - fsp) * 10 ** (6 - fsp)
    got = timestamp2_decoder(fsp)(encode_timestamp2(sec, usec, fsp), 0)
    frac = ("." + f"{usec:06d}"[:fsp]) if fsp else ""
    if sec == 0:
        assert got == "0000-00-00 00:00:00" + ("." + "0" * fsp if fsp else "")
    else:
        when = dt.datetime.fromtimestamp(sec, dt.UTC)
        assert got == when.strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"


@settings(max_examples=examples(500))
@given(st.booleans(), st.integers(0, 838), st.integers(0, 59), st.integers(0, 59),
       st.integers(0, 6), st.integers(0, 999999))
def test_time2_round_trip(neg: bool, h: int, m: int, s: int, fsp: int, usec: int) -> None:
    usec = usec // 10 ** (6 - fsp) * 10 ** (6 - fsp)
    if h == 838:
        m = s = min(m, 59)
    zero = not (h or m or s or usec)
    neg = neg and not zero
    got = time2_decoder(fsp)(encode_time2(neg, h, m, s, usec, fsp), 0)
    text = f"{'-' if neg else ''}{h:02d}:{m:02d}:{s:02d}"
    if fsp:
        text += "." + f"{usec:06d}"[:fsp]
    assert got == text


def test_temporal_annotated() -> None:
    # TIME2(0) -00:00:01: 0x800000 - 1 = 0x7FFFFF
    assert time2_decoder(0)(bytes.fromhex("7FFFFF"), 0) == "-00:00:01"
    # TIME2(2) -00:00:00.50: int part -1 (0x7FFFFF), fraction byte -50 = 0xCE
    assert time2_decoder(2)(bytes.fromhex("7FFFFFCE"), 0) == "-00:00:00.50"
    # TIME2(0) 838:59:59 = 838 << 12 | 59 << 6 | 59 = 0x346EFB, + 0x800000
    assert time2_decoder(0)(bytes.fromhex("B46EFB"), 0) == "838:59:59"
    assert time2_decoder(0)(bytes.fromhex("4B9105"), 0) == "-838:59:59"
    # DATE zero and partial dates verbatim
    assert date_decoder()(b"\x00\x00\x00", 0) == "0000-00-00"
    assert date_decoder()(encode_date(2024, 0, 15), 0) == "2024-00-15"
    # DATETIME2(0) zero date
    assert datetime2_decoder(0)(bytes.fromhex("8000000000"), 0) == "0000-00-00 00:00:00"
    assert datetime2_decoder(3)(bytes.fromhex("80000000000000"), 0) == "0000-00-00 00:00:00.000"
    # TIMESTAMP2(0) 1970-01-01T00:00:01Z
    assert timestamp2_decoder(0)(bytes.fromhex("00000001"), 0) == "1970-01-01T00:00:01Z"
    assert timestamp2_decoder(0)(bytes.fromhex("FFFFFFFF"), 0) == "2106-02-07T06:28:15Z"
    # old types
    assert timestamp_decoder()((1700000000).to_bytes(4, "little"), 0) == "2023-11-14T22:13:20Z"
    assert timestamp_decoder()(b"\0\0\0\0", 0) == "0000-00-00 00:00:00"
    assert datetime_decoder()((20240229235958).to_bytes(8, "little"), 0) == "2024-02-29 23:59:58"
    assert time_decoder()((-8385959).to_bytes(3, "little", signed=True), 0) == "-838:59:59"
    assert time_decoder()((123456).to_bytes(3, "little", signed=True), 0) == "12:34:56"


def test_temporal_bad_values_raise_value_error() -> None:
    with pytest.raises(ValueError):
        datetime2_decoder(6)(bytes.fromhex("8000000000") + (1000000).to_bytes(3, "big"), 0)
    with pytest.raises(ValueError):
        datetime2_decoder(0)(bytes.fromhex("7FFFFFFFFF"), 0)
    with pytest.raises((ValueError, IndexError)):
        timestamp2_decoder(2)(bytes.fromhex("0000000164"), 0)  # fraction byte 100
