"""MySQL column -> Arrow / Spark type, and decoded value -> Arrow value, for the Delta mirror.

What sluice knows about a table when it decodes it — the TABLE_MAP's type codes and metadata
(``sluice.binlog.events.TableMapEvent``) plus one ``ColumnInfo`` per column with its name,
signedness, collation and ENUM / SET members — fixes one :class:`MirrorColumn` per column: a
readable MySQL type, the Arrow type of the mirror, the Spark SQL type Spark reads it as, and a
converter from the value the row decoder produced (``sluice.binlog.rowplan``) to a value pyarrow
accepts for that Arrow type. The choices follow the decoder exactly (a TEXT column whose collation
is unknown decodes to bytes, so it is binary here too), widen unsigned integers to the next signed
width, keep DECIMALs exact, and turn temporal values that are not real instants (zero and partial
dates) into NULL; docs/spark-types.md has the table. Converters are module-level functions, so a
``MirrorColumn`` pickles for Spark executors. ``to_arrow_table`` builds one column list per column
and one ``pa.array`` call per column, never per row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import pyarrow as pa

from sluice.binlog.column_info import BINARY_COLLATION, ColumnInfo, string_real_type
from sluice.binlog.constants import ColumnType
from sluice.binlog.rowplan import ABSENT
from sluice.binlog.values.geometry import Geometry
from sluice.cdc.jsonl import json_text
from sluice.errors import SchemaError

__all__ = [
    "GEOMETRY_TYPE",
    "MirrorColumn",
    "column_array",
    "columns_to_add",
    "mirror_columns",
    "mirror_schema",
    "spark_ddl",
    "to_arrow_table",
]

#: Arrow type of a GEOMETRY column: the SRID and the well-known binary, as in the change record.
GEOMETRY_TYPE = pa.struct([pa.field("srid", pa.int64()), pa.field("wkb", pa.binary())])

_MAX_DECIMAL128 = 38


@dataclass(frozen=True, slots=True)
class MirrorColumn:
    """One column of a table's Delta mirror."""

    name: str
    mysql_type: str  # readable, e.g. "decimal(15,5)", "int unsigned", "datetime(6)"
    arrow_type: pa.DataType
    spark_type: str  # Spark SQL type, e.g. "decimal(15,5)", "timestamp_ntz", "array<string>"
    convert: Callable[[Any], Any]  # decoded sluice value -> value pyarrow accepts (None stays None)


# -- converters (module level: picklable) -------------------------------------------------------

def _identity(v: Any) -> Any:
    return None if v is ABSENT else v


def _to_date(v: Any) -> date | None:
    """``YYYY-MM-DD`` -> date; zero, partial and other non-calendar dates -> None."""
    if v is None or v is ABSENT:
        return None
    try:
        return date.fromisoformat(v)
    except ValueError:
        return None


def _to_datetime(v: Any) -> datetime | None:
    """DATETIME text (naive) or TIMESTAMP text (``...Z``, UTC) -> datetime; zero values -> None."""
    if v is None or v is ABSENT:
        return None
    try:
        return datetime.fromisoformat(v)
    except ValueError:
        return None


def _decimal_text(v: Any) -> str | None:
    """A DECIMAL wider than 38 digits: its exact text, all D fractional digits kept."""
    if v is None or v is ABSENT:
        return None
    return format(v, "f")


def _geometry(v: Any) -> dict[str, Any] | None:
    if v is None or v is ABSENT:
        return None
    if isinstance(v, Geometry):
        return {"srid": v.srid, "wkb": v.wkb}
    raise TypeError(f"expected a Geometry, found {type(v).__name__}")


# -- the mapping --------------------------------------------------------------------------------

_INTS: dict[int, tuple[str, pa.DataType, str, pa.DataType, str]] = {
    # type code: (name, signed arrow, signed spark, unsigned arrow, unsigned spark)
    ColumnType.TINY: ("tinyint", pa.int8(), "tinyint", pa.int16(), "smallint"),
    ColumnType.SHORT: ("smallint", pa.int16(), "smallint", pa.int32(), "int"),
    ColumnType.INT24: ("mediumint", pa.int32(), "int", pa.int32(), "int"),
    ColumnType.LONG: ("int", pa.int32(), "int", pa.int64(), "bigint"),
    ColumnType.LONGLONG: ("bigint", pa.int64(), "bigint", pa.decimal128(20, 0), "decimal(20,0)"),
}

_BLOBS = {
    ColumnType.TINY_BLOB: "tiny",
    ColumnType.BLOB: "",
    ColumnType.MEDIUM_BLOB: "medium",
    ColumnType.LONG_BLOB: "long",
}
_BLOB_BY_PREFIX = {1: "tiny", 2: "", 3: "medium", 4: "long"}

_GEOMETRY_NAMES = ("geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
                   "multipolygon", "geometrycollection")


def _col(name: str, mysql_type: str, arrow_type: pa.DataType, spark_type: str,
         convert: Callable[[Any], Any] = _identity) -> MirrorColumn:
    return MirrorColumn(name, mysql_type, arrow_type, spark_type, convert)


