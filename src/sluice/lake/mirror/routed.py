"""A routed mirror (``--route``, ``sluice.cdc.routes``): the one Delta mirror of several source tables,
its columns, and each source table's changes made into its MERGE.

The mirror's columns are the union of its source tables' columns (``routed_layout``), tables taken
in name order, each one's columns in its order, then ``_source_db`` and ``_source_table``; its key
is the tables' primary key and those two (``mirror_key``). A column two tables define with types
the mirror cannot hold both of (another Arrow type) is a ``RouteConflictError`` naming both
definitions and both tables. A table's changes, column-wise or per row, become the mirror's by the
two columns' constant values and a null for each column the table lacks (``routed_batch``): one
``TableBatch`` per mirror and batch, so each mirror still takes one commit per batch with the
batch's app transaction. Removing one table's rows from the mirror (``delete_rows``: a snapshot
read of it again, a DROP or TRUNCATE of it) is one Delta delete on the two columns.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from sluice.cdc.records import RowChange
from sluice.cdc.routes import SOURCE_DB, SOURCE_TABLE, Routes, mirror_key
from sluice.cdc.schema.model import TableSchema
from sluice.errors import DataLossError, RouteConflictError
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.mirror.merge_source import DELETE_FLAG, quote_name
from sluice.lake.types.mirror_columns import MirrorColumn, _identity
from sluice.lake.types.table_layout import mirror_columns_for_schema

__all__ = ["SOURCE_MIRROR_COLUMNS", "RoutedLayout", "column_names", "conflict", "delete_rows", "routed_batch",
           "routed_layout", "routed_row"]

Name = tuple[str, str]

#: the two columns a routed mirror adds: the source table's database and name
SOURCE_MIRROR_COLUMNS = (MirrorColumn(SOURCE_DB, "varchar(64)", pa.string(), "string", _identity),
                         MirrorColumn(SOURCE_TABLE, "varchar(64)", pa.string(), "string", _identity))


@dataclasses.dataclass(frozen=True, slots=True)
class RoutedLayout:
    """A routed mirror's columns and key, and the source tables it holds (in the catalog's order)."""

    target: Name
    columns: tuple[MirrorColumn, ...]
    primary_key: tuple[str, ...]
    tables: tuple[Name, ...]


def routed_layout(routes: Routes, target: Name, schemas: Sequence[TableSchema], flavor: str | None,
                  mask: Callable[[TableSchema], TableSchema] | None = None,
                  order: Sequence[str] | None = None) -> RoutedLayout:
    """The layout of the mirror ``target`` from the schemas of the captured tables (those routed to
    another mirror, or not routed, are passed over), taken in name order; ``mask``: the
    ``ColumnRules``' ``mask_schema``; ``order``: the column names of the mirror as it stands, whose
    columns keep their places (a column added later comes after them, as Delta adds it).
    Tables that disagree on the key or on a column's mirror type: ``RouteConflictError``."""
    shards = sorted((s for s in schemas if routes.target(s.db, s.name) == target), key=lambda s: (s.db, s.name))
    if not shards:
        raise RouteConflictError(f"no captured table is routed to {target[0]}.{target[1]}")
    routes.check(shards)
    columns: dict[str, tuple[MirrorColumn, Name, str]] = {}  # the column, its first table, its definition there
    for schema in shards:
        kept = mask(schema) if mask is not None else schema
        for col, defined in zip(mirror_columns_for_schema(kept, flavor), kept.data_columns(), strict=True):
            seen = columns.get(col.name)
            if seen is None:
                columns[col.name] = (col, (schema.db, schema.name), defined.sql_type())
            elif seen[0].arrow_type != col.arrow_type:
                raise conflict(target, col.name, seen[1], seen[2], (schema.db, schema.name), defined.sql_type())
    layout = [c for c, _, _ in columns.values()] + list(SOURCE_MIRROR_COLUMNS)
    if order:
        place = {name: i for i, name in enumerate(order)}
        layout.sort(key=lambda c: place.get(c.name, len(place)))  # stable: new columns in union order
    return RoutedLayout(target, tuple(layout), mirror_key(shards[0].primary_key), tuple((s.db, s.name) for s in shards))


def column_names(dt: DeltaTable | None) -> list[str] | None:
    """The column names of a mirror, in its order (None: no mirror)."""
    return None if dt is None else [f["name"] for f in json.loads(dt.schema().to_json())["fields"]]


