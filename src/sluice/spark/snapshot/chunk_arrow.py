"""Snapshot chunks as typed Arrow tables of a table's Delta mirror, built column by column.

A chunk's ``SELECT`` arrives as one binary array per column (``sluice.spark.snapshot.text_rows``: the
bytes of each text value, null for SQL NULL); ``chunk_table`` turns them straight into the
mirror's Arrow table (``sluice.lake.types.table_layout.mirror_columns_for_schema``), holding exactly the values
the binlog path writes for the same rows: each value's text (``texts``) goes through its column's
text converter (``sluice.cdc.textvalues``) and then the mirror column's converter
(``sluice.lake.types.mirror_columns``). Common simple types skip the per-value Python: character text is cast
to the Arrow string (UTF-8 checked), binary strings are the bytes sent, integers, DECIMALs of up to
38 digits, DOUBLEs and FLOATs are parsed by Arrow's cast from the text, and DATE, DATETIME,
TIMESTAMP and SET texts take the binlog path's column-wise conversions of the same texts
(``sluice.lake.types.read_plans``), and MySQL's JSON documents are written again as sluice's JSON
text by the compiled core (``_jsontext.pxi``); all give the same values for every text those types print
(tests/unit/spark/snapshot/test_chunk_arrow.py compares both ways); a text the cast rejects falls
back to the per-value path, which says which value is wrong. ``key_values`` gives the decoded key of
each row for reconciliation.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from decimal import InvalidOperation
from ipaddress import AddressValueError
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sluice.binlog import rowplan
from sluice.cdc.jsonl import json_text
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.schema.typemap import BINARY_TYPES, INTEGER_TYPES, TEXT_TYPES
from sluice.cdc.table_read.chunks import key_columns
from sluice.cdc.textvalues import text_converter
from sluice.errors import SchemaError
from sluice.lake.types.mirror_columns import MirrorColumn, column_array, mirror_schema
from sluice.lake.types.read_plans import column_plans, read_plan
from sluice.lake.types.typed_images import string_array

__all__ = ["ColumnBuilder", "chunk_table", "column_builders", "key_values", "text_array", "texts"]

#: One column's values as the server sent them (a ``pa.binary()`` array, null for SQL NULL; see
#: ``sluice.spark.snapshot.text_rows``) -> the column's array in the mirror.
ColumnBuilder = Callable[[pa.Array], pa.Array]

_VALUE_ERRORS = (ValueError, TypeError, ArithmeticError, InvalidOperation, AddressValueError, struct.error,
                 OverflowError)
# Types whose text is the mirror's string as it is (no converter on either side).
_STRING_TYPES = frozenset({"char", "varchar", "time", "enum", *TEXT_TYPES})


def texts(raw: pa.Array) -> list[str | None]:
    """The values of a binary column as the text ``sluice.wire.resultset`` decodes (UTF-8, other
    bytes kept as surrogate escapes)."""
    try:
        return raw.cast(pa.string()).to_pylist()
    except pa.ArrowInvalid:  # not UTF-8
        return [None if b is None else b.decode("utf-8", "surrogateescape") for b in raw.to_pylist()]


def text_array(values: Sequence[str | None]) -> pa.Array:
    """The binary column the server sends for ``values`` (the inverse of ``texts``)."""
    return pa.array([None if v is None else v.encode("utf-8", "surrogateescape") for v in values], pa.binary())


def _per_value(schema: TableSchema, column: ColumnDef, mirror: MirrorColumn,
               convert: Callable[[str], Any] | None) -> ColumnBuilder:
    to_mirror = mirror.convert

    def build(raw: pa.Array) -> pa.Array:
        values: list[Any] = texts(raw)
        if convert is not None:
            try:
                values = [None if t is None else convert(t) for t in values]
            except _VALUE_ERRORS:
                raise _bad_text(schema, column, convert, values) from None
        return column_array(mirror, [None if v is None else to_mirror(v) for v in values])

    return build


def _bad_text(schema: TableSchema, column: ColumnDef, convert: Callable[[str], Any],
              values: Sequence[str | None]) -> SchemaError:
    for text in values:
        if text is None:
            continue
        try:
            convert(text)
        except _VALUE_ERRORS as exc:
            return SchemaError(
                f"{schema.db}.{schema.name}, column `{column.name}` ({column.sql_type()}): the server sent "
                f"{text!r:.120}, which is not a value of that type ({exc}); the schema sluice read does not "
                "match the table — read it again"
            )
    return SchemaError(f"{schema.db}.{schema.name}, column `{column.name}`: a value could not be converted")


def _cast(arrow_type: pa.DataType, fallback: ColumnBuilder) -> ColumnBuilder:
    def build(raw: pa.Array) -> pa.Array:
        try:
            return raw.cast(pa.string()).cast(arrow_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return fallback(raw)  # the per-value path: the same values, or an error naming the text

    return build


def _raw(raw: pa.Array) -> pa.Array:
    return raw


def _planned(finish: Callable[[pa.Array], pa.Array | None], fallback: ColumnBuilder, *,
             utc: bool = False) -> ColumnBuilder:
    """The texts through a column-wise conversion of the binlog path's text of the same values
    (``sluice.lake.types.read_plans``); ``utc``: a TIMESTAMP printed in +00:00, first written as the
    decoder writes it (``YYYY-MM-DDTHH:MM:SS[.f]Z``, the zero timestamp as printed)."""
    def build(raw: pa.Array) -> pa.Array:
        try:
            values = raw.cast(pa.string())
            if utc:
                zone = pc.binary_join_element_wise(pc.utf8_replace_slice(values, 10, 11, "T"), "Z", "")
                values = pc.if_else(pc.starts_with(values, "0000-00-00"), values, zone)
            done = finish(values)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            done = None
        return fallback(raw) if done is None else done  # else the same values, or an error naming the text

    return build


def _json_documents(fallback: ColumnBuilder) -> ColumnBuilder:
    """MySQL's printed JSON documents as sluice's JSON text, written by the compiled core
    (``json_texts``); the per-value path where it is not sure of a document, or is not built."""
    def build(raw: pa.Array) -> pa.Array:
        core = rowplan.core()
        if core is None or raw.type != pa.binary():
            return fallback(raw)
        valid = pc.is_valid(raw).to_numpy(zero_copy_only=False).astype(np.uint8).tobytes()
        _, offsets, data = raw.buffers()
        written = core.json_texts(data, offsets, raw.offset, len(raw), valid)
        return fallback(raw) if written is None else string_array(len(raw), *written)

    return build


def _float32(fallback: ColumnBuilder) -> ColumnBuilder:
    """A FLOAT selected as a DOUBLE's text, rounded to float32 as the text converter does."""
    def build(raw: pa.Array) -> pa.Array:
        try:
            wide = raw.cast(pa.string()).cast(pa.float64())
            narrow = wide.cast(pa.float32())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return fallback(raw)
        if pc.any(pc.and_(pc.is_finite(wide), pc.is_inf(narrow))).as_py():
            return fallback(raw)  # past float32: the converter's error
        return narrow

    return build


