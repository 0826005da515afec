"""A table's mirror layout from the tracked schema, and typed row images from the change records.

The Spark pipeline's driver never sees TABLE_MAP events: it knows each table from the schema
history (``sluice.cdc.schema.TableSchema``) and receives row images as JSON text in sluice's
JSON-lines value encoding (DESIGN.md, "Value encoding"). ``table_map_for_schema`` packs a declared
table into what a TABLE_MAP of it would say — one binlog type code and one metadata value per
column, after the server's ``Field::binlog_type`` and ``Field::do_save_field_metadata``
(``sql/field.cc``) — so that ``mirror_columns_for_schema`` is exactly ``sluice.spark.types.
mirror_columns`` of that map. ``decode_image`` turns image text back into the values the row
decoder (``sluice.binlog.rowplan``) produced, which is what ``MirrorColumn.convert`` accepts:
DECIMAL strings to ``Decimal``, base64 to ``bytes``, SET arrays to tuples, ``{"srid", "wkb"}`` to
``Geometry``, VECTOR arrays to tuples of floats, and numbers inside JSON documents kept exact (a
number whose text is not the shortest text of a double is a ``JsonDecimal``). One decoder is
compiled per column layout and cached; the per-image loop touches only the columns that need a
conversion. ``row_change_from_record`` rebuilds a ``RowChange`` from a change-DataFrame row.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import astuple, dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa

from sluice.binlog.columns import BINARY_COLLATION, ColumnInfo
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.values.geometry import Geometry
from sluice.binlog.values.json_binary import JsonDecimal, JsonDiff, JsonDiffs
from sluice.cdc.records import RowChange
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
from sluice.errors import ProtocolError, SchemaError
from sluice.spark.types import GEOMETRY_TYPE, MirrorColumn, mirror_columns

__all__ = [
    "SchemaTableMap",
    "decode_image",
    "image_decoder",
    "mirror_columns_for_schema",
    "row_change_from_record",
    "table_map_for_schema",
]

ImageDecoder = Callable[[str | None], dict[str, Any] | None]


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
        if flavor == "mariadb":  # MariaDB's JSON is a LONGTEXT utf8mb4_bin
            return T.BLOB, 4, ColumnInfo(**{**_info_dict(info), "collation": _UTF8MB4_BIN})
        return T.JSON, 4, info
    if dt == "vector":
        if flavor == "mariadb":  # MariaDB's VECTOR(n) is a VARBINARY(4n)
            dim = col.length or 0
            return T.VARCHAR, 4 * dim, ColumnInfo(**{**_info_dict(info), "collation": BINARY_COLLATION,
                                                     "vector_dimension": None})
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
    """The mirror columns of a tracked table: ``mirror_columns`` of the TABLE_MAP it would have."""
    table_map = table_map_for_schema(schema, flavor)
    return mirror_columns(table_map, table_map.columns)


# -- JSON image -> decoded values ---------------------------------------------------------------

def _exact_number(text: str) -> float | JsonDecimal:
    """A non-integer number inside a JSON document: a double when the text is that double's own
    (shortest) text, otherwise a DECIMAL written with its exact digits."""
    value = float(text)
    if repr(value) == text:
        return value
    return JsonDecimal(text)


_loads = json.loads
_loads_exact = json.JSONDecoder(parse_float=_exact_number).decode


def _decimal(v: Any) -> Decimal:
    if v.__class__ is str:
        return Decimal(v)
    raise TypeError("not a string")


def _binary(v: Any) -> bytes:
    if v.__class__ is str:
        return binascii.a2b_base64(v, strict_mode=True)
    raise TypeError("not a string")


def _number(v: Any) -> float:
    cls = v.__class__
    if cls is float:
        return v
    if cls is int or cls is JsonDecimal:
        return float(v)
    raise TypeError("not a number")


def _members(v: Any) -> tuple[str, ...]:
    if v.__class__ is list and all(m.__class__ is str for m in v):
        return tuple(v)
    raise TypeError("not an array of strings")


def _vector(v: Any) -> tuple[float, ...]:
    if v.__class__ is list:
        return tuple(_number(x) for x in v)
    raise TypeError("not an array")


def _geometry(v: Any) -> Geometry:
    if v.__class__ is dict and v.keys() == {"srid", "wkb"} and v["srid"].__class__ is int:
        return Geometry(v["srid"], _binary(v["wkb"]))
    raise TypeError("not a geometry object")


_EXPECTED: dict[Callable[[Any], Any], str] = {
    _decimal: "a string with the exact digits",
    _binary: "base64 text",
    _number: "a number",
    _members: "an array of member strings",
    _vector: "an array of numbers",
    _geometry: 'an object {"srid": n, "wkb": "<base64>"}',
}
_VALUE_ERRORS = (TypeError, ValueError, ArithmeticError, AttributeError, KeyError)


def _value_decoder(col: MirrorColumn) -> Callable[[Any], Any] | None:
    """The function from a column's JSON value to its decoded value; None when they are the same
    (integers, BIT, YEAR, text, ENUM, temporal text, JSON documents)."""
    mysql_type, arrow_type = col.mysql_type, col.arrow_type
    if mysql_type.startswith("decimal("):
        return _decimal
    if mysql_type in ("float", "double"):
        return _number
    if mysql_type.startswith("vector"):
        return _vector
    if arrow_type == GEOMETRY_TYPE:
        return _geometry
    if pa.types.is_binary(arrow_type):
        return _binary
    if pa.types.is_list(arrow_type) and pa.types.is_string(arrow_type.value_type):
        return _members
    return None


def _compile(cols: tuple[MirrorColumn, ...]) -> ImageDecoder:
    names = frozenset(c.name for c in cols)
    by_lower = {c.name.lower(): c.name for c in cols}
    steps = tuple((c.name, f, c) for c in cols if (f := _value_decoder(c)) is not None)
    loads = _loads_exact if any(c.mysql_type == "json" for c in cols) else _loads

    def decode(text: str | None) -> dict[str, Any] | None:
        if text is None:
            return None
        try:
            image = loads(text)
        except (ValueError, TypeError) as exc:
            raise ProtocolError(
                f"a row image is not JSON ({exc}): found {text!r:.120}; row images must be JSON objects in "
                "sluice's JSON-lines encoding — check that the column holds the change record's before/after"
            ) from exc
        if image.__class__ is not dict:
            if image is None:
                return None
            raise ProtocolError(
                f"a row image must be a JSON object of column values, found {text!r:.120}; check that the "
                "column holds the change record's before/after"
            )
        if not image.keys() <= names:
            image = _rekey(image, names, by_lower)
        for name, f, col in steps:
            v = image.get(name)
            if v is not None:
                try:
                    image[name] = f(v)
                except _VALUE_ERRORS as exc:
                    raise SchemaError(
                        f"column {name!r} ({col.mysql_type}) of a row image holds {v!r:.120}, but its JSON-lines "
                        f"encoding is {_EXPECTED[f]} ({exc}); the schema sluice holds for the table disagrees "
                        "with the change records — re-read the table's schema"
                    ) from exc
        return image

    return decode


def _rekey(image: dict[str, Any], names: frozenset[str], by_lower: dict[str, str]) -> dict[str, Any]:
    """Keep the image's columns that are in the layout, matching names without case as the server
    does (a column renamed only in case); drop the others (columns dropped since)."""
    out: dict[str, Any] = {}
    for key, value in image.items():
        if key in names:
            out[key] = value
        else:
            name = by_lower.get(key.lower())
            if name is not None and name not in image:
                out[name] = value
    return out


_MAX_CACHED = 1024
_by_identity: dict[int, tuple[tuple[MirrorColumn, ...], ImageDecoder]] = {}
_by_value: dict[tuple[MirrorColumn, ...], ImageDecoder] = {}


def image_decoder(columns: Sequence[MirrorColumn]) -> ImageDecoder:
    """The compiled ``decode_image`` of one column layout (cached): hoist it out of a loop."""
    if columns.__class__ is tuple:
        hit = _by_identity.get(id(columns))
        if hit is not None and hit[0] is columns:
            return hit[1]
    key = tuple(columns)
    decoder = _by_value.get(key)
    if decoder is None:
        if len(_by_value) >= _MAX_CACHED:
            _by_value.clear()
        decoder = _by_value[key] = _compile(key)
    if columns.__class__ is tuple:
        if len(_by_identity) >= _MAX_CACHED:
            _by_identity.clear()
        _by_identity[id(columns)] = (key, decoder)  # holds the tuple: its id stays its own
    return decoder


def decode_image(columns: Sequence[MirrorColumn], text: str | None) -> dict[str, Any] | None:
    """A row image's JSON text -> ``{column: decoded value}``, what ``MirrorColumn.convert`` takes.

    Columns of the image that are not in ``columns`` (dropped since) are left out; columns missing
    from the image (minimal images) stay missing; SQL NULL stays None. ``ProtocolError`` when the
    text is not a JSON object, ``SchemaError`` naming the column when a value does not have its
    type's encoding.
    """
    return image_decoder(columns)(text)


# -- change record -> RowChange -----------------------------------------------------------------

_OPS = frozenset({"insert", "update", "delete"})
_MISSING = object()


def _field(record: Any, name: str, default: Any = _MISSING) -> Any:
    """``record[name]`` of a Mapping or a pyspark ``Row`` (which raises ValueError when absent)."""
    try:
        return record[name]
    except (KeyError, ValueError, IndexError):
        if default is _MISSING:
            raise ProtocolError(
                f"a change record has no field {name!r} (fields: {_keys(record)}); give the rows of the change "
                "DataFrame (op, db, table, before, after, pk, file, pos, row, gtid, ts)"
            ) from None
        return default


def _keys(record: Any) -> str:
    keys = record.keys() if hasattr(record, "keys") else getattr(record, "__fields__", ())
    return ", ".join(map(str, keys))


def _seconds(ts: Any) -> int:
    """The record's ``ts`` as epoch seconds: an int, or a datetime (a naive one is local time, as
    pyspark returns Spark timestamps)."""
    if isinstance(ts, datetime):
        return int(ts.timestamp())
    if isinstance(ts, int) and not isinstance(ts, bool):
        return ts
    if isinstance(ts, float):
        return int(ts)
    raise TypeError(f"ts must be a datetime or epoch seconds, found {ts!r}")


def _json_diffs(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    doc = _loads_exact(value) if isinstance(value, str) else value
    if not doc:
        return None
    return {
        column: JsonDiffs(JsonDiff(d["op"], d["path"], d.get("value")) for d in diffs)
        for column, diffs in doc.items()
    }


def row_change_from_record(columns: Sequence[MirrorColumn], record: Mapping[str, Any]) -> RowChange:
    """A ``RowChange`` with decoded images from one row of the change DataFrame (a Mapping or a
    pyspark ``Row``: op, db, table, before and after as JSON text, pk, file, pos, row, gtid, ts,
    optionally json_diffs as JSON text)."""
    decode = image_decoder(columns)
    op = _field(record, "op")
    db, table = _field(record, "db"), _field(record, "table")
    file, pos, row = _field(record, "file"), _field(record, "pos"), _field(record, "row")
    where = f"{db}.{table} at {file}:{pos} row {row}"
    if op not in _OPS:
        raise ProtocolError(
            f"the change record of {where} has op {op!r}, expected insert, update or delete; leave DDL records "
            "out of mirror batches"
        )
    try:
        before = decode(_field(record, "before", None))
        after = decode(_field(record, "after", None))
        pk_names = _field(record, "pk", None) or ()
        if isinstance(pk_names, str):
            raise TypeError(f"pk must be a list of column names, found {pk_names!r}")
        pk = tuple(pk_names)
        ts = _seconds(_field(record, "ts"))
        diffs = _json_diffs(_field(record, "json_diffs", None))
        return RowChange(op, db, table, before, after, pk, file, int(pos), int(row),
                         _field(record, "gtid", None), ts, diffs)
    except (ProtocolError, SchemaError) as exc:
        raise type(exc)(f"change record of {where}: {exc}") from exc
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ProtocolError(
            f"the change record of {where} does not follow the change-record contract ({exc}); give the rows "
            "of the change DataFrame as sluice writes them"
        ) from exc