def conflict(target: Name, column: str, one: Name, one_type: str, other: Name, other_type: str) -> RouteConflictError:
    """The error of a column two tables routed into one mirror define as types it cannot hold both of."""
    return RouteConflictError(
        f"column {column} of the routed mirror {target[0]}.{target[1]} is {one_type} in {one[0]}.{one[1]} but "
        f"{other_type} in {other[0]}.{other[1]}: one mirror column cannot hold both. Give the column one type "
        f"in every routed table (alter them together before the stream reaches the change), or route "
        f"{other[0]}.{other[1]} to a mirror of its own")


def routed_row(db: str, table: str, row: dict[str, Any] | None) -> dict[str, Any] | None:
    """A row image of ``db.table`` as its routed mirror keys it: with the two source columns."""
    return None if row is None else {**row, SOURCE_DB: db, SOURCE_TABLE: table}


def _routed_change(c: RowChange) -> RowChange:
    """The change as the mirror's fold takes it (the change log keeps its own record, unchanged)."""
    return dataclasses.replace(c, before=routed_row(c.db, c.table, c.before), after=routed_row(c.db, c.table, c.after),
                               pk=mirror_key(c.pk))


def _routed_source(tb: TableBatch, layout: RoutedLayout) -> pa.Table:
    """A table's column-wise MERGE source in the mirror's columns: its own, nulls, the two constants."""
    source = tb.source
    assert source is not None
    n = source.num_rows
    arrays: list[Any] = []
    for col in layout.columns:
        if col.name == SOURCE_DB:
            arrays.append(pa.repeat(pa.scalar(tb.db, pa.string()), n))
        elif col.name == SOURCE_TABLE:
            arrays.append(pa.repeat(pa.scalar(tb.table, pa.string()), n))
        elif col.name in source.column_names:
            values = source.column(col.name)  # as the mirror types it, so the tables' sources concatenate
            arrays.append(values if values.type == col.arrow_type else values.cast(col.arrow_type))
        else:
            arrays.append(pa.nulls(n, col.arrow_type))
    arrays.append(source.column(DELETE_FLAG))
    names = [c.name for c in layout.columns] + [DELETE_FLAG]
    return pa.Table.from_arrays(arrays, names=names)


def routed_batch(layout: RoutedLayout, shards: Sequence[TableBatch]) -> TableBatch:
    """One ``TableBatch`` of the mirror from its source tables' batches: all column-wise (each
    table's source as the mirror's, concatenated: two tables never share a key) or all per row."""
    db, table = layout.target
    kept = [tb for tb in shards if tb.change_count]
    n = sum(tb.change_count for tb in shards)
    if not kept:
        return TableBatch(db, table, layout.columns, layout.primary_key, ())
    if all(tb.source is not None for tb in kept):
        source = pa.concat_tables([_routed_source(tb, layout) for tb in kept])
        return TableBatch(db, table, layout.columns, layout.primary_key, (), source, n)
    if any(tb.source is not None for tb in kept):
        raise ValueError("routed_batch takes the tables' batches all column-wise or all per row")
    changes = [_routed_change(c) for tb in kept for c in tb.changes]
    return TableBatch(db, table, layout.columns, layout.primary_key, changes)


def delete_rows(path: str, options: dict[str, str] | None, db: str, table: str) -> int:
    """Delete ``db.table``'s rows from the routed mirror at ``path`` (none: nothing); the rows deleted.
    Deleting them again deletes nothing, so a step replayed after a crash does it once."""
    try:
        dt = DeltaTable(path, storage_options=options)
    except DeltaError:
        return 0
    if not dt.file_uris():
        return 0
    predicate = (f"{quote_name(SOURCE_DB)} = '{_literal(db)}' AND "
                 f"{quote_name(SOURCE_TABLE)} = '{_literal(table)}'")
    try:
        metrics = dt.delete(predicate)
    except DeltaError as exc:
        raise DataLossError(
            f"deleting the rows of {db}.{table} from its routed mirror {path} failed ({exc}); nothing of it was "
            "committed. Fix the cause (storage, permissions) and restart") from exc
    return int(metrics.get("num_deleted_rows", 0))


def _literal(text: str) -> str:
    return text.replace("'", "''")