def _builder(schema: TableSchema, column: ColumnDef, mirror: MirrorColumn, flavor: str | None) -> ColumnBuilder:
    convert = text_converter(column, flavor)
    slow = _per_value(schema, column, mirror, convert)
    dt, at = column.data_type, mirror.arrow_type
    if convert is None and dt in _STRING_TYPES and at == pa.string():
        return _cast(at, slow)  # UTF-8 checked by Arrow
    if dt in BINARY_TYPES and at == pa.binary():
        return _raw  # the converter's bytes are the bytes sent
    if (dt in INTEGER_TYPES or dt == "year") and (pa.types.is_integer(at) or at == pa.decimal128(20, 0)):
        return _cast(at, slow)
    if dt == "decimal" and pa.types.is_decimal128(at):
        return _cast(at, slow)
    if dt == "double" and at == pa.float64():
        return _cast(at, slow)
    if dt == "float" and at == pa.float32():
        return _float32(slow)
    if (dt in ("date", "datetime") and convert is None) or dt == "timestamp":
        plan = read_plan(mirror)
        if plan is not None and plan[0] == pa.string():
            return _planned(plan[1], slow, utc=dt == "timestamp")
    if dt == "json" and convert is not None and mirror.convert is json_text:  # MySQL's JSON (MariaDB's is text)
        return _json_documents(slow)
    if dt == "set":
        typed = column_plans(mirror)[1]
        if typed is not None and typed[0] == pa.string():
            return _planned(typed[1], slow)  # the members joined by commas, as the core types them
    return slow


