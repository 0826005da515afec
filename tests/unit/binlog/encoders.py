"""Test-only encoders: the server's binary forms of column values, written from the format facts.

They let the tests round-trip values through sluice's decoders (decode(encode(x)) == x) and build
rows-event bodies by hand. Nothing in ``src`` imports them.
"""

from __future__ import annotations

import struct
from decimal import Decimal, localcontext
from typing import Any

DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


# -- DECIMAL ------------------------------------------------------------------------------------

def encode_decimal(value: Decimal, precision: int, scale: int) -> bytes:
    """``decimal2bin``: groups of 9 digits in 4 bytes, sign bit flipped, negatives inverted."""
    with localcontext() as ctx:
        ctx.prec = 100
        q = value.quantize(Decimal(1).scaleb(-scale))
    sign, digits, exp = q.as_tuple()
    text = "".join(map(str, digits)).rjust(scale + 1, "0")
    assert isinstance(exp, int)
    ipart = text[: len(text) - scale] if scale else text
    fpart = text[len(text) - scale :] if scale else ""
    intg = precision - scale
    ipart = ipart.lstrip("0")
    assert len(ipart) <= intg, (value, precision, scale)
    ipart = ipart.rjust(intg, "0")
    groups: list[tuple[int, int]] = []  # (nbytes, value)
    lead = intg % 9
    if lead:
        groups.append((DIG2BYTES[lead], int(ipart[:lead])))
    for k in range(lead, intg, 9):
        groups.append((4, int(ipart[k : k + 9])))
    for k in range(0, scale - scale % 9, 9):
        groups.append((4, int(fpart[k : k + 9])))
    if scale % 9:
        groups.append((DIG2BYTES[scale % 9], int(fpart[scale - scale % 9 :])))
    v = 0
    size = 0
    for nbytes, g in groups:
        v = (v << (8 * nbytes)) | g
        size += nbytes
    negative = sign == 1 and any(digits)
    v |= 1 << (8 * size - 1)
    if negative:
        v ^= (1 << (8 * size)) - 1
    return v.to_bytes(size, "big")


# -- temporal -----------------------------------------------------------------------------------

_FRAC_BYTES = (0, 1, 1, 2, 2, 3, 3)


