"""Decoder for TABLE_MAP_EVENT, including the optional metadata block.

Body (rows_event.h ``Table_map_event``): table id (6 bytes, 4 when the FDE declares a 6-byte
post-header), flags u16, schema (u8 length, text, NUL), table (same), column count (packed),
one type byte per column, metadata length (packed) and the per-type metadata
(``Field::do_save_field_metadata``; packing convention in ``TableMapEvent``), the NULL-able
bitmap, then the optional metadata TLVs written with ``binlog_row_metadata=FULL|MINIMAL``
(type u8, packed length, value). Signedness bits cover numeric columns, charset entries cover
character columns, ENUM/SET entries cover columns whose real type is ENUM/SET, following the
server's ``is_numeric_type`` / ``is_character_type`` (sql/log_event.cc; MySQL counts VECTOR as
a character column, MariaDB counts GEOMETRY).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.decoders._reader import U16, U32, packed_int, take
from sluice.binlog.events import TableMapEvent
from sluice.binlog.header import EventHeader
from sluice.errors import UnsupportedError

if TYPE_CHECKING:
    from sluice.binlog.decoders.context import DecodeContext

Body = bytes | memoryview

_META_1 = frozenset({
    T.FLOAT, T.DOUBLE, T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.GEOMETRY, T.JSON,
    T.VECTOR, T.TIMESTAMP2, T.DATETIME2, T.TIME2,
})
_META_2_LE = frozenset({T.VARCHAR, T.VAR_STRING})
_META_2_BE = frozenset({T.NEWDECIMAL, T.STRING, T.ENUM, T.SET, T.BIT})
_NUMERIC = frozenset({T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.NEWDECIMAL, T.FLOAT, T.DOUBLE})
_CHARACTER_MYSQL = frozenset({T.STRING, T.VAR_STRING, T.VARCHAR, T.BLOB, T.VECTOR,
                              T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB})
_CHARACTER_MARIADB = frozenset({T.STRING, T.VAR_STRING, T.VARCHAR, T.BLOB, T.GEOMETRY,
                                T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB})

# Optional metadata field types (rows_event.h Table_map_event::Optional_metadata_field_type).
SIGNEDNESS, DEFAULT_CHARSET, COLUMN_CHARSET, COLUMN_NAME = 1, 2, 3, 4
SET_STR_VALUE, ENUM_STR_VALUE, GEOMETRY_TYPE, SIMPLE_PRIMARY_KEY = 5, 6, 7, 8
PRIMARY_KEY_WITH_PREFIX, ENUM_AND_SET_DEFAULT_CHARSET, ENUM_AND_SET_COLUMN_CHARSET = 9, 10, 11
COLUMN_VISIBILITY, VECTOR_DIMENSIONALITY = 12, 13


def real_type(col_type: int, meta: int) -> int:
    """Real type of a column: STRING columns carry ENUM/SET (or CHAR > 255) in metadata byte 0."""
    if col_type == T.STRING and meta:
        b0 = meta >> 8
        return b0 if b0 & 0x30 == 0x30 else b0 | 0x30
    return col_type


def string_meta(meta: int) -> tuple[int, int]:
    """(real type, length) of a STRING column's metadata: the real type in byte 0 with a CHAR's
    length over 255 folded into its high bits (Field_string::do_save_field_metadata, sql/field.cc)."""
    byte0, byte1 = meta >> 8, meta & 0xFF
    if byte0 and (byte0 & 0x30) != 0x30:
        return byte0 | 0x30, byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
    return byte0 or T.STRING, byte1


def _column_meta(types: bytes, body: Body, pos: int, end: int) -> tuple[list[int], int]:
    metas: list[int] = []
    for t in types:
        if t in _META_1:
            metas.append(body[pos])
            pos += 1
        elif t in _META_2_LE:
            metas.append(U16.unpack_from(body, pos)[0])
            pos += 2
        elif t in _META_2_BE:
            metas.append(body[pos] << 8 | body[pos + 1])
            pos += 2
        elif t == T.TYPED_ARRAY:
            raise UnsupportedError(
                "TABLE_MAP column of type TYPED_ARRAY (multi-valued index) is not supported"
            )
        else:
            metas.append(0)
        if pos > end:
            raise ValueError("column metadata runs past its declared length")
    if pos != end:
        raise ValueError(f"column metadata declares {end - pos} bytes more than the column types use")
    return metas, pos


def _bits_msb(value: bytes, count: int) -> list[bool]:
    if len(value) * 8 < count:
        raise ValueError("optional metadata bitmap is shorter than its column count")
    return [bool(value[i >> 3] & (0x80 >> (i & 7))) for i in range(count)]


def _packed_list(value: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(value):
        v, pos = packed_int(value, pos)
        out.append(v)
    if pos != len(value):
        raise ValueError("packed integer list overruns its field")
    return out


def _str_lists(value: bytes) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    pos = 0
    while pos < len(value):
        n, pos = packed_int(value, pos)
        items = []
        for _ in range(n):
            ln, pos = packed_int(value, pos)
            s, pos = take(value, pos, ln, "ENUM/SET member")
            items.append(s.decode("utf-8", "surrogateescape"))
        out.append(tuple(items))
    return out


def _charsets(value: bytes, default: bool, count: int) -> list[int]:
    """DEFAULT_CHARSET form (default + (index, collation) exceptions) or COLUMN_CHARSET form."""
    ids = _packed_list(value)
    if not default:
        if len(ids) != count:
            raise ValueError(f"{len(ids)} column charsets for {count} columns")
        return ids
    if not ids or len(ids) % 2 != 1:
        raise ValueError("default charset field is not a default plus (index, collation) pairs")
    out = [ids[0]] * count
    for k in range(1, len(ids), 2):
        i = ids[k]
        if i >= count:
            raise ValueError(f"charset exception for column {i} of {count}")
        out[i] = ids[k + 1]
    return out


def _apply_optional(
    body: Body, pos: int, types: bytes, metas: list[int], mariadb: bool
) -> tuple[list[dict[str, Any]], tuple[tuple[int, int], ...] | None]:
    n = len(types)
    reals = [real_type(t, m) for t, m in zip(types, metas, strict=True)]
    character = _CHARACTER_MARIADB if mariadb else _CHARACTER_MYSQL
    numeric_idx = [i for i, t in enumerate(reals) if t in _NUMERIC]
    char_idx = [i for i, t in enumerate(reals) if t in character]
    enumset_idx = [i for i, t in enumerate(reals) if t in (T.ENUM, T.SET)]
    cols: list[dict[str, Any]] = [{} for _ in range(n)]
    pk: tuple[tuple[int, int], ...] | None = None
    end = len(body)
    while pos < end:
        ftype = body[pos]
        length, pos = packed_int(body, pos + 1)
        value, pos = take(body, pos, length, "optional metadata field")
        if ftype == SIGNEDNESS:
            for i, bit in zip(numeric_idx, _bits_msb(value, len(numeric_idx)), strict=True):
                cols[i]["unsigned"] = bit
        elif ftype in (DEFAULT_CHARSET, COLUMN_CHARSET):
            for i, c in zip(char_idx, _charsets(value, ftype == DEFAULT_CHARSET, len(char_idx)), strict=True):
                cols[i]["collation"] = c
        elif ftype in (ENUM_AND_SET_DEFAULT_CHARSET, ENUM_AND_SET_COLUMN_CHARSET):
            cs = _charsets(value, ftype == ENUM_AND_SET_DEFAULT_CHARSET, len(enumset_idx))
            for i, c in zip(enumset_idx, cs, strict=True):
                cols[i]["collation"] = c
        elif ftype == COLUMN_NAME:
            names, p = [], 0
            while p < len(value):
                ln, p = packed_int(value, p)
                s, p = take(value, p, ln, "column name")
                names.append(s.decode("utf-8", "surrogateescape"))
            if len(names) != n:
                raise ValueError(f"{len(names)} column names for {n} columns")
            for i, name in enumerate(names):
                cols[i]["name"] = name
        elif ftype in (SET_STR_VALUE, ENUM_STR_VALUE):
            want = T.SET if ftype == SET_STR_VALUE else T.ENUM
            idx = [i for i, t in enumerate(reals) if t == want]
            lists = _str_lists(value)
            if len(lists) != len(idx):
                raise ValueError(f"{len(lists)} member lists for {len(idx)} {want.name} columns")
            key = "set_values" if want == T.SET else "enum_values"
            for i, members in zip(idx, lists, strict=True):
                cols[i][key] = members
        elif ftype == GEOMETRY_TYPE:
            idx = [i for i, t in enumerate(reals) if t == T.GEOMETRY]
            vals = _packed_list(value)
            if len(vals) != len(idx):
                raise ValueError(f"{len(vals)} geometry types for {len(idx)} geometry columns")
            for i, g in zip(idx, vals, strict=True):
                cols[i]["geometry_type"] = g
        elif ftype == SIMPLE_PRIMARY_KEY:
            pk = tuple((i, 0) for i in _packed_list(value))
        elif ftype == PRIMARY_KEY_WITH_PREFIX:
            vals = _packed_list(value)
            if len(vals) % 2:
                raise ValueError("primary key with prefix field has an odd number of integers")
            pk = tuple((vals[k], vals[k + 1]) for k in range(0, len(vals), 2))
        elif ftype == COLUMN_VISIBILITY:
            for i, bit in enumerate(_bits_msb(value, n)):
                cols[i]["visible"] = bit
        elif ftype == VECTOR_DIMENSIONALITY:
            idx = [i for i, t in enumerate(reals) if t == T.VECTOR]
            vals = _packed_list(value)
            if len(vals) != len(idx):
                raise ValueError(f"{len(vals)} vector dimensions for {len(idx)} vector columns")
            for i, d in zip(idx, vals, strict=True):
                cols[i]["vector_dimension"] = d
        # Unknown field types are skipped: the TLV length makes that safe.
    if pk is not None and any(i >= n for i, _ in pk):
        raise ValueError("primary key names a column beyond the column count")
    return cols, pk


_EMPTY_INFO = ColumnInfo()


def decode_table_map_fields(body: Body, p: DecodeContext) -> tuple[Any, ...]:
    """Everything of a TABLE_MAP except its header, in ``TableMapEvent`` field order."""
    if p.post_header_len(19, 8) == 6:
        (table_id,) = U32.unpack_from(body, 0)
        pos = 4
    else:
        table_id = int.from_bytes(body[0:6], "little")
        pos = 6
    (flags,) = U16.unpack_from(body, pos)
    schema, pos = take(body, pos + 3, body[pos + 2], "schema name")
    if body[pos] != 0:
        raise ValueError("schema name is not followed by NUL")
    table, pos = take(body, pos + 2, body[pos + 1], "table name")
    if body[pos] != 0:
        raise ValueError("table name is not followed by NUL")
    ncols, pos = packed_int(body, pos + 1)
    types, pos = take(body, pos, ncols, "column types")
    meta_len, pos = packed_int(body, pos)
    metas, pos = _column_meta(types, body, pos, pos + meta_len)
    nb = (ncols + 7) >> 3
    nullbits, pos = take(body, pos, nb, "NULL bitmap")
    nullable = tuple(bool(nullbits[i >> 3] & (1 << (i & 7))) for i in range(ncols))
    if pos < len(body):
        fde = p.fde
        infos, pk = _apply_optional(body, pos, types, metas, bool(fde and fde.is_mariadb))
        columns = tuple(ColumnInfo(**d) if d else _EMPTY_INFO for d in infos)
    else:
        columns, pk = (_EMPTY_INFO,) * ncols, None
    return (
        table_id, flags, schema.decode("utf-8"), table.decode("utf-8"), ncols, tuple(types),
        tuple(metas), nullable, columns, pk, bytes(body),
    )


def decode_table_map(header: EventHeader, body: Body, p: DecodeContext) -> TableMapEvent:
    """TABLE_MAP_EVENT body -> ``TableMapEvent``, made current for its table id by the parser."""
    return p.on_table_map(header, body)
