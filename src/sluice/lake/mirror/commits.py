"""One batch's commits to the mirrors: each table's MERGE, or the append of its changes to its
pending table when ``MirrorCadence.due`` says the MERGE can wait, and the MERGE of what is pending.

``MirrorCommits`` plans a table's commit (``plan_table``: skipped when the mirror or its pending
table records the batch, else the MERGE planned by ``sluice.lake.mirror.merge``) and runs it
(``commit_table``, side by side with the batch's other tables, ``sluice.lake.at_once``). It keeps,
per table, when the oldest change not yet in the Delta mirror was written (``waiting``), and
MERGEs a table's pending changes before anything else writes its mirror (``flush``, ``flush_all``).
Every commit carries the batch's app transaction and lands on the version its table was read at
(``sluice.lake.sink`` makes the ``CommitProperties``); a ``DeltaError`` becomes ``commit_error``'s
typed error.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import DeltaError

from sluice.lake.at_once import run_at_once
from sluice.lake.data_files import has_change_feed
from sluice.lake.kept_table import KeptTables
from sluice.lake.layout import Lake
from sluice.lake.mirror.batch import TableBatch, TableResult
from sluice.lake.mirror.merge import TablePlan, commit_error, merge_into, plan
from sluice.lake.mirror.merge_source import DELETE_FLAG, fold_sources, last_per_key, without_positions
from sluice.lake.mirror.own_commit import unwritable
from sluice.lake.mirror.passes import merge_in_passes
from sluice.lake.mirror.pending import MirrorCadence, PendingChanges, combine, mirror_bytes, primary_key_of
from sluice.lake.mirror.pieces import AFTER_PENDING, TablePiece, integer_key
from sluice.lake.types.mirror_columns import mirror_schema

__all__ = ["MirrorCommits", "Planned"]

#: a table's planned commit with its pending table, or its result when there is nothing to commit
Planned = tuple[TablePlan, PendingChanges | None] | TableResult


class MirrorCommits:
    """The mirrors' side of a lake's batches, for one pipeline (``app_id``): ``kept`` are the
    lake's tables kept between batches (shared with the change log's commits)."""

    def __init__(self, store: Lake, kept: KeptTables, app_id: str, cadence: MirrorCadence,
                 mirror_configuration: dict[str, str] | None) -> None:
        self.store = store
        self.kept = kept
        self.app_id = app_id
        self.cadence = cadence
        self.mirror_configuration = mirror_configuration
        self._pending: set[tuple[str, str]] | None = None  # tables with a pending table (listed once)
        #: ``db.table`` -> when the oldest change pending for its mirror was written (epoch seconds): what
        #: a plain reader of the mirror has not seen yet, for the tables this writer committed to.
        self.waiting: dict[str, float] = {}

    def plan_table(self, tb: TableBatch, batch_id: int) -> Planned:
        """What ``tb`` needs this batch: its result when nothing (no key, no change, already in the
        lake), else its MERGE planned against the mirror as it stands, with its pending table."""
        n = tb.change_count
        if not tb.primary_key:
            return TableResult(tb.db, tb.table, "unmirrorable", n)
        if not n:
            return TableResult(tb.db, tb.table, "empty", 0)
        path = self.store.mirror(tb.db, tb.table)
        dt = self.kept.get(path).current()
        pending = self._untaken(tb.db, tb.table, self.pending_of(tb.db, tb.table))
        if dt is not None and (self.done(path, batch_id)
                               or (pending is not None and self.done(pending.path, batch_id))):
            return TableResult(tb.db, tb.table, "skipped", n)
        current = None
        if pending is not None and pending.rows:
            current = self._current(tb, path, pending, dt, batch_id)
        return plan(tb, path, dt, self.store, self.mirror_configuration, current), pending

    def step(self, p: Planned, batch_id: int, txn: CommitProperties) -> Callable[[], TableResult]:
        """A table's commit, to run beside the others' (a table with nothing to commit: its result)."""
        if isinstance(p, TableResult):
            return lambda: p
        return partial(self.commit_table, p[0], p[1], batch_id, txn)

    def commit_table(self, p: TablePlan, pending: PendingChanges | None, batch_id: int,
                     txn: CommitProperties) -> TableResult:
        """MERGE one table's plan, with the rows pending for it; or, when the cadence says the MERGE
        can wait, append its source to the pending rows."""
        tb = p.tb
        if p.source is None:  # a source in pieces: MERGEd now, in passes when the mirror takes them
            if self._passes_take(p):
                return self._in_passes(p, pending, batch_id, txn)
            p.source = without_positions(fold_sources([piece.read() for piece in tb.pieces], tb.primary_key))
        full = not p.partial and set(p.source.column_names) == {c.name for c in tb.columns} | {DELETE_FLAG}
        waiting = pending.rows if pending is not None else 0
        if full and p.dt is not None and not p.add and p.dt.file_uris():
            oldest = pending.oldest if pending is not None else None
            if not self.cadence.due(mirror_bytes(p.dt), waiting + p.source.num_rows, oldest, time.time()):
                held = pending or self._pending_table(tb.db, tb.table)
                before = held.version
                self._guard(f"the pending changes of {tb.db}.{tb.table}", batch_id,
                            lambda: held.append(p.source, tb.primary_key, txn))
                self.remember(held.path, before, batch_id)
                self._known_pending().add((tb.db, tb.table))
                self.waiting[f"{tb.db}.{tb.table}"] = held.oldest or time.time()
                return TableResult(tb.db, tb.table, "pending", tb.change_count)
        self.waiting.pop(f"{tb.db}.{tb.table}", None)  # MERGEd below, with what was pending
        if full and waiting + p.source.num_rows > self.cadence.pass_rows and self._passes_take(p):
            return self._in_passes(p, pending, batch_id, txn)
        if pending is None or not waiting:
            return self._execute(p, batch_id, txn)
        if not full:  # a source with presence flags patches the mirror's rows: those pending go first
            self._flush_table(tb.db, tb.table, pending, p.dt, batch_id)
            p.dt = self.kept.get(p.path).current()
            return self._execute(p, batch_id, txn)
        p.source = combine(pending.read(), p.source, tb.primary_key)
        result = self._execute(p, batch_id, txn)
        before = pending.version
        self._guard(f"the pending changes of {tb.db}.{tb.table}", batch_id, lambda: pending.clear(txn))
        self.remember(pending.path, before, batch_id)
        return result

    def _passes_take(self, p: TablePlan) -> bool:
        """Whether ``p`` can be MERGEd in passes (``sluice.lake.mirror.passes``): full rows, a single
        integer key, a mirror sluice can commit to itself."""
        return (not p.partial and integer_key(mirror_schema(p.tb.columns), p.tb.primary_key)
                and (p.dt is None or unwritable(p.dt) is None))

    def _in_passes(self, p: TablePlan, pending: PendingChanges | None, batch_id: int,
                   txn: CommitProperties) -> TableResult:
        """MERGE a table's pending rows and its batch's source in passes, then empty its pending table."""
        tb = p.tb
        held = pending.pieces() if pending is not None and pending.rows else []
        pieces = [*held, *(tb.pieces or [TablePiece(p.source, AFTER_PENDING)])]

        def merge(dt: DeltaTable) -> dict[str, Any]:
            before = dt.version()
            metrics = merge_in_passes(dt, p.path, self.store, pieces, tb.primary_key[0], app_id=self.app_id,
                                      batch_id=batch_id, file_rows=self.cadence.pass_rows,
                                      change_feed=has_change_feed(dt))
            self.remember(p.path, before, batch_id)
            return metrics

        result = p.run(batch_id, merge)
        self.waiting.pop(f"{tb.db}.{tb.table}", None)
        if held:
            assert pending is not None
            before = pending.version
            self._guard(f"the pending changes of {tb.db}.{tb.table}", batch_id, lambda: pending.clear(txn))
            self.remember(pending.path, before, batch_id)
        return result

    def remember(self, path: str, before: int | None, batch_id: int) -> None:
        """After a commit of ``batch_id`` to the table at ``path``, at version ``before`` until then
        (None or -1: no table then), have its kept table remember the batch's app transaction."""
        if before is not None and before >= 0:
            self.kept.get(path).committed(before, self.app_id, batch_id)

    def done(self, path: str, batch_id: int) -> bool:
        """Whether the table at ``path`` records ``batch_id`` (or a later batch) as committed."""
        version = self.kept.get(path).transaction_version(self.app_id)
        return version is not None and version >= batch_id

    def flush_all(self) -> int:
        """MERGE the pending changes of every table into its mirror (the pipeline stops), several
        tables at once; the rows MERGEd."""
        return sum(run_at_once([partial(self.flush, db, table) for db, table in sorted(self._known_pending())],
                               self.cadence.commits_at_once))

    def flush(self, db: str, table: str) -> int:
        """MERGE the pending changes of ``db.table`` into its mirror, before something else writes
        the mirror; the rows MERGEd."""
        pending = self._untaken(db, table, self.pending_of(db, table))
        if pending is None or not pending.rows:
            return 0
        rows = pending.rows
        self._flush_table(db, table, pending, self.kept.get(self.store.mirror(db, table)).current(), None)
        return rows

    def pending_of(self, db: str, table: str) -> PendingChanges | None:
        """The pending table of a mirror, None when it has none (no read of the lake then)."""
        if (db, table) not in self._known_pending():
            return None
        return self._pending_table(db, table)

    def _untaken(self, db: str, table: str, pending: PendingChanges | None) -> PendingChanges | None:
        """``pending``, emptied first when the mirror's last MERGE took its rows: the mirror records a
        later batch than the pending table, which only a kill between that MERGE and the emptying
        leaves so. MERGEd again, those rows would undo the changes that MERGE's own batch made."""
        if pending is None or not pending.rows:
            return pending
        merged = self.kept.get(self.store.mirror(db, table)).transaction_version(self.app_id)
        appended = self.kept.get(pending.path).transaction_version(self.app_id)
        if merged is None or (appended is not None and appended >= merged):
            return pending
        self._guard(f"the pending changes of {db}.{table}", None, lambda: pending.clear(None))
        self.waiting.pop(f"{db}.{table}", None)
        return pending

    def _execute(self, p: TablePlan, batch_id: int, txn: CommitProperties) -> TableResult:
        """Run a table's MERGE; the kept mirror remembers the batch when the MERGE is its one commit."""
        before = None if p.dt is None or p.add else p.dt.version()  # columns added first: two commits
        try:
            result = p.execute(batch_id, txn)
        finally:
            if p.add:  # committed through another table object: the kept one reads the log again
                self.kept.stale(p.path)
        self.remember(p.path, before, batch_id)
        return result

    def _current(self, tb: TableBatch, path: str, pending: PendingChanges, dt: DeltaTable | None,
                 batch_id: int) -> Any:
        """For a fold that reads mirror rows: MERGE the pending changes first, then the mirror."""
        def current() -> DeltaTable | None:
            self._flush_table(tb.db, tb.table, pending, dt, batch_id)
            return self.kept.get(path).current()
        return current

    def _flush_table(self, db: str, table: str, pending: PendingChanges, dt: DeltaTable | None,
                     batch_id: int | None) -> None:
        """MERGE what is pending for a mirror, then empty the pending table (no app transaction:
        MERGEd again after a kill between the two, the rows leave the mirror as they found it)."""
        pieces = pending.pieces() if dt is not None and pending.rows > self.cadence.pass_rows else []
        key = primary_key_of(pieces[0].schema) if pieces else ()
        if dt is not None and pieces and integer_key(pieces[0].schema, key) and unwritable(dt) is None:
            try:
                self._guard(f"the mirror of {db}.{table}", batch_id, lambda: merge_in_passes(
                    dt, self.store.mirror(db, table), self.store, pieces, key[0], app_id=self.app_id, batch_id=None,
                    file_rows=self.cadence.pass_rows, change_feed=has_change_feed(dt)))
            finally:  # its commit is written beside the table object: the kept one reads the log again
                self.kept.stale(self.store.mirror(db, table))
            self._guard(f"the pending changes of {db}.{table}", batch_id, lambda: pending.clear(None))
            self.waiting.pop(f"{db}.{table}", None)
            return
        rows = pending.read()
        if rows is not None and dt is not None:
            key = primary_key_of(rows.schema)
            names = [n for n in rows.column_names if n != DELETE_FLAG]
            source = last_per_key(rows, key)
            self._guard(f"the mirror of {db}.{table}", batch_id,
                        lambda: merge_into(dt, source, key, names, (), None))
        self._guard(f"the pending changes of {db}.{table}", batch_id, lambda: pending.clear(None))
        self.waiting.pop(f"{db}.{table}", None)

    def _guard(self, what: str, batch_id: int | None, step: Any) -> None:
        try:
            step()
        except DeltaError as exc:
            raise commit_error(what, batch_id, exc) from exc

    def _known_pending(self) -> set[tuple[str, str]]:
        if self._pending is None:
            self._pending = set(self.store.pending_tables())
        return self._pending

    def _pending_table(self, db: str, table: str) -> PendingChanges:
        """The pending table of ``db.table`` as of its newest version (kept between batches)."""
        return PendingChanges(self.store, db, table, kept=self.kept.get(self.store.pending(db, table)))
