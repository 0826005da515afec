"""The Delta Lake writer: per micro-batch, MERGE each table's changes into its mirror (or hold them
as its pending changes, ``sluice.lake.mirror.pending``) and append every change to the change log,
exactly once.

A lake is a root folder or an object-store prefix (``sluice.lake.storage``): ``ROOT/<db>/<table>``
is the typed mirror of a table (one row per primary key, columns per ``sluice.lake.types.mirror_columns``)
and ``ROOT/_sluice/changes`` the append-only change log.
``DeltaLake.write_batch`` plans every table's MERGE first (``sluice.lake.mirror.merge``: the
fold to the last state per primary key, the mirror's schema, the MERGE source), so a
``SchemaError`` leaves the lake untouched, then commits them, several tables at once
(``sluice.lake.at_once``): per table one MERGE, with the rows pending for it, or, when
``MirrorCadence.due`` says the MERGE can wait, an append to its pending table
(``sluice.lake.mirror.commits``). Every commit carries
the Delta app transaction ``(app_id, batch_id)``: a table whose mirror or pending table records a
version ``>= batch_id`` is skipped, so a batch replayed after a crash between two commits writes
only what is missing. The change log is committed last; its recorded version is the highest batch
fully committed.
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial

import pyarrow as pa
from deltalake import (
    CommitProperties,
    DeltaTable,
    Transaction,
)
from deltalake.exceptions import DeltaError, TableNotFoundError
from deltalake.transaction import AddAction

from sluice.binlog.position import Checkpoint
from sluice.errors import ConfigError, DataLossError
from sluice.lake.at_once import run_at_once
from sluice.lake.changelog.commit import append_rows, commit_files
from sluice.lake.changelog.rows import changelog_table
from sluice.lake.changelog.schema import POSITION_KEY
from sluice.lake.changelog.sequence import ChangeSequence, numbered
from sluice.lake.kept_table import KeptTables
from sluice.lake.layout import open_lake
from sluice.lake.maintenance.change_feed import mirror_configuration
from sluice.lake.mirror.batch import BatchResult, TableBatch
from sluice.lake.mirror.commits import MirrorCommits, Planned
from sluice.lake.mirror.history import HistoryBatch, HistoryCommits
from sluice.lake.mirror.merge import commit_error
from sluice.lake.mirror.pending import MirrorCadence
from sluice.lake.storage import LakeStore
from sluice.lake.types.mirror_columns import MirrorColumn, mirror_schema

__all__ = [
    "BatchResult", "DeltaLake",
]

class DeltaLake:
    """A lake of Delta mirrors plus a change log, written by one pipeline (``app_id``).

    ``app_id`` identifies the pipeline in the Delta app transactions (derive it from the source and
    the lake). It must change when the pipeline's checkpoint is reset and batch ids start again.
    ``change_feed``: new mirrors are created with Delta's Change Data Feed on (``lake.change_feed``).
    ``cadence``: when a table's changes are MERGEd into its mirror (``lake.pending``).
    """

    def __init__(self, root: str | os.PathLike[str] | LakeStore, app_id: str, *, change_feed: bool = True,
                 cadence: MirrorCadence | None = None) -> None:
        if not app_id:
            raise ConfigError("a Delta lake needs a non-empty app_id naming the pipeline that writes it")
        self.store = open_lake(root)  # the lake's storage and layout
        self.root = self.store.uri
        self.options = self.store.delta_options()  # every delta-rs call on the lake gets them
        self.app_id = app_id
        self.changelog_path = self.store.changes
        self.mirror_configuration = mirror_configuration(change_feed)
        self.cadence = cadence or MirrorCadence()
        self._kept = KeptTables(self.options)  # the change log, mirrors and pending tables, until ``forget``
        self.mirrors = MirrorCommits(self.store, self._kept, app_id, self.cadence, self.mirror_configuration)
        self.histories = HistoryCommits(self.store, self.mirrors)  # the tables' histories (lake.mirror.history)
        self.seq = ChangeSequence()  # the change log's numbering (sluice.lake.changelog.sequence)

    @property
    def waiting(self) -> dict[str, float]:
        """``db.table`` -> when the oldest change pending for its mirror was written (epoch seconds):
        what a plain reader of the mirror has not seen yet, for the tables this writer committed to."""
        return self.mirrors.waiting

    def table(self, path: str) -> DeltaTable | None:
        """The Delta table at ``path`` in the lake, None when there is none (one read of its log)."""
        try:
            return DeltaTable(path, storage_options=self.options)
        except TableNotFoundError:
            return None

    def forget(self) -> None:
        """Read every table afresh from now on: a DDL or a snapshot may have removed a mirror and
        made it again at its path (``sluice.lake.kept_table``)."""
        self._kept.forget()

    def sole_writer(self) -> None:
        """From now on this writer alone commits to the lake (it holds its lease, ``sluice.lake.lease``):
        each table is read once more and then moved by its own commits (``sluice.lake.kept_table``)."""
        if not self._kept.sole:
            self._kept.forget()
            self._kept.sole = True

    def stale(self, path: str) -> None:
        """The table at ``path`` was committed to through another handle (a maintenance step):
        its kept table reads the new commits at its next use."""
        self._kept.stale(path)

    def current(self, path: str) -> DeltaTable | None:
        """The Delta table at ``path`` in the lake as of its newest version, None when there is none:
        kept between calls and brought up to date (its new commits read) at each."""
        return self._kept.get(path).current()

    def create_mirror(self, db: str, table: str, columns: Sequence[MirrorColumn]) -> bool:
        """Create the empty mirror of ``db.table`` with ``columns`` unless it has one: one commit (the
        log's first), so a kill leaves no mirror or a whole one. Whether it was created."""
        path = self.table_path(db, table)
        if self.table(path) is not None:
            return False
        try:
            DeltaTable.create(path, mirror_schema(columns), mode="ignore", storage_options=self.options,
                              configuration=self.mirror_configuration)
        except DeltaError as exc:
            raise DataLossError(
                f"creating the empty mirror of {db}.{table} ({path}) failed ({exc}); nothing was committed. "
                "Fix the cause (storage, permissions) and restart"
            ) from exc
        return True

    def table_path(self, db: str, table: str) -> str:
        """``ROOT/<db>/<table>``, the mirror of ``db.table`` (``Lake.mirror``)."""
        return self.store.mirror(db, table)

    def next_seq(self) -> int:
        """The first change-log ``seq`` no row holds or was claimed for (``sluice.lake.changelog.sequence``)."""
        kept = self._kept.get(self.changelog_path)
        return self.seq.next(kept.last_read if kept.last_read is not None else kept.current())

    def committed_batch(self) -> int | None:
        """The highest batch id fully committed (the change log's app transaction), None if none."""
        version = self._kept.get(self.changelog_path).transaction_version(self.app_id)
        return None if version is None else int(version)

    def write_batch(
        self, batch_id: int, tables: Sequence[TableBatch], *, changelog: pa.Table | None = None,
        changelog_files: Sequence[AddAction] | None = None, position: Checkpoint | None = None,
        fence: Callable[[DeltaTable | None], None] | None = None, histories: Sequence[HistoryBatch] = (),
    ) -> BatchResult:
        """MERGE every table's changes into its mirror (or append them to its pending changes, when
        the MERGE can wait), then append all changes to the change log.

        Everything is checked and planned before the first commit, so a ``SchemaError`` leaves the
        lake untouched. A table (or the change log) that already holds ``batch_id`` is skipped.
        ``changelog``: the batch's change-log rows already built (``CHANGELOG_SCHEMA``, ordered by
        ``(file, pos, row)``), e.g. from a Spark batch whose images are JSON already;
        ``changelog_files``: or the change-log files executors wrote into its folder
        (``sluice.spark.source.staging``), committed as they are, numbered already. ``position``: the
        stream offset the batch ends at, recorded in the change log's commit (``committed_position``)
        with the highest ``seq`` it then holds (rows built here are numbered after it). ``fence``: called
        with the change log as read before the first commit, it raises when the batch must not commit;
        the change log's commit then lands on exactly that version or fails (``LakeBusyError``).
        ``histories``: the batch's versions for the tables that keep a history, committed before the
        mirrors (``sluice.lake.mirror.history``).
        """
        if isinstance(batch_id, bool) or not isinstance(batch_id, int) or batch_id < 0:
            raise ConfigError(f"batch id must be an integer >= 0, got {batch_id!r}")
        with _gc_paused():
            return self._write_batch(batch_id, tables, changelog, changelog_files, position, fence, histories)

    def _write_batch(self, batch_id: int, tables: Sequence[TableBatch], changelog: pa.Table | None,
                     files: Sequence[AddAction] | None, position: Checkpoint | None,
                     fence: Callable[[DeltaTable | None], None] | None,
                     histories: Sequence[HistoryBatch] = ()) -> BatchResult:
        seen: set[tuple[str, str]] = set()
        for tb in tables:
            if (tb.db, tb.table) in seen:
                raise ConfigError(
                    f"{tb.db}.{tb.table} appears twice in batch {batch_id}: give one TableBatch per table"
                )
            seen.add((tb.db, tb.table))
        # Every commit lands on the version its table was read at, or fails: a writer that lost the
        # lake after its fence never commits over the new writer's commits (sluice.spark.pipeline.fence).
        txn = CommitProperties(app_transactions=[Transaction(self.app_id, batch_id)], max_commit_retries=0)
        # The histories are read and built first, from the mirrors as the batch before left them.
        history_plans = [p for hb in histories if (p := self.histories.plan(hb, batch_id)) is not None]
        plans: list[Planned] = []
        for tb in tables:
            if (tb.source is not None or tb.pieces) and changelog is None and files is None:
                raise ConfigError(
                    f"{tb.db}.{tb.table} comes with a MERGE source instead of its changes: give the batch's "
                    "change log too"
                )
            plans.append(self.mirrors.plan_table(tb, batch_id))
        committed = self.committed_batch()
        done = committed is not None and committed >= batch_id
        existing = self._kept.get(self.changelog_path).last_read  # as committed_batch() just read it
        if not done:
            done, existing = self._fenced(batch_id, existing, fence)
        log = changelog
        if not done and files is None and log is None:
            log = changelog_table(batch_id, [c for tb in tables for c in tb.changes])
        if not done and log is not None and log.num_rows:
            log = numbered(log, self.seq.next(existing))
        # commits from here on: the mirrors, side by side, then the change log (its version is the last
        # whole batch). Planning a commit read the set of tables with pending changes (MirrorCommits.pending_of), so
        # the threads share it and never list it themselves.
        run_at_once([partial(self.histories.commit, p, batch_id, txn) for p in history_plans],
                    self.cadence.commits_at_once)  # before any mirror: see sluice.lake.mirror.history
        results = tuple(run_at_once([self.mirrors.step(p, batch_id, txn) for p in plans], self.cadence.commits_at_once))
        if done:
            return BatchResult(batch_id, results, 0, True, dict(self.waiting))
        # The change log's commit says where the stream stands, atomically with it, and lands on the
        # version after the one read above or fails: a writer never commits past another's batch.
        high = self.seq.batch_high(existing, [f.stats for f in files or ()], log)
        metadata = {POSITION_KEY: position.to_text()} if position is not None else {}
        txn = CommitProperties(app_transactions=[Transaction(self.app_id, batch_id)], max_commit_retries=0,
                               custom_metadata={**metadata, **self.seq.metadata(high)} or None)
        before = None if existing is None else existing.version()
        if files is not None:
            before = self._commit_changelog(batch_id, files, txn, existing) - 1
            rows = sum(json.loads(f.stats)["numRecords"] for f in files)
        else:
            assert log is not None
            self._append_changelog(batch_id, log, txn, existing)
            rows = log.num_rows
        self.mirrors.remember(self.changelog_path, before, batch_id)
        self.seq.committed(-1 if before is None else before, high)
        return BatchResult(batch_id, results, rows, False, dict(self.waiting))

    def flush_all(self) -> int:
        """MERGE the pending changes of every table into its mirror (the pipeline stops), several
        tables at once; the rows MERGEd."""
        return self.mirrors.flush_all()

    def flush(self, db: str, table: str) -> int:
        """MERGE the pending changes of ``db.table`` into its mirror, before something else writes
        the mirror; the rows MERGEd."""
        return self.mirrors.flush(db, table)

    def _fenced(self, batch_id: int, existing: DeltaTable | None,
                fence: Callable[[DeltaTable | None], None] | None) -> tuple[bool, DeltaTable | None]:
        """Run ``fence`` on the change log as this writer last left it and, side by side, look for a
        commit after that version that is not this writer's (a sole writer lists no log before a
        batch; ``sluice.lake.kept_table``). When there is one, the change log is read again and the
        fence runs on it. Whether the batch is in the change log, and the change log as read."""
        kept = self._kept.get(self.changelog_path)
        probe = None
        if self._kept.sole and existing is not None:
            entry = f"{self.changelog_path}/_delta_log/{existing.version() + 1:020d}.json"
            probe = partial(self.store.get, self.store.key(entry))
        if probe is None:
            if fence is not None:
                fence(existing)
            return False, existing
        steps: list[Callable[[], object]] = [probe, partial(fence or (lambda _log: None), existing)]
        if run_at_once(steps, 2)[0] is None:  # no log entry after this writer's last commit
            return False, existing
        kept.stale()  # another commit: read the change log as it stands, and fence again on it
        committed = self.committed_batch()
        if committed is not None and committed >= batch_id:
            return True, kept.last_read
        existing = kept.last_read
        if fence is not None:
            fence(existing)
        return False, existing

    def _commit_changelog(self, batch_id: int, files: Sequence[AddAction], txn: CommitProperties,
                          table: DeltaTable | None) -> int:
        """Commit change-log files already in its folder (none still records the batch) to ``table``;
        the version committed."""
        try:
            return commit_files(self.changelog_path, files, txn, table, self.options)
        except DeltaError as exc:
            raise commit_error("the change log", batch_id, exc) from exc

    def _append_changelog(self, batch_id: int, log: pa.Table, txn: CommitProperties, table: DeltaTable | None) -> None:
        try:  # the kept table, when there is one, is brought up to date
            append_rows(self.changelog_path if table is None else table, log, txn, self.options)
        except DeltaError as exc:
            raise commit_error("the change log", batch_id, exc) from exc


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a batch builds its many small dicts and lists: its
    collections would rescan every live object of the batch again and again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

