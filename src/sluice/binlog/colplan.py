"""How each column of a TABLE_MAP is decoded: the plan-time facts of one column.

``column`` turns a column's type code, metadata and known facts (signedness, collation, ENUM/SET
members) into a :class:`Col`: the pieces the row plan's code generator puts into its Python loop,
and ``spec``, the same decision as the compiled core (``sluice.binlog._rowcore``) reads it. This is
the one place that decides how a MySQL type is laid out in a row image and what value it becomes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from sluice.binlog.column_info import BINARY_COLLATION, ColumnInfo, string_real_type
from sluice.binlog.constants import ColumnType
from sluice.binlog.values.charsets import (
    charmap_table,
    charset_for_collation,
    decoder_for_charset,
    python_codec,
)
from sluice.binlog.values.decimal import decimal_decoder, decimal_size
from sluice.binlog.values.geometry import decode_geometry, decode_vector
from sluice.binlog.values.json_binary import parse_json
from sluice.binlog.values.mariadb_types import MARIADB_TYPE_BYTES, mariadb_type_decoder
from sluice.binlog.values.marked import UndecodedText, either_sign_decoder, lenient_text
from sluice.binlog.values.temporal import (
    date_decoder,
    datetime2_decoder,
    datetime2_size,
    datetime_decoder,
    time2_decoder,
    time2_size,
    time_decoder,
    timestamp2_decoder,
    timestamp2_size,
    timestamp_decoder,
)
from sluice.errors import MalformedEventError, UnsupportedError

__all__ = ["Col", "column", "type_name"]

# Conversions of a var column's bytes in the compiled core (``_rowcore``'s CONV_* numbers).
CONV_BYTES, CONV_UTF8, CONV_CODEC, CONV_FUNC, CONV_BINPAD, CONV_CHARMAP, CONV_JSON = range(7)

class Col:
    """How one column is decoded; pure plan-time data used by the code generator."""

    __slots__ = ("bind", "charset", "desc", "fmt", "helper", "index", "is_json", "kind", "post",
                 "prefix", "size", "slice_expr", "spec")

    def __init__(self, index: int, desc: str) -> None:
        self.index = index
        self.desc = desc
        self.kind = "fixed"  # fixed | var | helper | null
        self.fmt = ""  # struct format chars of a fixed column
        self.post: str | None = None  # expression over {0}, {1} temps; None = the temp itself
        self.size = 0
        self.prefix = 0  # length-prefix width of a var column
        self.slice_expr = "{s}"  # expression turning the slice {s} into the value
        self.helper: Any = None  # (buf, pos) -> value for helper columns
        self.bind: dict[str, Any] = {}
        self.is_json = False
        self.charset: str | None = None
        self.spec: tuple[str, int, int, Any] = ("null", 0, 0, None)  # the compiled core's view


def type_name(t: int) -> str:
    """The name of a column type code (``LONG``), or ``type N`` for a code sluice does not know."""
    try:
        return ColumnType(t).name
    except ValueError:
        return f"type {t}"


_INT_FMT = {
    ColumnType.TINY: ("b", "B", 1),
    ColumnType.SHORT: ("h", "H", 2),
    ColumnType.LONG: ("i", "I", 4),
    ColumnType.LONGLONG: ("q", "Q", 8),
}

_BLOB_PREFIX = {
    ColumnType.TINY_BLOB: 1,
    ColumnType.BLOB: 2,
    ColumnType.MEDIUM_BLOB: 3,
    ColumnType.LONG_BLOB: 4,
}


def column(i: int, t: int, meta: int, info: ColumnInfo, table: str) -> Col:
    """The plan of column ``i`` of type ``t`` with TABLE_MAP metadata ``meta`` in ``table``."""
    desc = f"#{i}" + (f" {info.name!r}" if info.name else "") + f" ({type_name(t)})"
    c = Col(i, desc)

    def unsupported(what: str) -> UnsupportedError:
        return UnsupportedError(f"{table} column {desc}: {what}")

    def malformed(what: str) -> MalformedEventError:
        return MalformedEventError(f"{table} column {desc}: {what}")

    if t in _INT_FMT or t == ColumnType.INT24:
        _integer(c, t, info)
    elif t in (ColumnType.FLOAT, ColumnType.DOUBLE, ColumnType.YEAR, ColumnType.NULL):
        _simple(c, t)
    elif t == ColumnType.NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        try:
            _helper(c, decimal_decoder(precision, scale), decimal_size(precision, scale))
        except ValueError as exc:
            raise malformed(str(exc)) from None
        c.spec = ("decimal", c.size, precision << 8 | scale, c.spec[3])
    elif t in _TEMPORAL:
        _temporal(c, t, meta, malformed)
    elif t == ColumnType.BIT:
        _bit(c, meta, malformed)
    elif t in (ColumnType.VARCHAR, ColumnType.VAR_STRING):
        c.kind = "var"
        c.prefix = 1 if meta < 256 else 2
        if info.vector_dimension is not None:
            _function(c, decode_vector)  # MariaDB's VECTOR(n): a VARBINARY(4n) of float32s (Field_vector)
        else:
            _text(c, info, default_text=True, unsupported=unsupported)
    elif t in (ColumnType.STRING, ColumnType.ENUM, ColumnType.SET):
        _string(c, t, meta, info, table, unsupported)
    elif t in _BLOB_PREFIX or t in (ColumnType.JSON, ColumnType.GEOMETRY, ColumnType.VECTOR):
        _blob(c, t, meta, info, malformed, unsupported)
    elif t == ColumnType.DECIMAL:
        raise unsupported("the pre-5.0 DECIMAL type has no length in the binlog; ALTER the column to "
                          "a current DECIMAL")
    else:
        raise unsupported(f"column type {t} cannot appear in a row image sluice can decode")
    if c.kind == "fixed" and not c.size:
        c.size = struct.calcsize("<" + c.fmt)
    return c


_TEMPORAL = frozenset({ColumnType.DATE, ColumnType.NEWDATE, ColumnType.TIME, ColumnType.DATETIME,
                       ColumnType.TIMESTAMP, ColumnType.DATETIME2, ColumnType.TIMESTAMP2, ColumnType.TIME2})


def _integer(c: Col, t: int, info: ColumnInfo) -> None:
    """TINYINT to BIGINT and MEDIUMINT (INT24); with no signedness known and ``mark_unsure``, a
    value that reads differently signed and unsigned is marked."""
    unsigned = bool(info.unsigned)
    if info.mark_unsure and info.unsigned is None:
        size = 3 if t == ColumnType.INT24 else _INT_FMT[ColumnType(t)][2]
        _helper(c, either_sign_decoder(size), size)
    elif t == ColumnType.INT24:
        c.fmt = "HB" if unsigned else "Hb"
        c.post = "{0} | {1} << 16"
        c.size = 3
        c.spec = ("int", 3, 0 if unsigned else 1, None)
    else:
        signed_fmt, unsigned_fmt, size = _INT_FMT[ColumnType(t)]
        c.fmt = unsigned_fmt if unsigned else signed_fmt
        c.size = size
        c.spec = ("int", size, 0 if unsigned else 1, None)


def _simple(c: Col, t: int) -> None:
    """FLOAT, DOUBLE, YEAR and NULL: fixed layouts with no metadata."""
    if t == ColumnType.FLOAT:
        c.fmt, c.size = "f", 4
        c.spec = ("float", 4, 0, None)
    elif t == ColumnType.DOUBLE:
        c.fmt, c.size = "d", 8
        c.spec = ("float", 8, 0, None)
    elif t == ColumnType.YEAR:
        c.fmt, c.size, c.post = "B", 1, "({0} + 1900 if {0} else 0)"
        c.spec = ("year", 1, 0, None)
    else:
        c.kind = "null"


def _temporal(c: Col, t: int, meta: int, malformed: Callable[[str], MalformedEventError]) -> None:
    """DATE, TIME, DATETIME and TIMESTAMP, the old layouts and the fractional ones (metadata: fsp)."""
    if t in (ColumnType.DATE, ColumnType.NEWDATE):
        _helper(c, date_decoder(), 3)
        c.spec = ("date", 3, 0, c.spec[3])
    elif t == ColumnType.TIME:
        _helper(c, time_decoder(), 3)
    elif t == ColumnType.DATETIME:
        _helper(c, datetime_decoder(), 8)
    elif t == ColumnType.TIMESTAMP:
        _helper(c, timestamp_decoder(), 4)
    else:
        fsp = meta
        if not 0 <= fsp <= 6:
            raise malformed(f"fractional precision {fsp} is not 0..6")
        if t == ColumnType.DATETIME2:
            _helper(c, datetime2_decoder(fsp), datetime2_size(fsp))
        elif t == ColumnType.TIMESTAMP2:
            _helper(c, timestamp2_decoder(fsp), timestamp2_size(fsp))
        else:
            _helper(c, time2_decoder(fsp), time2_size(fsp))
        c.spec = (ColumnType(t).name.lower(), c.size, fsp, c.spec[3])


def _bit(c: Col, meta: int, malformed: Callable[[str], MalformedEventError]) -> None:
    """BIT(n): metadata bytes = whole bytes, bits; a big-endian unsigned integer of 1..8 bytes."""
    nbytes = (meta & 0xFF) + (1 if meta >> 8 else 0)
    if not 1 <= nbytes <= 8:
        raise malformed(f"BIT metadata 0x{meta:04x} is not 1..64 bits")
    if nbytes == 1:
        c.fmt, c.size = "B", 1
        c.spec = ("int", 1, 0, None)
    else:
        _helper(c, _bit_decoder(nbytes), nbytes)
        c.spec = ("uint_be", nbytes, 0, None)


def _string(c: Col, t: int, meta: int, info: ColumnInfo, table: str,
            unsupported: Callable[[str], UnsupportedError]) -> None:
    """CHAR/BINARY, ENUM and SET, all logged as type STRING with the real type in the metadata, and
    MariaDB's fixed-size types (UUID, INET4, INET6) that are CHARs of their byte size in the binlog."""
    real, length = string_real_type(t, meta)
    if real == ColumnType.STRING and info.mariadb_type is not None:
        if MARIADB_TYPE_BYTES.get(info.mariadb_type) != length:
            raise unsupported(f"a MariaDB {info.mariadb_type.upper()} column logged as {length} bytes")
        c.kind = "var"
        c.prefix = 1
        _function(c, mariadb_type_decoder(info.mariadb_type))
    elif real == ColumnType.STRING:
        c.kind = "var"
        c.prefix = 1 if length < 256 else 2
        _text(c, info, default_text=True, unsupported=unsupported)
        if info.collation == BINARY_COLLATION:
            # BINARY(n) is logged without its trailing zero bytes (Field_string::pack trims the
            # pad character, 0x00 for the binary charset); SELECT returns all n bytes.
            c.slice_expr = f"{{s}}.ljust({length}, b'\\x00')"
            c.spec = ("var", c.prefix, CONV_BINPAD, length)
    elif real == ColumnType.ENUM:
        _enum(c, length, info, table)
    elif real == ColumnType.SET:
        _set(c, length, info, table)
    else:
        raise unsupported(f"STRING column with real type {real} (metadata 0x{meta:04x})")