def _is_text(info: ColumnInfo, *, default_text: bool) -> bool:
    """Whether the row decoder yields ``str`` (True) or ``bytes`` for a character column."""
    if info.collation is None:
        return default_text
    return info.collation != BINARY_COLLATION


def _quote_members(members: tuple[str, ...]) -> str:
    return ",".join("'" + m.replace("'", "''") + "'" for m in members)


def _column(index: int, t: int, meta: int, info: ColumnInfo, where: str) -> MirrorColumn:
    name = info.name
    if not name:
        raise SchemaError(
            f"column #{index} of {where} has no name: the mirror needs every column's name. Give sluice "
            "the table's schema (binlog_row_metadata=FULL on the server, or its CREATE TABLE)"
        )
    if t in _INTS:
        base, s_arrow, s_spark, u_arrow, u_spark = _INTS[t]
        if info.unsigned:
            return _col(name, f"{base} unsigned", u_arrow, u_spark)
        return _col(name, base, s_arrow, s_spark)
    if t == ColumnType.FLOAT:
        return _col(name, "float", pa.float32(), "float")
    if t == ColumnType.DOUBLE:
        return _col(name, "double", pa.float64(), "double")
    if t == ColumnType.NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        mysql_type = f"decimal({precision},{scale})"
        if precision <= _MAX_DECIMAL128:
            return _col(name, mysql_type, pa.decimal128(precision, scale), mysql_type)
        return _col(name, mysql_type, pa.string(), "string", _decimal_text)
    if t in (ColumnType.DATE, ColumnType.NEWDATE):
        return _col(name, "date", pa.date32(), "date", _to_date)
    if t in (ColumnType.DATETIME, ColumnType.DATETIME2):
        fsp = meta if t == ColumnType.DATETIME2 else 0
        mysql_type = f"datetime({fsp})" if fsp else "datetime"
        return _col(name, mysql_type, pa.timestamp("us"), "timestamp_ntz", _to_datetime)
    if t in (ColumnType.TIMESTAMP, ColumnType.TIMESTAMP2):
        fsp = meta if t == ColumnType.TIMESTAMP2 else 0
        mysql_type = f"timestamp({fsp})" if fsp else "timestamp"
        return _col(name, mysql_type, pa.timestamp("us", tz="UTC"), "timestamp", _to_datetime)
    if t in (ColumnType.TIME, ColumnType.TIME2):
        fsp = meta if t == ColumnType.TIME2 else 0
        return _col(name, f"time({fsp})" if fsp else "time", pa.string(), "string")
    if t == ColumnType.YEAR:
        return _col(name, "year", pa.int16(), "smallint")
    if t == ColumnType.BIT:
        bits = (meta & 0xFF) * 8 + (meta >> 8)
        if bits >= 64:
            return _col(name, f"bit({bits})", pa.decimal128(20, 0), "decimal(20,0)")
        return _col(name, f"bit({bits})", pa.int64(), "bigint")
    if t in (ColumnType.VARCHAR, ColumnType.VAR_STRING):
        if info.vector_dimension is not None:  # MariaDB's VECTOR(n), as the row decoder takes it
            return _col(name, f"vector({info.vector_dimension})", pa.list_(pa.float32()), "array<float>")
        if _is_text(info, default_text=True):
            return _col(name, "varchar", pa.string(), "string")
        return _col(name, f"varbinary({meta})", pa.binary(), "binary")
    if t in (ColumnType.STRING, ColumnType.ENUM, ColumnType.SET):
        real, length = string_real_type(t, meta)
        if real == ColumnType.ENUM:
            if info.enum_values is None:
                return _col(name, "enum (members unknown: index)", pa.int32(), "int")
            return _col(name, f"enum({_quote_members(info.enum_values)})", pa.string(), "string")
        if real == ColumnType.SET:
            if info.set_values is None:
                if length >= 8:
                    return _col(name, "set (members unknown: bitmask)", pa.decimal128(20, 0), "decimal(20,0)")
                return _col(name, "set (members unknown: bitmask)", pa.int64(), "bigint")
            return _col(name, f"set({_quote_members(info.set_values)})", pa.list_(pa.string()), "array<string>")
        if info.mariadb_type is not None:  # MariaDB's UUID, INET4, INET6: the text the server prints
            return _col(name, info.mariadb_type, pa.string(), "string")
        if _is_text(info, default_text=True):
            return _col(name, "char", pa.string(), "string")
        return _col(name, f"binary({length})", pa.binary(), "binary")
    if t in _BLOBS:
        size = _BLOB_BY_PREFIX.get(meta, _BLOBS[ColumnType(t)])
        if _is_text(info, default_text=False):
            return _col(name, f"{size}text", pa.string(), "string")
        return _col(name, f"{size}blob", pa.binary(), "binary")
    if t == ColumnType.JSON:
        return _col(name, "json", pa.string(), "string", json_text)
    if t == ColumnType.GEOMETRY:
        kind = info.geometry_type
        geo = _GEOMETRY_NAMES[kind] if kind is not None and 0 <= kind < len(_GEOMETRY_NAMES) else "geometry"
        return _col(name, geo, GEOMETRY_TYPE, "struct<srid:bigint,wkb:binary>", _geometry)
    if t == ColumnType.VECTOR:
        dim = f"({info.vector_dimension})" if info.vector_dimension else ""
        return _col(name, f"vector{dim}", pa.list_(pa.float32()), "array<float>")
    if t == ColumnType.NULL:
        return _col(name, "null", pa.string(), "string")
    try:
        type_name = ColumnType(t).name
    except ValueError:
        type_name = f"type code {t}"
    raise SchemaError(
        f"column {name!r} of {where} has the column type {type_name}, which has no mirror type; "
        "exclude the table from the mirror or ALTER the column to a current type"
    )


