"""A table's history (``sluice run --history``): ``LAKE/<db>/<table>__history``, a Delta table of every
version of each row (SCD type 2), written beside the mirror in the same batches, exactly once.

``HistoryBatch`` is what the pipeline hands over per table and batch: the table's changes in
change-log order, each with its commit time and ``seq`` (``sluice.lake.mirror.versions``).
``HistoryCommits.plan`` turns it into one Delta commit, read and built before the batch's fence:

- a history that does not exist yet starts from the mirror's rows as they stand before the batch
  (``read_mirror``: the snapshot's rows, or the table's rows when --history first takes it), each a
  version opened at the batch's first commit time with ``__start_seq`` NULL, followed by the
  batch's versions; the table is created by that one commit;
- a history that exists gets one MERGE: each key the batch touches has its current version closed
  (``__end_at``, ``__end_seq``), and every version the batch makes is inserted;
- after a DDL on the table (``resync_at``), the history's current versions are first compared with
  the mirror as the DDL left it (``versions.resync``): an added column makes a new version of each
  row holding its value, NULL in the older versions; a truncate closes every version.

Exactly once, as the mirror: the commit carries the batch's app transaction and lands on the
version the history was read at (``max_commit_retries=0``), and a history that records the batch
is skipped. The histories of a batch are committed before its mirrors (``sluice.lake.sink``): a
history that is missing or behind when a batch is replayed then never sees a mirror that holds the
batch already, so it starts from, and is compared with, the mirror as of the batch before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import DeltaError, TableNotFoundError

from sluice.errors import SchemaError
from sluice.lake.data_files import LAKE_WRITER
from sluice.lake.layout import Lake
from sluice.lake.mirror.commits import MirrorCommits
from sluice.lake.mirror.merge import commit_error
from sluice.lake.mirror.merge_source import key_bounds, quote_name
from sluice.lake.mirror.pending import read_mirror
from sluice.lake.mirror.versions import (
    CLOSE,
    END_AT,
    END_SEQ,
    Change,
    history_schema,
    resync,
    versions,
)
from sluice.lake.types.mirror_columns import MirrorColumn, columns_to_add, mirror_schema

__all__ = ["HistoryBatch", "HistoryCommits", "HistoryPlan"]


@dataclass(frozen=True, slots=True)
class HistoryBatch:
    """One table's share of a batch for its history: its ``changes`` (change-log order), when its
    rows open if the history starts now (``seed_us``, µs), and, after a DDL on the table, the DDL's
    ``(µs, seq)`` to compare the history with the mirror at (``resync_at``)."""

    db: str
    table: str
    columns: tuple[MirrorColumn, ...]
    primary_key: tuple[str, ...]
    changes: Sequence[Change]
    seed_us: int
    resync_at: tuple[int, int | None] | None = None


@dataclass
class HistoryPlan:
    """A history's commit, ready: the table as read (None: created by the commit), the rows, and
    the columns to add first."""

    hb: HistoryBatch
    path: str
    dt: DeltaTable | None
    source: pa.Table
    add: list[MirrorColumn]


class HistoryCommits:
    """The histories' side of a lake's batches, sharing the mirrors' kept tables and app id."""

    def __init__(self, store: Lake, mirrors: MirrorCommits) -> None:
        self.store = store
        self.mirrors = mirrors

    def plan(self, hb: HistoryBatch, batch_id: int) -> HistoryPlan | None:
        """The commit ``hb`` needs, None when none (the history records the batch, or nothing changes)."""
        path = self.store.history(hb.db, hb.table)
        dt = self.mirrors.kept.get(path).current()
        if dt is not None and self.mirrors.done(path, batch_id):
            return None
        changes = list(hb.changes)
        name = f"{hb.db}.{hb.table}"
        if dt is None or hb.resync_at is not None:
            at_us, seq = hb.resync_at if hb.resync_at is not None and dt is not None else (hb.seed_us, None)
            current = None if dt is None else _current(dt)
            changes = resync(hb.columns, hb.primary_key, self._mirror(hb), current, at_us, seq, name) + changes
        if not changes:  # nothing changes, or a history would start empty: it starts with its first row
            return None
        source = versions(hb.columns, hb.primary_key, changes)
        if dt is None:  # nothing to close: the table starts with these versions
            source = source.filter(pc.invert(source.column(CLOSE))).drop_columns([CLOSE])
        return HistoryPlan(hb, path, dt, source, _added(hb, dt, name))

    def commit(self, p: HistoryPlan, batch_id: int, txn: CommitProperties) -> int:
        """Commit a planned history (module docstring); the versions it added."""
        hb = p.hb
        options = self.store.delta_options()
        what = f"the history of {hb.db}.{hb.table} ({p.path})"
        try:
            if p.dt is None:
                write_deltalake(p.path, p.source, mode="error", commit_properties=txn, storage_options=options,
                                writer_properties=LAKE_WRITER)
                return p.source.num_rows
            dt = p.dt
            if p.add:
                dt.alter.add_columns(list(DeltaSchema.from_arrow(mirror_schema(p.add)).fields))
                dt = DeltaTable(p.path, storage_options=options)
                self.mirrors.kept.stale(p.path)  # committed beside the kept table object: read again
            before = dt.version() if not p.add else None
            _merge(dt, p.source, hb.primary_key, txn)
        except DeltaError as exc:
            raise commit_error(what, batch_id, exc) from exc
        self.mirrors.remember(p.path, before, batch_id)
        return int(pc.sum(pc.invert(p.source.column(CLOSE))).as_py() or 0)

    def _mirror(self, hb: HistoryBatch) -> pa.Table:
        """The mirror's rows as of the change log's last commit; none when the table has no mirror."""
        try:
            return read_mirror(self.store, hb.db, hb.table)
        except TableNotFoundError:
            return history_schema(hb.columns).empty_table()


def _current(dt: DeltaTable) -> pa.Table:
    """The history's current versions (``__end_at`` NULL)."""
    rows = dt.to_pyarrow_table()
    return rows.filter(pc.is_null(rows.column(END_AT)))


def _added(hb: HistoryBatch, dt: DeltaTable | None, name: str) -> list[MirrorColumn]:
    """The table's columns the history lacks (an ADD COLUMN); ``SchemaError`` for a changed type."""
    if dt is None:
        return []

    def conflict(col: MirrorColumn, have: str, _want: str) -> SchemaError:
        return SchemaError(
            f"column {col.name!r} of {name} is now {col.mysql_type}, but its history holds another Delta type "
            f"({have}), and Delta cannot change a column's type in place: move the history aside (it keeps the "
            "versions so far) and a new one starts from the mirror")

    return columns_to_add(dt, hb.columns, conflict)


def _merge(dt: DeltaTable, source: pa.Table, primary_key: Sequence[str], txn: CommitProperties) -> None:
    """Close the current version of each key a ``close`` row names, insert every other row."""
    predicate = " AND ".join(f"target.{quote_name(k)} = source.{quote_name(k)}" for k in primary_key)
    predicate += f" AND source.{CLOSE} AND target.{quote_name(END_AT)} IS NULL"
    predicate += key_bounds(source, primary_key[0])
    names = [n for n in source.column_names if n != CLOSE]
    merger = dt.merge(source, predicate, source_alias="source", target_alias="target",
                      writer_properties=LAKE_WRITER, commit_properties=txn)
    merger = merger.when_matched_update({quote_name(n): f"source.{quote_name(n)}" for n in (END_AT, END_SEQ)})
    merger = merger.when_not_matched_insert({quote_name(n): f"source.{quote_name(n)}" for n in names},
                                            f"NOT source.{CLOSE}")
    merger.execute()
