"""MySQL binary JSON (``sql-common/json_binary.cc``) and partial JSON updates (``sql/json_diff.cc``).

A JSON column holds one value: a type byte, then the value. Objects and arrays come in a small
(16-bit offsets and sizes) and a large (32-bit) form; their offsets count from the start of the
container (after its type byte). Scalars: literals (null/true/false), int16/32/64, uint16/32/64,
double, utf8mb4 strings with a variable-length length (7 bits per byte, low bits first), and opaque
values (a column type byte, a variable-length length and the raw bytes).

Python values: object -> ``dict`` (keys in stored order), array -> ``list``, string -> ``str``,
integers -> ``int``, double -> ``float``, literals -> ``None``/``True``/``False``. Opaque values:
DECIMAL -> ``decimal.Decimal``; DATE -> ``"YYYY-MM-DD"``; DATETIME and TIMESTAMP ->
``"YYYY-MM-DD HH:MM:SS.ffffff"``; TIME -> ``"HH:MM:SS.ffffff"`` (six digits, as the server prints
JSON temporal values); any other opaque value -> ``"base64:typeN:<base64>"``, the text the server
itself prints for it. An empty column value (length 0) is JSON ``null``.

A partial update of a JSON column (PARTIAL_UPDATE_ROWS_EVENT) carries a list of diffs instead of a
document: per diff an operation byte (0 replace, 1 insert, 2 remove), a length-encoded path, and
unless it is a remove a length-encoded binary JSON value. It decodes to :class:`JsonDiffs`.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sluice.binlog.values.decimal import decimal_decoder
from sluice.binlog.values.temporal import format_datetime_packed, format_time_packed

__all__ = ["JsonDiff", "JsonDiffs", "parse_json", "parse_json_diffs", "parse_json_value"]

SMALL_OBJECT = 0x00
LARGE_OBJECT = 0x01
SMALL_ARRAY = 0x02
LARGE_ARRAY = 0x03
LITERAL = 0x04
INT16 = 0x05
UINT16 = 0x06
INT32 = 0x07
UINT32 = 0x08
INT64 = 0x09
UINT64 = 0x0A
DOUBLE = 0x0B
STRING = 0x0C
OPAQUE = 0x0F

MAX_DEPTH = 150  # the server allows 100 levels

_U16 = struct.Struct("<H").unpack_from
_I16 = struct.Struct("<h").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_I64 = struct.Struct("<q").unpack_from
_F64 = struct.Struct("<d").unpack_from
_HH = struct.Struct("<HH").unpack_from
_II = struct.Struct("<II").unpack_from

_OPS = ("replace", "insert", "remove")


class JsonDecimal(Decimal):
    """A DECIMAL stored inside a JSON document: a JSON number with exact digits, unlike a DECIMAL
    column, whose contract encoding is a string."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One change to a JSON document: ``op`` is replace, insert or remove; remove has no value."""

    op: str
    path: str
    value: Any = None


