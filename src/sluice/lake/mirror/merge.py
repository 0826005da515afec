"""One table's share of a micro-batch, folded and MERGEd into its Delta mirror.

``TableBatch`` is what the pipeline hands over per table; ``plan`` folds its changes into the last
state per primary key (``sluice.lake.mirror.fold``: an update that moves the key deletes the old
key; a minimal image patches only the columns it carries, the mirror row supplying the rest when the
key moved; a partial JSON update is replayed on the document it changes), checks the
mirror's schema (new columns are added; a type Delta cannot take raises ``SchemaError`` — DDL has
rewritten the mirror before this point, ``sluice.spark.ddl.apply``) and builds the MERGE source: one
Arrow table per table per batch, never a call per row. ``TablePlan.execute`` runs the MERGE through
delta-rs with the batch's app transaction. A ``TableBatch`` may bring its MERGE source already built
column-wise (``sluice.lake.mirror.merge_source``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError, DeltaError, SchemaMismatchError

from sluice.errors import DataLossError, LakeBusyError, SchemaError
from sluice.lake.data_files import LAKE_WRITER, append_data_files
from sluice.lake.mirror.batch import TableBatch, TableResult
from sluice.lake.mirror.fold import DELETE, MOVE, PATCH, Entry, fold, from_mirror, needs_mirror
from sluice.lake.mirror.merge_source import DELETE_FLAG, key_bounds
from sluice.lake.mirror.merge_source import quote_name as _quote
from sluice.lake.storage import LakeStore
from sluice.lake.types.mirror_columns import MirrorColumn, column_array, columns_to_add, mirror_schema

__all__ = ["TablePlan", "commit_error", "merge_into", "plan"]

_DELETE_FLAG = DELETE_FLAG

_PRESENT = "_sluice_has_"  # + column index: the value of that column is in the row image

def commit_error(what: str, batch_id: int | None, exc: Exception) -> DataLossError:
    """The ``DataLossError`` for a failed Delta commit of a batch (None: of pending changes between
    batches): nothing committed, restart replays. A commit that lost to another writer's (a Delta
    commit conflict) is a ``LakeBusyError``."""
    of = "" if batch_id is None else f" of batch {batch_id}"
    if isinstance(exc, CommitFailedError):
        return LakeBusyError(
            f"the Delta commit{of} to {what} conflicted with another writer's commit ({exc}); nothing of it "
            "was committed: one writer at a time, stop the other sluice writing this lake"
        )
    return DataLossError(
        f"the Delta commit{of} to {what} failed ({exc}); nothing of it was committed. "
        "Fix the cause (storage, permissions, another writer) and restart: the batch is replayed and "
        "tables that already hold it are skipped"
    )


class TablePlan:
    """One table's MERGE, ready to commit: the source rows and the schema changes it needs."""

    def __init__(self, tb: TableBatch, path: str, dt: DeltaTable | None, source: pa.Table | None,
                 partial: list[int], add: list[MirrorColumn], store: LakeStore | None = None,
                 configuration: dict[str, str] | None = None) -> None:
        self.tb = tb
        self.path = path
        self.store = store  # the lake's storage (None: a local path)
        self.options = store.delta_options() if store is not None else None
        self.dt = dt
        self.source = source  # None: the batch's source comes in pieces (``tb.pieces``)
        self.partial = partial  # indexes of columns some upsert row does not carry
        self.add = add
        self.configuration = configuration  # the table properties of a mirror created here

    def execute(self, batch_id: int, txn: CommitProperties) -> TableResult:
        """Create or widen the mirror as needed, run the MERGE with the app transaction ``txn``."""
        return self.run(batch_id, lambda dt: self._merge(dt, txn))

    def run(self, batch_id: int, merge: Callable[[DeltaTable], dict[str, Any]]) -> TableResult:
        """Create or widen the mirror as needed, then ``merge`` into it; its metrics as the result."""
        tb = self.tb
        name = f"{tb.db}.{tb.table}"
        try:
            dt = self.dt
            if dt is None:
                dt = DeltaTable.create(self.path, mirror_schema(tb.columns), mode="ignore",
                                      storage_options=self.options, configuration=self.configuration)
            elif self.add:
                fields = DeltaSchema.from_arrow(mirror_schema(self.add)).fields
                dt.alter.add_columns(list(fields))
                dt = DeltaTable(self.path, storage_options=self.options)
            metrics = merge(dt)
        except (SchemaMismatchError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # Arrow: a MERGE in passes
            raise SchemaError(
                f"the Delta mirror of {name} does not take the batch's rows ({exc}); re-snapshot the table: "
                f"remove {self.path} and capture the table again"
            ) from exc
        except DeltaError as exc:
            raise commit_error(f"the mirror of {name} ({self.path})", batch_id, exc) from exc
        return TableResult(
            tb.db, tb.table, "written", tb.change_count,
            int(metrics.get("num_target_rows_inserted", 0)),
            int(metrics.get("num_target_rows_updated", 0)),
            int(metrics.get("num_target_rows_deleted", 0)),
        )

    def _merge(self, dt: DeltaTable, txn: CommitProperties) -> dict[str, Any]:
        tb = self.tb
        assert self.source is not None  # a source in pieces is MERGEd in passes (MirrorCommits)
        if not dt.file_uris():
            return self._append(dt, txn)
        return merge_into(dt, self.source, tb.primary_key, [c.name for c in tb.columns], self.partial, txn)

    def _append(self, dt: DeltaTable, txn: CommitProperties) -> dict[str, Any]:
        """Into a mirror without rows a MERGE inserts every upsert and nothing else: append them,
        as Parquet files written a file per core at once, where delta-rs' MERGE and its own writer
        would write them on one core."""
        tb = self.tb
        assert self.source is not None
        rows = pa.Table.from_arrays([self.source.column(c.name) for c in tb.columns], schema=mirror_schema(tb.columns))
        upserts = pc.invert(self.source.column(_DELETE_FLAG).combine_chunks())
        return {"num_target_rows_inserted": append_data_files(dt, self.path, rows, txn, keep=upserts, store=self.store)}


def merge_into(dt: DeltaTable, source: pa.Table, primary_key: Sequence[str], names: Sequence[str],
               partial: Sequence[int], txn: CommitProperties | None) -> dict[str, Any]:
    """MERGE a source (one row per key: the columns ``names``, the delete flag, a presence flag per
    column of ``partial``) into the mirror ``dt``; delta-rs' metrics."""
    pk = set(primary_key)
    predicate = " AND ".join(f"target.{_quote(k)} = source.{_quote(k)}" for k in primary_key)
    predicate += key_bounds(source, primary_key[0])
    patched = set(partial)
    updates: dict[str, str] = {}
    for i, name in enumerate(names):
        if name in pk:
            continue
        q = _quote(name)
        if i in patched:
            updates[q] = f"CASE WHEN source.{_PRESENT}{i} THEN source.{q} ELSE target.{q} END"
        else:
            updates[q] = f"source.{q}"
    inserts = {_quote(name): f"source.{_quote(name)}" for name in names}
    merger = dt.merge(source, predicate, source_alias="source", target_alias="target",
                      writer_properties=LAKE_WRITER, commit_properties=txn)
    merger = merger.when_matched_delete(f"source.{_DELETE_FLAG}")
    if updates:
        merger = merger.when_matched_update(updates, f"NOT source.{_DELETE_FLAG}")
    merger = merger.when_not_matched_insert(inserts, f"NOT source.{_DELETE_FLAG}")
    return merger.execute()


# -- planning --------------------------------------------------------------------------------------

def plan(tb: TableBatch, path: str, dt: DeltaTable | None, store: LakeStore | None = None,
         configuration: dict[str, str] | None = None,
         current: Callable[[], DeltaTable | None] | None = None) -> TablePlan:
    """Check the batch against the mirror's schema and fold its changes into one MERGE source;
    ``configuration``: the table properties of the mirror, when the MERGE creates it; ``current``:
    called before the fold reads rows of the mirror, returns the mirror up to date (its pending
    changes MERGEd, ``sluice.lake.mirror.pending``)."""
    name = f"{tb.db}.{tb.table}"
    by_name = {c.name: c for c in tb.columns}
    if len(by_name) != len(tb.columns):
        raise SchemaError(f"{name}: the column layout names a column twice")
    for c in tb.columns:
        if c.name.startswith("_sluice_"):
            raise SchemaError(f"{name}: column {c.name!r} uses the prefix _sluice_ the mirror keeps for itself")
    for k in tb.primary_key:
        if k not in by_name:
            raise SchemaError(
                f"{name}: primary key column {k!r} is not among the table's columns "
                f"({', '.join(by_name)}); the schema sluice holds for the table is inconsistent — re-read it"
            )
    add = _schema_changes(tb, dt, name)
    if tb.source is not None or tb.pieces:
        return TablePlan(tb, path, dt, tb.source, [], add, store, configuration)
    entries = fold(tb, name)
    if current is not None and needs_mirror(entries):
        dt = current()
    from_mirror(tb, dt, entries)
    source, partial = _source(tb, entries)
    return TablePlan(tb, path, dt, source, partial, add, store, configuration)


def _schema_changes(tb: TableBatch, dt: DeltaTable | None, name: str) -> list[MirrorColumn]:
    """Columns the mirror lacks; ``SchemaError`` for a column whose type changed."""
    if dt is None:
        return []

    def conflict(col: MirrorColumn, have: str, want: str) -> SchemaError:
        return SchemaError(
            f"column {col.name!r} of {name} is now {col.mysql_type} (Delta type {_type_text(want)}) but its Delta "
            f"mirror holds {_type_text(have)}, and Delta cannot change a column's type in place. Re-snapshot the "
            "table: remove its mirror and capture the table again")

    return columns_to_add(dt, tb.columns, conflict)


def _type_text(t: Any) -> str:
    return t if isinstance(t, str) else json.dumps(t, separators=(",", ":"))


def _source(tb: TableBatch, entries: dict[tuple[Any, ...], Entry]) -> tuple[pa.Table, list[int]]:
    """The MERGE source: one row per key with the mirror's columns, a delete flag and presence flags."""
    keys = list(entries)
    items = list(entries.values())
    pk_index = {k: j for j, k in enumerate(tb.primary_key)}
    images = [e.image for e in items]
    moved = [(i, e.base_row) for i, e in enumerate(items) if e.mode == MOVE and e.base_row is not None]
    layout = {c.name for c in tb.columns}
    patches = [e.image for e in items if e.mode == PATCH and not e.image.keys() >= layout]  # partial images
    arrays: list[pa.Array] = []
    fields: list[pa.Field] = []
    partial: list[int] = []
    presence: list[tuple[int, pa.Array]] = []
    for i, col in enumerate(tb.columns):
        name = col.name
        j = pk_index.get(name)
        if j is not None:
            values = [k[j] for k in keys]
        else:
            convert = col.convert
            values = [img.get(name) for img in images]
            values = [None if v is None else convert(v) for v in values]
            for row_index, base_row in moved:
                if name not in items[row_index].image:
                    values[row_index] = base_row.get(name)
            if any(name not in img for img in patches):
                partial.append(i)
                flags = [e.mode != PATCH or name in e.image for e in items]
                presence.append((i, pa.array(flags, pa.bool_())))
        arrays.append(column_array(col, values))
        fields.append(pa.field(name, col.arrow_type))
    arrays.append(pa.array([e.mode == DELETE for e in items], pa.bool_()))
    fields.append(pa.field(_DELETE_FLAG, pa.bool_()))
    for i, flags in presence:
        arrays.append(flags)
        fields.append(pa.field(f"{_PRESENT}{i}", pa.bool_()))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields)), partial
