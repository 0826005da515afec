"""A table's mirror layout from the tracked schema (typed row images: ``sluice.lake.types.images``).

The Spark pipeline's driver never sees TABLE_MAP events: it knows each table from the schema
history (``sluice.cdc.schema.TableSchema``) and receives row images as JSON text in sluice's
JSON-lines value encoding (DESIGN.md, "Value encoding"). ``table_map_for_schema`` packs a declared
table into what a TABLE_MAP of it would say — one binlog type code and one metadata value per
column, after the server's ``Field::binlog_type`` and ``Field::do_save_field_metadata``
(``sql/field.cc``) — so that ``mirror_columns_for_schema`` is exactly ``sluice.lake.types.mirror_columns.
mirror_columns`` of that map.
"""

from __future__ import annotations

import json
from dataclasses import astuple, dataclass, replace
from typing import Any

from sluice.binlog.column_info import BINARY_COLLATION, ColumnInfo
from sluice.binlog.constants import ColumnType as T
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.schema.typemap import (
    BLOB_TYPES,
    FIXED_BINARY_TYPES,
    GEOMETRY_TYPES,
    INTEGER_TYPES,
    TEXT_TYPES,
    collation_id,
    mbmaxlen,
)
from sluice.dsn import Flavor
from sluice.errors import SchemaError
from sluice.lake.types.mirror_columns import MirrorColumn, mirror_columns

__all__ = ["SchemaTableMap", "mirror_columns_for_schema", "table_map_for_schema"]


# -- declared table -> TABLE_MAP ----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SchemaTableMap:
    """What a TABLE_MAP of a tracked table would carry (the attributes of ``TableMapEvent`` that
    layouts and row plans read). ``raw`` is a key unique to the layout, not an event body."""

    schema: str
    table: str
    column_count: int
    column_types: tuple[int, ...]
    column_meta: tuple[int, ...]
    nullable: tuple[bool, ...]
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[tuple[int, int], ...] | None
    raw: bytes


_FIXED_CODES: dict[str, tuple[int, int]] = {
    **{name: (code, 0) for name, code in INTEGER_TYPES.items()},
    "float": (T.FLOAT, 4), "double": (T.DOUBLE, 8),  # metadata: pack length
    "date": (T.DATE, 0), "year": (T.YEAR, 0), "null": (T.NULL, 0),
    **{name: (T.GEOMETRY, 4) for name in GEOMETRY_TYPES},  # metadata: bytes of the length prefix
    **{name: (T.BLOB, pack) for name, pack in (*TEXT_TYPES.items(), *BLOB_TYPES.items())},
}
_TEMPORAL = {"time": T.TIME2, "datetime": T.DATETIME2, "timestamp": T.TIMESTAMP2}  # metadata: fsp
_FIXED_BINARY_BYTES = {"inet4": 4, "inet6": 16, "uuid": 16}
_UTF8MB4_BIN = collation_id("utf8mb4", "utf8mb4_bin")


def _string_meta(real_type: int, length: int) -> int:
    """Field_string::do_save_field_metadata: the real type with bits 8-9 of the byte length folded
    into its high nibble, then the low byte of the length."""
    return ((real_type ^ ((length & 0x300) >> 4)) << 8) | (length & 0xFF)


def _set_pack(members: int) -> int:
    n = (members + 7) // 8
    return 8 if n > 4 else n


