"""What a TABLE_MAP's own metadata adds to the tracked columns, or corrects in them.

A TABLE_MAP written with ``binlog_row_metadata=FULL`` (or MySQL's MINIMAL) carries signedness,
charsets, ENUM/SET members and more; the tracked schema knows what the binlog does not say
(MariaDB's UUID / INET4 / INET6 and VECTOR, which it logs as BINARY / VARBINARY). ``merged`` and
``with_schema_types`` give the decoder the union of both, the map winning where it speaks;
``refreshed`` updates a tracked column with what a map says of it (``SchemaTracker`` uses it
when the map shows the tracked schema out of date).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.values.charsets import COLLATION_CHARSETS
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.schema.typemap import FIXED_BINARY_TYPES, collation_name

__all__ = ["merged", "refreshed", "with_schema_types"]


def refreshed(old: ColumnDef, info: ColumnInfo, name: str, nullable: bool) -> ColumnDef:
    """A tracked column of the right type, updated with what the map says about it."""
    changes: dict[str, Any] = {"name": name, "nullable": nullable, "visible": info.visible}
    if info.unsigned is not None and old.data_type in ("tinyint", "smallint", "mediumint", "int", "bigint",
                                                        "decimal", "float", "double"):
        changes["unsigned"] = info.unsigned
    if info.enum_values is not None:
        changes["enum_values"] = info.enum_values
    if info.set_values is not None:
        changes["set_values"] = info.set_values
    if info.collation is not None and old.charset not in (None, "binary"):
        cs = COLLATION_CHARSETS.get(info.collation)
        if cs is not None and cs != old.charset:
            changes["charset"], changes["collation"] = cs, collation_name(info.collation)
    return replace(old, **changes)


def merged(tracked: ColumnInfo, logged: ColumnInfo) -> ColumnInfo:
    """Tracked facts, overridden by whatever the TABLE_MAP's own metadata carries."""
    if logged == _EMPTY:
        return tracked
    return ColumnInfo(
        name=tracked.name,
        unsigned=tracked.unsigned if logged.unsigned is None else logged.unsigned,
        collation=tracked.collation if logged.collation is None else logged.collation,
        enum_values=tracked.enum_values if logged.enum_values is None else logged.enum_values,
        set_values=tracked.set_values if logged.set_values is None else logged.set_values,
        geometry_type=tracked.geometry_type if logged.geometry_type is None else logged.geometry_type,
        vector_dimension=tracked.vector_dimension if logged.vector_dimension is None else logged.vector_dimension,
        visible=tracked.visible,
        mariadb_type=tracked.mariadb_type,
    )


def with_schema_types(tracked: TableSchema, logged: tuple[ColumnInfo, ...]) -> tuple[ColumnInfo, ...]:
    """A FULL map's columns with what only the schema knows: MariaDB's UUID / INET4 / INET6 and
    VECTOR, which its binlog logs as BINARY / VARBINARY (the map names the column, not the type)."""
    if len(tracked.columns) != len(logged):
        return logged
    out = list(logged)
    for i, col in enumerate(tracked.columns):
        if col.data_type in FIXED_BINARY_TYPES or (col.data_type == "vector" and logged[i].vector_dimension is None):
            schema = col.column_info()
            out[i] = replace(logged[i], mariadb_type=schema.mariadb_type, vector_dimension=schema.vector_dimension)
    return tuple(out)


_EMPTY = ColumnInfo()
