"""Whether a tracked table definition fits a TABLE_MAP event.

A TABLE_MAP carries one type code and a few metadata bits per column (``TableMapEvent``); a
declared type (``ColumnDef``) says much more. This module owns the check between the two: which
binlog type codes a declared type is written as (``expected_binlog_type``, after the server's
``Field::binlog_type`` / ``real_type``) and ``check_table_map``: column count, type codes, DECIMAL
precision and scale, CHAR/VARCHAR byte lengths, ENUM/SET pack lengths, BIT widths, fractional
seconds, BLOB length-prefix widths.
"""

from __future__ import annotations

from sluice.binlog.constants import ColumnType as T
from sluice.binlog.decoders.table_map import string_meta
from sluice.binlog.events import TableMapEvent
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.schema.typemap import (
    BLOB_TYPES,
    FIXED_BINARY_TYPES,
    GEOMETRY_TYPES,
    INTEGER_TYPES,
    TEXT_TYPES,
    mbmaxlen,
    type_name,
)
from sluice.dsn import Flavor

__all__ = ["check_column", "check_table_map", "expected_binlog_type"]

_FIXED: dict[str, tuple[int, ...]] = {
    **{name: (code,) for name, code in INTEGER_TYPES.items()},
    "decimal": (T.NEWDECIMAL,), "float": (T.FLOAT,), "double": (T.DOUBLE,), "bit": (T.BIT,),
    "date": (T.DATE, T.NEWDATE), "time": (T.TIME2, T.TIME), "datetime": (T.DATETIME2, T.DATETIME),
    "timestamp": (T.TIMESTAMP2, T.TIMESTAMP), "year": (T.YEAR,),
    "char": (T.STRING,), "binary": (T.STRING,), "enum": (T.STRING,), "set": (T.STRING,),
    "varchar": (T.VARCHAR, T.VAR_STRING), "varbinary": (T.VARCHAR, T.VAR_STRING),
    **{name: (T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB) for name in (*TEXT_TYPES, *BLOB_TYPES)},
    **{name: (T.GEOMETRY,) for name in GEOMETRY_TYPES},
    **{name: (T.STRING,) for name in FIXED_BINARY_TYPES},
}
_REAL_OF_STRING = {"char": T.STRING, "binary": T.STRING, "enum": T.ENUM, "set": T.SET,
                   **{name: T.STRING for name in FIXED_BINARY_TYPES}}


def expected_binlog_type(col: ColumnDef, flavor: str | None = None) -> tuple[int, ...]:
    """The ``ColumnType`` codes a TABLE_MAP may carry for a column of this declared type.

    CHAR, BINARY, ENUM and SET are all written as STRING (the real type is in the metadata);
    MySQL writes JSON as JSON, MariaDB's JSON is a LONGTEXT and so a BLOB; the temporal types
    accept the pre-5.6 codes too. An unknown type name gives ``()``.
    """
    if col.data_type == "json":
        if flavor == Flavor.MYSQL:
            return (T.JSON,)
        if flavor == Flavor.MARIADB:
            return (T.BLOB,)
        return (T.JSON, T.BLOB)
    if col.data_type == "vector":
        return (T.VECTOR,) if flavor == Flavor.MYSQL else (T.VECTOR, T.VARCHAR, T.VAR_STRING)
    return _FIXED.get(col.data_type, ())


def _set_pack(members: int) -> int:
    n = (members + 7) // 8
    return 8 if n > 4 else n


def _describe(col: ColumnDef) -> str:
    return f"`{col.name}` {col.sql_type()}"


def check_column(col: ColumnDef, code: int, meta: int, flavor: str | None = None) -> str | None:
    """None when a TABLE_MAP column (type code + metadata) can be this declared column."""
    expected = expected_binlog_type(col, flavor)
    if not expected:
        return None  # a type sluice does not model: nothing to check it against
    if code not in expected:
        names = "/".join(type_name(c) for c in expected)
        return f"{_describe(col)} is logged as {names}, but the TABLE_MAP has {type_name(code)}"
    dt = col.data_type
    if code == T.STRING:
        real, length = string_meta(meta)
        want_real = _REAL_OF_STRING.get(dt, T.STRING)
        if real != want_real:
            return (f"{_describe(col)} is a STRING column of real type {type_name(want_real)}, but the "
                    f"TABLE_MAP metadata says {type_name(real)}")
        if dt == "enum" and col.enum_values is not None:
            want = 1 if len(col.enum_values) < 256 else 2
            if length != want:
                return f"{_describe(col)} has {len(col.enum_values)} members ({want} byte(s)), TABLE_MAP says {length}"
        elif dt == "set" and col.set_values is not None:
            want = _set_pack(len(col.set_values))
            if length != want:
                return f"{_describe(col)} has {len(col.set_values)} members ({want} byte(s)), TABLE_MAP says {length}"
        elif dt in ("char", "binary") and col.length is not None:
            per = 1 if dt == "binary" else mbmaxlen(col.charset)
            if per is not None and length != col.length * per:
                return (f"{_describe(col)} holds {col.length * per} bytes, but the TABLE_MAP says "
                        f"{length} bytes")
    elif code in (T.VARCHAR, T.VAR_STRING) and dt in ("varchar", "varbinary") and col.length is not None:
        per = 1 if dt == "varbinary" else mbmaxlen(col.charset)
        if per is not None and meta != col.length * per:
            return f"{_describe(col)} holds {col.length * per} bytes, but the TABLE_MAP says {meta} bytes"
    elif code == T.NEWDECIMAL and col.precision is not None:
        precision, scale = meta >> 8, meta & 0xFF
        if (precision, scale) != (col.precision, col.scale or 0):
            return f"{_describe(col)} but the TABLE_MAP says decimal({precision},{scale})"
    elif code == T.BIT and col.length is not None:
        bits = (meta & 0xFF) * 8 + (meta >> 8)
        if bits != col.length:
            return f"{_describe(col)} but the TABLE_MAP says bit({bits})"
    elif code in (T.TIME2, T.DATETIME2, T.TIMESTAMP2) and col.fsp is not None and meta != col.fsp:
        return f"{_describe(col)} but the TABLE_MAP says fractional precision {meta}"
    elif code == T.BLOB:
        pack = TEXT_TYPES.get(dt) or BLOB_TYPES.get(dt) or (4 if dt == "json" else None)
        if pack is not None and meta != pack:
            return f"{_describe(col)} has a {pack}-byte length prefix, but the TABLE_MAP says {meta}"
    return None


def check_table_map(schema: TableSchema, table_map: TableMapEvent, *, flavor: str | None = None) -> str | None:
    """None when ``schema`` can describe the rows of ``table_map``; otherwise one line saying the
    first disagreement (column count, a column's type code, DECIMAL precision/scale, CHAR/VARCHAR
    length in bytes, ENUM/SET pack length, BIT width, fractional seconds, BLOB prefix width)."""
    count = table_map.column_count
    if len(schema.columns) != count:
        return f"the tracked definition has {len(schema.columns)} columns, the TABLE_MAP has {count}"
    types, metas = table_map.column_types, table_map.column_meta
    for i, col in enumerate(schema.columns):
        problem = check_column(col, types[i], metas[i], flavor)
        if problem is not None:
            return f"column #{i} {problem}"
    return None