def _frac(usec: int, fsp: int) -> bytes:
    n = _FRAC_BYTES[fsp]
    if n == 0:
        return b""
    return (usec // (10000, 100, 1)[n - 1]).to_bytes(n, "big")


def encode_date(year: int, month: int, day: int) -> bytes:
    return (year << 9 | month << 5 | day).to_bytes(3, "little")


def encode_datetime2(year: int, month: int, day: int, hour: int, minute: int, second: int,
                     usec: int, fsp: int) -> bytes:
    ymd = ((year * 13 + month) << 5) | day
    hms = hour << 12 | minute << 6 | second
    intpart = (ymd << 17) | hms
    return (intpart + 0x8000000000).to_bytes(5, "big") + _frac(usec, fsp)


def encode_timestamp2(sec: int, usec: int, fsp: int) -> bytes:
    return sec.to_bytes(4, "big") + _frac(usec, fsp)


def encode_time2(negative: bool, hour: int, minute: int, second: int, usec: int, fsp: int) -> bytes:
    """``my_time_packed_to_binary``; ``usec`` must already be rounded to ``fsp`` digits."""
    packed = ((hour << 12 | minute << 6 | second) << 24) | usec
    if negative:
        packed = -packed
    n = _FRAC_BYTES[fsp]
    if n == 3:
        return (packed + 0x800000000000).to_bytes(6, "big")
    intpart = packed >> 24  # arithmetic shift, as in C
    # C remainder keeps the sign of the dividend
    frac = -((-packed) & 0xFFFFFF) if packed < 0 else packed & 0xFFFFFF
    out = (intpart + 0x800000).to_bytes(3, "big")
    if n == 1:
        out += bytes([int(frac / 10000) & 0xFF])
    elif n == 2:
        out += (int(frac / 100) & 0xFFFF).to_bytes(2, "big")
    return out


# -- binary JSON --------------------------------------------------------------------------------

def _varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_json(value: Any, *, large: bool | None = None) -> bytes:
    t, data = _json(value, large)
    return bytes([t]) + data


def _json(v: Any, large: bool | None = None) -> tuple[int, bytes]:
    if v is None:
        return 0x04, b"\x00"
    if v is True:
        return 0x04, b"\x01"
    if v is False:
        return 0x04, b"\x02"
    if isinstance(v, int):
        if -(1 << 15) <= v < (1 << 15):
            return 0x05, struct.pack("<h", v)
        if 0 <= v < (1 << 16):
            return 0x06, struct.pack("<H", v)
        if -(1 << 31) <= v < (1 << 31):
            return 0x07, struct.pack("<i", v)
        if 0 <= v < (1 << 32):
            return 0x08, struct.pack("<I", v)
        if -(1 << 63) <= v < (1 << 63):
            return 0x09, struct.pack("<q", v)
        return 0x0A, struct.pack("<Q", v)
    if isinstance(v, float):
        return 0x0B, struct.pack("<d", v)
    if isinstance(v, str):
        raw = v.encode("utf-8")
        return 0x0C, _varlen(len(raw)) + raw
    if isinstance(v, Decimal):
        _sign, digits, exp = v.as_tuple()
        assert isinstance(exp, int)
        scale = max(-exp, 0)
        precision = max(len(digits), scale + 1)
        data = bytes([precision, scale]) + encode_decimal(v, precision, scale)
        return 0x0F, bytes([246]) + _varlen(len(data)) + data
    if isinstance(v, dict | list):
        if large is None:
            try:
                return _container(v, False)
            except OverflowError:
                return _container(v, True)
        return _container(v, large)
    raise TypeError(type(v))


def _inline(t: int, data: bytes, large: bool) -> bool:
    return t in (0x04, 0x05, 0x06) or (large and t in (0x07, 0x08))


def _container(v: dict[str, Any] | list[Any], large: bool) -> tuple[int, bytes]:
    is_object = isinstance(v, dict)
    off = "<I" if large else "<H"
    osz = 4 if large else 2
    hdr = 2 * osz
    items = list(v.items()) if isinstance(v, dict) else [(None, x) for x in v]
    count = len(items)
    key_entries = (osz + 2) * count if is_object else 0
    value_entries = (1 + osz) * count
    pos = hdr + key_entries + value_entries
    keys = b""
    key_entry = b""
    if is_object:
        for k, _ in items:
            raw = k.encode("utf-8")
            key_entry += _pack(off, pos + len(keys), large) + struct.pack("<H", len(raw))
            keys += raw
        pos += len(keys)
    values = b""
    value_entry = b""
    for _, x in items:
        t, data = _json(x)
        if _inline(t, data, large):
            value_entry += bytes([t]) + data.ljust(osz, b"\x00")
        else:
            value_entry += bytes([t]) + _pack(off, pos + len(values), large)
            values += data
    size = hdr + key_entries + value_entries + len(keys) + len(values)
    body = _pack(off, count, large) + _pack(off, size, large) + key_entry + value_entry + keys + values
    t = (0x00 if is_object else 0x02) | (1 if large else 0)
    return t, body


def _pack(fmt: str, n: int, large: bool) -> bytes:
    if not large and n > 0xFFFF:
        raise OverflowError(n)
    return struct.pack(fmt, n)


# -- rows-event bodies --------------------------------------------------------------------------

def lenenc(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def image(values: list[bytes | None]) -> bytes:
    """One row image: the null bitmap over the given (present) columns, then the non-NULL values."""
    bits = 0
    for i, v in enumerate(values):
        if v is None:
            bits |= 1 << i
    nbytes = (len(values) + 7) // 8
    return bits.to_bytes(nbytes, "little") + b"".join(v for v in values if v is not None)


def prefixed(data: bytes, width: int) -> bytes:
    """A value with its little-endian length prefix of ``width`` bytes."""
    return len(data).to_bytes(width, "little") + data


def char_meta(real_type: int, length: int) -> int:
    """TABLE_MAP metadata of a STRING column: the CHAR > 255 bytes trick of ``sql/field.cc``."""
    byte0 = real_type ^ ((length & 0x300) >> 4)
    return byte0 << 8 | (length & 0xFF)