def column_builders(schema: TableSchema, columns: Sequence[MirrorColumn],
                    flavor: str | None) -> tuple[ColumnBuilder, ...]:
    """One builder per column of ``schema`` (whose mirror columns are ``columns``, in the same order)
    for a server of ``flavor``; ``SchemaError`` for a type sluice cannot read from text."""
    if len(columns) != len(schema.columns):
        raise SchemaError(f"{schema.db}.{schema.name}: {len(schema.columns)} columns but {len(columns)} mirror columns")
    out = []
    for column, mirror in zip(schema.columns, columns, strict=True):
        try:
            out.append(_builder(schema, column, mirror, flavor))
        except SchemaError as exc:
            raise SchemaError(f"{schema.db}.{schema.name}: {exc}") from None
    return tuple(out)


def chunk_table(columns: Sequence[MirrorColumn], builders: Sequence[ColumnBuilder],
                values: Sequence[pa.Array]) -> pa.Table:
    """The mirror table of a chunk's rows: ``values`` holds one binary array per column, in table order."""
    arrays = [build(raw) for build, raw in zip(builders, values, strict=True)]
    return pa.Table.from_arrays(arrays, schema=mirror_schema(columns))


def key_values(schema: TableSchema, key: Sequence[str], flavor: str | None,
               values: Sequence[pa.Array]) -> list[tuple[Any, ...]]:
    """The decoded values of the key columns ``key`` of each row (``values``: one binary array per
    column of ``schema``), as ``sluice.cdc.textvalues`` converts them; key columns are NOT NULL."""
    by_column = []
    for column in key_columns(schema, key):
        convert = text_converter(column, flavor)
        column_texts = texts(values[schema.columns.index(column)])
        try:
            by_column.append(column_texts if convert is None else [convert(t) for t in column_texts])  # type: ignore[arg-type]
        except _VALUE_ERRORS:
            raise _bad_text(schema, column, convert, column_texts) from None  # type: ignore[arg-type]
    return list(zip(*by_column, strict=True))


def integer_keys_in_order(schema: TableSchema, key: Sequence[str], lower: Sequence[Any] | None,
                          upper: Sequence[Any] | None, values: Sequence[pa.Array]) -> bool:
    """Whether the rows' key, one integer column, is strictly increasing inside ``[lower, upper)``,
    checked column-wise (what ``reconcile_keys`` checks row by row before it looks at changes).
    False when that cannot be shown this way (another key, a value Arrow does not read as an int64,
    rows out of order): the caller then takes the row-by-row path, which also names the bad row."""
    import pyarrow.compute as pc

    if len(key) != 1:
        return False
    (column,) = key_columns(schema, key)
    if column.data_type not in INTEGER_TYPES:
        return False
    raw = values[schema.columns.index(column)]
    try:
        ints = pc.cast(pc.cast(raw, pa.string()), pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    if ints.null_count:
        return False
    keys = ints.to_numpy()
    if not keys.size:
        return True
    low = None if lower is None else lower[0]
    high = None if upper is None else upper[0]
    if (low is not None and (type(low) is not int or keys[0] < low)) or (
            high is not None and (type(high) is not int or keys[-1] >= high)):
        return False
    return bool((keys[1:] > keys[:-1]).all())  # not np.diff, which wraps past int64 (-2**63 - 1 > 0)