def _packed(col: ColumnDef, info: ColumnInfo, flavor: str | None, where: str) -> tuple[int, int, ColumnInfo]:
    """(binlog type code, metadata, column facts) of one declared column."""
    dt = col.data_type
    fixed = _FIXED_CODES.get(dt)
    if fixed is not None:
        return fixed[0], fixed[1], info
    if dt == "decimal":
        precision = 10 if col.precision is None else col.precision
        return T.NEWDECIMAL, (precision << 8) | (col.scale or 0), info
    if dt in _TEMPORAL:
        return _TEMPORAL[dt], col.fsp or 0, info
    if dt == "bit":
        bits = 1 if col.length is None else col.length
        return T.BIT, ((bits % 8) << 8) | (bits // 8), info  # Field_bit: bits % 8, then whole bytes
    if dt in ("varchar", "varbinary"):
        per = 1 if dt == "varbinary" else (mbmaxlen(col.charset) or 1)
        return T.VARCHAR, (col.length or 0) * per, info
    if dt in ("char", "binary"):
        per = 1 if dt == "binary" else (mbmaxlen(col.charset) or 1)
        length = 1 if col.length is None else col.length
        return T.STRING, _string_meta(T.STRING, length * per), info
    if dt in FIXED_BINARY_TYPES:
        return T.STRING, _string_meta(T.STRING, _FIXED_BINARY_BYTES[dt]), info
    if dt == "enum":
        members = len(col.enum_values or ())
        return T.STRING, _string_meta(T.ENUM, 1 if members < 256 else 2), info
    if dt == "set":
        return T.STRING, _string_meta(T.SET, _set_pack(len(col.set_values or ()))), info
    if dt == "json":
        if flavor == Flavor.MARIADB:  # MariaDB's JSON is a LONGTEXT utf8mb4_bin
            return T.BLOB, 4, ColumnInfo(**{**_info_dict(info), "collation": _UTF8MB4_BIN})
        return T.JSON, 4, info
    if dt == "vector":
        if flavor == Flavor.MARIADB:  # MariaDB's VECTOR(n) is a VARBINARY(4n) of n float32s
            dim = col.length or 0
            return T.VARCHAR, 4 * dim, ColumnInfo(**{**_info_dict(info), "collation": BINARY_COLLATION})
        return T.VECTOR, 4, info
    raise SchemaError(
        f"column `{col.name}` of {where} is declared {col.sql_type()}, a type sluice cannot lay out as a "
        "mirror column; exclude the table from the mirror, or correct the tracked schema if the type is wrong"
    )


def _info_dict(info: ColumnInfo) -> dict[str, Any]:
    return {name: getattr(info, name) for name in ColumnInfo.__slots__}


def table_map_for_schema(schema: TableSchema, flavor: str | None = None) -> SchemaTableMap:
    """The TABLE_MAP a server of ``flavor`` ("mysql", "mariadb"; None: MySQL) writes for ``schema``.

    Temporal columns are the fractional-seconds types (TIME2, DATETIME2, TIMESTAMP2) both servers
    log by default. Raises ``SchemaError`` for a declared type sluice does not model.
    """
    where = f"{schema.db}.{schema.name}"
    infos = schema.column_infos()
    packed = [_packed(col, info, flavor, where) for col, info in zip(schema.columns, infos, strict=True)]
    types = tuple(p[0] for p in packed)
    metas = tuple(p[1] for p in packed)
    columns = tuple(p[2] for p in packed)
    pk_index = [schema.index_of(name) for name in schema.primary_key]
    primary_key = tuple((i, 0) for i in pk_index if i is not None) if schema.primary_key else None
    raw = b"sluice-schema-map:" + json.dumps(
        [schema.db, schema.name, types, metas, [astuple(c) for c in columns], primary_key, flavor],
        separators=(",", ":"), ensure_ascii=False,
    ).encode("utf-8", "surrogatepass")
    return SchemaTableMap(schema.db, schema.name, len(types), types, metas,
                          tuple(c.nullable for c in schema.columns), columns, primary_key, raw)


def mirror_columns_for_schema(schema: TableSchema, flavor: str | None = None) -> tuple[MirrorColumn, ...]:
    """The mirror columns of a tracked table: ``mirror_columns`` of the TABLE_MAP it would have,
    without the implicit period columns of a system-versioned table (``TableSchema.data_columns``)."""
    if schema.system_time is not None and schema.system_time.implicit:
        schema = replace(schema, columns=schema.data_columns())
    table_map = table_map_for_schema(schema, flavor)
    return mirror_columns(table_map, table_map.columns)