def _blob(c: Col, t: int, meta: int, info: ColumnInfo, malformed: Callable[[str], MalformedEventError],
          unsupported: Callable[[str], UnsupportedError]) -> None:
    """BLOB/TEXT of every size, JSON, GEOMETRY and MySQL's VECTOR: a 1..4-byte length prefix (metadata)."""
    c.kind = "var"
    prefix = meta or _BLOB_PREFIX.get(ColumnType(t), 4)
    if not 1 <= prefix <= 4:
        raise malformed(f"length prefix of {prefix} bytes")
    c.prefix = prefix
    if t == ColumnType.JSON:
        c.is_json = True
        _function(c, parse_json)
        c.spec = ("var", c.prefix, CONV_JSON, parse_json)  # binary JSON decoded by the core itself
    elif t == ColumnType.GEOMETRY:
        _function(c, decode_geometry)
    elif t == ColumnType.VECTOR:
        _function(c, decode_vector)
    else:
        _text(c, info, default_text=False, unsupported=unsupported)


def _helper(c: Col, fn: Any, size: int) -> None:
    c.kind = "helper"
    c.size = size
    c.bind = {f"_h{c.index}": fn}
    c.spec = ("call", size, 0, fn)


def _function(c: Col, fn: Any) -> None:
    """A var column whose value is ``fn(the value's bytes)``."""
    c.bind = {f"_h{c.index}": fn}
    c.slice_expr = f"_h{c.index}({{s}})"
    c.spec = ("var", c.prefix, CONV_FUNC, fn)


