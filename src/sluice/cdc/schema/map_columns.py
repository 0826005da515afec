"""A TABLE_MAP column read back as the declared column it stands for (``column_from_map``).

When a table was never declared to sluice (no DDL seen, no bootstrap) but its TABLE_MAPs carry
FULL metadata, the schema is what the maps say: type codes and metadata give the type, lengths
and fractional seconds; the optional metadata gives names, signedness, collations, ENUM / SET
members, geometry subtypes and vector dimensions. A length in characters is given only when the
character set is known.
"""

from __future__ import annotations

from typing import Any

from sluice.binlog.column_info import BINARY_COLLATION, ColumnInfo
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.decoders.table_map import string_meta
from sluice.binlog.values.charsets import COLLATION_CHARSETS
from sluice.cdc.schema.model import ColumnDef
from sluice.cdc.schema.typemap import (
    BLOB_TYPES,
    GEOMETRY_TYPES,
    INTEGER_TYPES,
    TEXT_TYPES,
    collation_name,
    mbmaxlen,
    type_name,
)

__all__ = ["column_from_map"]


def _charset_of(info: ColumnInfo) -> str | None:
    if info.collation is None:
        return None
    return COLLATION_CHARSETS.get(info.collation)


def column_from_map(code: int, meta: int, info: ColumnInfo, nullable: bool,
                    name: str | None = None) -> ColumnDef:
    """The declared column a TABLE_MAP column (type, metadata, optional metadata) stands for, as far
    as the map tells: lengths in characters only when the character set is known."""
    cs = _charset_of(info)
    coll = collation_name(info.collation)
    binary = info.collation == BINARY_COLLATION
    col_name = name or info.name or ""
    unsigned = bool(info.unsigned)
    base: dict[str, Any] = {"name": col_name, "nullable": nullable, "visible": info.visible}
    for dt, c in INTEGER_TYPES.items():
        if code == c:
            return ColumnDef(data_type=dt, unsigned=unsigned, **base)
    if code == T.NEWDECIMAL:
        return ColumnDef(data_type="decimal", unsigned=unsigned, precision=meta >> 8, scale=meta & 0xFF, **base)
    if code in (T.FLOAT, T.DOUBLE):
        return ColumnDef(data_type="float" if code == T.FLOAT else "double", unsigned=unsigned, **base)
    if code == T.BIT:
        return ColumnDef(data_type="bit", length=(meta & 0xFF) * 8 + (meta >> 8), **base)
    if code in (T.DATE, T.NEWDATE):
        return ColumnDef(data_type="date", **base)
    if code == T.YEAR:
        return ColumnDef(data_type="year", **base)
    temporal = {T.TIME2: "time", T.TIME: "time", T.DATETIME2: "datetime", T.DATETIME: "datetime",
                T.TIMESTAMP2: "timestamp", T.TIMESTAMP: "timestamp"}
    if code in temporal:
        fsp = meta if code in (T.TIME2, T.DATETIME2, T.TIMESTAMP2) else 0
        return ColumnDef(data_type=temporal[T(code)], fsp=fsp, **base)
    if code in (T.VARCHAR, T.VAR_STRING):
        if binary:
            return ColumnDef(data_type="varbinary", length=meta, charset="binary", collation="binary", **base)
        per = mbmaxlen(cs)
        return ColumnDef(data_type="varchar", length=meta // per if per else None, charset=cs, collation=coll,
                         **base)
    if code == T.STRING:
        real, length = string_meta(meta)
        if real == T.ENUM:
            return ColumnDef(data_type="enum", enum_values=info.enum_values, charset=cs, collation=coll, **base)
        if real == T.SET:
            return ColumnDef(data_type="set", set_values=info.set_values, charset=cs, collation=coll, **base)
        if binary:
            return ColumnDef(data_type="binary", length=length, charset="binary", collation="binary", **base)
        per = mbmaxlen(cs)
        return ColumnDef(data_type="char", length=length // per if per else None, charset=cs, collation=coll,
                         **base)
    if code in (T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB):
        pack = meta if 1 <= meta <= 4 else {T.TINY_BLOB: 1, T.MEDIUM_BLOB: 3, T.LONG_BLOB: 4}.get(T(code), 2)
        if info.collation is None or binary:
            dt = next(n for n, p in BLOB_TYPES.items() if p == pack)
            return ColumnDef(data_type=dt, charset="binary", collation="binary", **base)
        dt = next(n for n, p in TEXT_TYPES.items() if p == pack)
        return ColumnDef(data_type=dt, charset=cs, collation=coll, **base)
    if code == T.JSON:
        return ColumnDef(data_type="json", **base)
    if code == T.GEOMETRY:
        sub = next((n for n, g in GEOMETRY_TYPES.items() if g == info.geometry_type), "geometry")
        return ColumnDef(data_type=sub, **base)
    if code == T.VECTOR:
        return ColumnDef(data_type="vector", length=info.vector_dimension, **base)
    return ColumnDef(data_type=type_name(code).lower(), **base)