class JsonDiffs(tuple[JsonDiff, ...]):
    """The diffs of a partially updated JSON column, in the order the server applies them."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"JsonDiffs({list(self)!r})"


def parse_json(data: bytes) -> Any:
    """Decode a whole binary JSON column value; ``ValueError`` when it is malformed."""
    if not data:
        return None
    return parse_json_value(data[0], data, 1, len(data), 0)


def _varlen(b: bytes, pos: int, end: int) -> tuple[int, int]:
    n = 0
    for i in range(5):
        if pos >= end:
            raise ValueError("JSON length runs past the end of the value")
        byte = b[pos]
        pos += 1
        n |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return n, pos
    raise ValueError("JSON variable-length integer longer than 5 bytes")


def parse_json_value(t: int, b: bytes, pos: int, end: int, depth: int) -> Any:
    """The value of type ``t`` whose bytes start at ``pos`` (containers end by ``end``)."""
    if t <= LARGE_ARRAY:
        if depth > MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
        return _container(t, b, pos, end, depth + 1)
    if t == STRING:
        n, p = _varlen(b, pos, end)
        if p + n > end:
            raise ValueError(f"JSON string of {n} bytes runs past the end of the value")
        return b[p : p + n].decode("utf-8")
    if t == LITERAL:
        return _literal(b[pos] if pos < end else -1)
    width = _WIDTH.get(t)
    if width is None:
        if t == OPAQUE:
            return _opaque(b, pos, end)
        raise ValueError(f"unknown JSON value type 0x{t:02x}")
    if pos + width > end:
        raise ValueError(f"JSON scalar of type 0x{t:02x} runs past the end of the value")
    return _SCALARS[t](b, pos)[0]


_WIDTH = {INT16: 2, UINT16: 2, INT32: 4, UINT32: 4, INT64: 8, UINT64: 8, DOUBLE: 8}
_SCALARS = {INT16: _I16, UINT16: _U16, INT32: _I32, UINT32: _U32, INT64: _I64, UINT64: _U64, DOUBLE: _F64}


def _literal(v: int) -> Any:
    if v == 0:
        return None
    if v == 1:
        return True
    if v == 2:
        return False
    raise ValueError(f"unknown JSON literal {v}")


def _container(t: int, b: bytes, base: int, end: int, depth: int) -> Any:
    large = t & 1
    is_object = t < SMALL_ARRAY
    hdr = 8 if large else 4
    if base + hdr > end:
        raise ValueError("JSON container header runs past the end of the value")
    count, size = _II(b, base) if large else _HH(b, base)
    cend = base + size
    if cend > end or size < hdr:
        raise ValueError(f"JSON container of {size} bytes does not fit in its value")
    off_size = 4 if large else 2
    value_entry = 1 + off_size
    key_entry = off_size + 2
    entries = base + hdr
    keys_size = key_entry * count if is_object else 0
    if entries + keys_size + value_entry * count > cend:
        raise ValueError(f"JSON container of {count} elements does not fit in {size} bytes")
    # All value entries (type byte, then an inlined scalar or the value's offset) in one unpack.
    unpack = (_LARGE_VALUES if large else _SMALL_VALUES).get(count) or _entries(large, False, count)
    ventries = unpack(b, entries + keys_size)
    values: list[Any] = []
    append = values.append
    for i in range(0, 2 * count, 2):
        vt = ventries[i]
        x = ventries[i + 1]
        if vt == LITERAL:
            literal = _LITERALS.get(x & 0xFF, _BAD)
            append(_literal(x & 0xFF) if literal is _BAD else literal)
        elif vt == INT16:
            x &= 0xFFFF
            append(x - 0x10000 if x & 0x8000 else x)
        elif vt == UINT16:
            append(x & 0xFFFF)
        elif large and vt == INT32:
            append(x - 0x100000000 if x & 0x80000000 else x)
        elif large and vt == UINT32:
            append(x)
        else:
            if x < hdr or base + x >= cend:
                raise ValueError(f"JSON value offset {x} outside its container")
            p = base + x
            # The common cases inline, anything else (and every error) through parse_json_value.
            if vt == STRING:
                n = b[p]
                if n < 0x80 and p + 1 + n <= cend:
                    append(b[p + 1 : p + 1 + n].decode("utf-8"))
                    continue
            elif vt <= LARGE_ARRAY:
                if depth <= MAX_DEPTH:
                    append(_container(vt, b, p, cend, depth + 1))
                    continue
            else:
                width = _WIDTH.get(vt)
                if width is not None and p + width <= cend:
                    append(_SCALARS[vt](b, p)[0])
                    continue
            append(parse_json_value(vt, b, p, cend, depth))
    if not is_object:
        return values
    unpack = (_LARGE_KEYS if large else _SMALL_KEYS).get(count) or _entries(large, True, count)
    kentries = unpack(b, entries)
    obj = {}
    for i in range(count):
        koff = kentries[2 * i]
        klen = kentries[2 * i + 1]
        if koff < hdr or base + koff + klen > cend:
            raise ValueError(f"JSON key at offset {koff} outside its object")
        obj[b[base + koff : base + koff + klen].decode("utf-8")] = values[i]
    return obj


_LITERALS = {0: None, 1: True, 2: False}
_BAD = object()
# count -> unpack_from of the entries of a container of that many elements
_SMALL_VALUES: dict[int, Any] = {}
_LARGE_VALUES: dict[int, Any] = {}
_SMALL_KEYS: dict[int, Any] = {}
_LARGE_KEYS: dict[int, Any] = {}


def _entries(large: int, keys: bool, count: int) -> Any:
    """``unpack_from`` of ``count`` key entries (offset, length) or value entries (type, inline
    value or offset) of a small or large container, as one flat tuple."""
    entry = ("IH" if keys else "BI") if large else ("HH" if keys else "BH")
    unpack = struct.Struct("<" + entry * count).unpack_from
    cache = (_LARGE_KEYS if keys else _LARGE_VALUES) if large else (_SMALL_KEYS if keys else _SMALL_VALUES)
    if count <= 256:  # larger containers are rare: no cache entry each
        cache[count] = unpack
    return unpack


def _opaque(b: bytes, pos: int, end: int) -> Any:
    if pos >= end:
        raise ValueError("JSON opaque value has no type byte")
    field_type = b[pos]
    n, p = _varlen(b, pos + 1, end)
    if p + n > end:
        raise ValueError(f"JSON opaque value of {n} bytes runs past the end of the value")
    data = b[p : p + n]
    if field_type == 246:  # NEWDECIMAL: precision, scale, binary decimal
        if n < 2:
            raise ValueError("JSON DECIMAL value without precision and scale")
        return JsonDecimal(decimal_decoder(data[0], data[1])(data, 2))
    if field_type in (7, 10, 11, 12, 17, 18, 19):  # TIMESTAMP, DATE, TIME, DATETIME (+ 5.6 codes)
        if n < 8:
            raise ValueError(f"JSON temporal value of {n} bytes, expected 8")
        packed = _I64(data, 0)[0]
        if field_type in (11, 19):
            return format_time_packed(packed, 6)
        text = format_datetime_packed(packed, 6)
        return text[:10] if field_type == 10 else text
    return f"base64:type{field_type}:{base64.b64encode(data).decode('ascii')}"


def parse_json_diffs(data: bytes) -> JsonDiffs:
    """Decode the diff list of a partially updated JSON column."""
    diffs = []
    pos = 0
    end = len(data)
    while pos < end:
        op = data[pos]
        if op > 2:
            raise ValueError(f"unknown JSON diff operation {op}")
        n, pos = _lenenc(data, pos + 1, end)
        if pos + n > end:
            raise ValueError("JSON diff path runs past the end of the value")
        path = data[pos : pos + n].decode("utf-8")
        pos += n
        if op == 2:
            diffs.append(JsonDiff("remove", path))
            continue
        n, pos = _lenenc(data, pos, end)
        if pos + n > end or n < 1:
            raise ValueError("JSON diff value runs past the end of the value")
        value = parse_json_value(data[pos], data, pos + 1, pos + n, 0)
        pos += n
        diffs.append(JsonDiff(_OPS[op], path, value))
    return JsonDiffs(diffs)


def _lenenc(b: bytes, pos: int, end: int) -> tuple[int, int]:
    """A length-encoded integer (``net_field_length``)."""
    if pos >= end:
        raise ValueError("length-encoded integer runs past the end")
    first = b[pos]
    if first < 251:
        return first, pos + 1
    width = {252: 2, 253: 3, 254: 8}.get(first)
    if width is None or pos + 1 + width > end:
        raise ValueError(f"bad length-encoded integer prefix 0x{first:02x}")
    return int.from_bytes(b[pos + 1 : pos + 1 + width], "little"), pos + 1 + width