def _text(c: Col, info: ColumnInfo, *, default_text: bool, unsupported: Any) -> None:
    """Slice expression of a character column: bytes, or text in the column's charset."""
    collation = info.collation
    c.spec = ("var", c.prefix, CONV_BYTES, None)
    if info.mark_unsure and collation != BINARY_COLLATION:
        _marked_text(c, collation)
        return
    if collation is None:
        if not default_text:
            return  # BLOB family without a known collation: bytes
        c.charset = "utf8mb4"
        c.slice_expr = "{s}.decode('utf-8')"
        c.spec = ("var", c.prefix, CONV_UTF8, None)
        return
    if collation == BINARY_COLLATION:
        return
    try:
        charset = charset_for_collation(collation)
        decode = decoder_for_charset(charset)
    except UnsupportedError as exc:
        raise unsupported(str(exc)) from None
    c.charset = charset
    codec = python_codec(charset)
    if codec is not None:
        c.slice_expr = f"{{s}}.decode({codec!r})"
        c.spec = ("var", c.prefix, CONV_UTF8, None) if codec == "utf-8" else ("var", c.prefix, CONV_CODEC, codec)
        return
    _function(c, decode)
    table = charmap_table(charset)
    if table is not None:
        c.spec = ("var", c.prefix, CONV_CHARMAP, table)