def mirror_columns(table_map: Any, columns: tuple[ColumnInfo, ...]) -> tuple[MirrorColumn, ...]:
    """The mirror columns of a table from its TABLE_MAP and its column facts (names filled in).

    ``table_map`` needs ``column_types`` and ``column_meta`` (and ``schema`` / ``table`` for
    messages); ``columns`` has one ``ColumnInfo`` per column. Raises ``SchemaError`` when a column
    has no name, the counts disagree, or a column type has no mirror type.
    """
    types = tuple(table_map.column_types)
    metas = tuple(table_map.column_meta)
    where = f"{getattr(table_map, 'schema', '?')}.{getattr(table_map, 'table', '?')}"
    if len(columns) != len(types) or len(metas) != len(types):
        raise SchemaError(
            f"{where}: the TABLE_MAP has {len(types)} columns ({len(metas)} metadata entries) but "
            f"{len(columns)} column descriptions were given; the schema sluice holds for the table does "
            "not match the binlog — re-read the table's schema"
        )
    out = tuple(_column(i, t, m, c, where) for i, (t, m, c) in enumerate(zip(types, metas, columns, strict=True)))
    seen: set[str] = set()
    for col in out:
        folded = col.name.lower()
        if folded in seen:
            raise SchemaError(f"{where}: two columns are named {col.name!r} (names compare without case)")
        seen.add(folded)
    return out


def mirror_schema(cols: Sequence[MirrorColumn]) -> pa.Schema:
    """The Arrow schema of the mirror: one nullable field per column, in table order."""
    return pa.schema([pa.field(c.name, c.arrow_type, nullable=True) for c in cols])


def columns_to_add(table: Any, cols: Sequence[MirrorColumn],
                   conflict: Callable[[MirrorColumn, str, str], Exception]) -> list[MirrorColumn]:
    """The columns of ``cols`` that the Delta table ``table`` (a ``DeltaTable``) lacks, by name. A
    column it holds under another Delta type raises ``conflict(column, its type there, the type
    wanted)``: Delta cannot change a column's type in place."""
    from deltalake import Schema as DeltaSchema

    have = {f["name"]: f["type"] for f in json.loads(table.schema().to_json())["fields"]}
    wanted = json.loads(DeltaSchema.from_arrow(mirror_schema(cols)).to_json())["fields"]
    add = []
    for col, field in zip(cols, wanted, strict=True):
        if col.name not in have:
            add.append(col)
        elif have[col.name] != field["type"]:
            raise conflict(col, have[col.name], field["type"])
    return add


def spark_ddl(cols: Sequence[MirrorColumn]) -> str:
    """The Spark DDL schema string of the mirror, e.g. ``"`id` int, `amount` decimal(10,2)"``."""
    return ", ".join("`" + c.name.replace("`", "``") + "` " + c.spark_type for c in cols)


def to_arrow_table(cols: Sequence[MirrorColumn], rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """An Arrow table of after-images (dicts by column name) in the mirror's schema.

    A column missing from a row (a minimal image) is NULL; keys that are not mirror columns are
    ignored. A value that does not fit its column's type raises ``SchemaError`` naming the column.
    """
    arrays = []
    for c in cols:
        name, convert = c.name, c.convert
        values = [row.get(name) for row in rows]
        if convert is not _identity:
            values = [None if v is None else convert(v) for v in values]
        arrays.append(column_array(c, values))
    return pa.Table.from_arrays(arrays, schema=mirror_schema(cols))


def column_array(col: MirrorColumn, values: list[Any]) -> pa.Array:
    """``pa.array`` of already converted values of one column; ``SchemaError`` when one does not fit."""
    try:
        return pa.array(values, type=col.arrow_type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        bad = _first_bad(col, values)
        raise SchemaError(
            f"column {col.name!r} ({col.mysql_type}): the value {bad!r} does not fit the mirror type "
            f"{col.spark_type} ({exc}); the schema sluice holds for the table disagrees with the rows — "
            "re-read the table's schema"
        ) from exc


def _first_bad(col: MirrorColumn, values: list[Any]) -> Any:
    for v in values:
        try:
            pa.array([v], type=col.arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return v
    return None