def _marked_text(c: Col, collation: int | None) -> None:
    """A character column read for inspection: text where its charset is known and its bytes decode
    in it, else ``UndecodedText``."""
    if collation is None:
        _function(c, UndecodedText)
        return
    try:
        charset = charset_for_collation(collation)
        decode = decoder_for_charset(charset)
    except UnsupportedError:
        _function(c, UndecodedText)  # a charset sluice cannot decode: its bytes, marked
        return
    c.charset = charset
    _function(c, lenient_text(decode))


def _enum(c: Col, pack: int, info: ColumnInfo, table: str) -> None:
    if pack not in (1, 2):
        raise MalformedEventError(f"{table} column {c.desc}: ENUM of {pack} bytes (expected 1 or 2)")
    c.fmt, c.size = ("B", 1) if pack == 1 else ("H", 2)
    c.spec = ("enum", pack, 0, None)
    if info.enum_values is not None:
        members = ("", *info.enum_values)
        c.bind = {f"_h{c.index}": members}
        c.post = f"_h{c.index}[{{0}}]"
        c.spec = ("enum", pack, 0, members)


def _set(c: Col, pack: int, info: ColumnInfo, table: str) -> None:
    if not 1 <= pack <= 8:
        raise MalformedEventError(f"{table} column {c.desc}: SET of {pack} bytes (expected 1..8)")
    members = info.set_values
    if members is None:
        if pack in (1, 2, 4, 8):
            c.fmt, c.size = {1: "B", 2: "H", 4: "I", 8: "Q"}[pack], pack
        else:
            _helper(c, _uint_le_decoder(pack), pack)
        c.spec = ("uint_le", pack, 0, None)
        return
    _helper(c, _set_decoder(pack, tuple(members)), pack)
    c.spec = ("set", pack, 0, tuple(members))


def _bit_decoder(nbytes: int) -> Any:
    def decode(buf: bytes, pos: int) -> int:
        return int.from_bytes(buf[pos : pos + nbytes], "big")

    return decode


def _uint_le_decoder(nbytes: int) -> Any:
    def decode(buf: bytes, pos: int) -> int:
        return int.from_bytes(buf[pos : pos + nbytes], "little")

    return decode


def _set_decoder(nbytes: int, members: tuple[str, ...]) -> Any:
    limit = 1 << len(members)
    bits = tuple(enumerate(members))
    seen: dict[int, tuple[str, ...]] = {}  # mask -> members: a column holds few distinct sets

    def decode(buf: bytes, pos: int) -> tuple[str, ...]:
        mask = int.from_bytes(buf[pos : pos + nbytes], "little")
        value = seen.get(mask)
        if value is not None:
            return value
        if mask >= limit:
            raise ValueError(f"SET bitmask 0x{mask:x} names members beyond the {len(members)} defined")
        value = tuple(m for k, m in bits if mask >> k & 1)
        if len(seen) < 4096:
            seen[mask] = value
        return value

    return decode
