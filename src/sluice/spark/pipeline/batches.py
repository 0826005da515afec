"""One micro-batch on the driver: what ``foreachBatch`` runs for each batch of ``sluice run``'s query.

``BatchCommits`` is the half of ``Pipeline`` that handles a batch once Spark hands it over: it
skips a batch the lake already holds (a replay after a crash), runs the batch's tasks with the batch
id and the lake's storage options as the job's local properties (``sluice.spark.source.staging``),
and commits what they staged: the DDL first (re-reading a table a DDL cannot be followed on), then
the histories of the tables that keep one (``sluice.spark.pipeline.history_feed``), each table's
MERGE or pending append and the change log last, fenced against another writer
(``sluice.spark.pipeline.fence``). The staged files, read into the table batches before the first
commit, are removed side by side with the commits (on an object store a LIST and a DELETE that the
batch need not wait for in turn). It then counts the batch (``PipelineStats``, the metrics) and
gives maintenance its turn. The query's lifecycle, the attributes these methods read, is
``Pipeline``'s (``sluice.spark.pipeline.runner``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from sluice.cdc.filters import table_filter
from sluice.cdc.schema import SchemaHistory
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.lake.changelog.rows import staged_rows
from sluice.lake.changelog.sequence import SEQ_PROPERTY, files_high
from sluice.lake.layout import Lake
from sluice.lake.mirror.routed import column_names
from sluice.lake.sink import DeltaLake
from sluice.spark.ddl.batch import BatchDdl
from sluice.spark.pipeline.config import PipelineConfig
from sluice.spark.pipeline.fence import BatchFence
from sluice.spark.pipeline.history_feed import HistoryFeed
from sluice.spark.pipeline.lake_state import LakeState
from sluice.spark.pipeline.staged_batch import StagedBatch, table_batches
from sluice.spark.pipeline.stats import BatchWritten, PipelineStats
from sluice.spark.pipeline.upkeep import Upkeep
from sluice.spark.snapshot.driver import SnapshotRunner
from sluice.spark.snapshot.filter import SnapshotFilter
from sluice.spark.snapshot.key_places import PlaceReader
from sluice.spark.snapshot.state import SnapshotState
from sluice.spark.source.staging import BATCH_PROPERTY, STORAGE_PROPERTY

__all__ = ["BatchCommits"]

log = logging.getLogger(__name__)


class BatchCommits:
    """The driver's part of each micro-batch (module docstring); ``Pipeline`` sets what it reads."""

    config: PipelineConfig
    metrics: Any
    stats: PipelineStats
    progress: Callable[[str], None]
    error: BaseException | None
    fence: BatchFence
    state: LakeState
    store: Lake
    lake: DeltaLake
    upkeep: Upkeep
    ddl: BatchDdl
    history_feed: HistoryFeed
    history_path: Any
    pipeline_id: str
    _stop: threading.Event
    _refused: bool
    _filter: SnapshotFilter | None
    _lag_checked: float
    _spark: Any
    _clearing: tuple[threading.Thread, list[BaseException]] | None = None  # the staged files being removed

    def _batch(self, df: Any, batch_id: int) -> None:
        if self._stop.is_set():
            # Spark began a batch after the stop was asked (batches can follow each other with no
            # gap to stop the query in): fail it before it reads anything, which ends the query and
            # leaves the batch, whose offsets Spark has logged, to the next run. run() reports no error.
            self._refused = True
            raise RuntimeError("the pipeline is stopping")
        started = time.monotonic()
        staging = self.store.staging(batch_id)
        try:
            self.lake.sole_writer()  # the stream runs under the lease: each table read once, then moved by its commits
            done = self.lake.committed_batch()
            if done is not None and done >= batch_id:  # replayed after a crash: whole in the lake already
                self.stats.skipped_batches += 1
                return
            context = df.sparkSession.sparkContext
            context.setLocalProperty(BATCH_PROPERTY, str(batch_id))  # the tasks' batch id (sluice.spark.source.staging)
            context.setLocalProperty(SEQ_PROPERTY, str(self.lake.next_seq()))  # and the batch's first change-log seq
            if self.store.options:
                context.setLocalProperty(STORAGE_PROPERTY, json.dumps(dict(self.store.options)))
            try:
                staged = df.toArrow()
            finally:
                context.setLocalProperty(BATCH_PROPERTY, None)
                context.setLocalProperty(SEQ_PROPERTY, None)
                context.setLocalProperty(STORAGE_PROPERTY, None)
            committing = time.monotonic()
            written = self._write(staged, batch_id)
        except BaseException as exc:
            self.error = self.fence.lost(exc)  # a writer that lost the lake says so, whatever failed first
            if self.metrics is not None:
                self.metrics.error(exc)
            if self.error is not exc:
                raise self.error from exc
            raise
        finally:
            self._staging_removed(staging)
        if written is not None:
            log.info("batch %d: tasks %.2fs, the driver's commits %.2fs", batch_id, committing - started,
                      time.monotonic() - committing)
            self.stats.first_batch = self.stats.first_batch or started
            self.stats.last_batch = time.monotonic()
            self.stats.driver_seconds += self.stats.last_batch - committing
        if self.metrics is not None and written is not None:
            self.metrics.batch(time.monotonic() - started, written, self.stats.last_commit_lag, self.stats.lag_bytes)
        self.upkeep.after_batch()  # the batch is committed: maintenance steps due, within their time budget

    def _write(self, staged: pa.Table, batch_id: int) -> BatchWritten | None:
        """Commit what the tasks staged (``sluice.spark.source.staging``): DDL first, then each table's MERGE,
        the change log last. The metrics of the batch, None when it was empty."""
        batch = StagedBatch(staged)
        if not batch.files:
            return None
        # the servers the ranges were read on: on another than the snapshot's chunks, compare by GTID set
        servers = [f.read_on for f in batch.files] + [f.range_end.source for f in batch.files if f.range_end]
        if self._filter:
            self._filter.stream_read_on(servers, self.fence.before)
        if batch.ddls:  # a DDL batch: a run of DDLs, or one with the rows of CREATE ... SELECT
            try:
                self._reread(self.ddl.apply(batch_id, batch.ddls, self._filter),
                             files_high([f.stats for f in batch.files]))
            finally:
                self.lake.forget()  # a mirror archived, moved or read again is a new table at its path
            if self._filter:  # a table read again made the filter anew
                self._filter.stream_read_on(servers, self.fence.before)
        rows_of = staged_rows(self.lake.changelog_path, [f.path for f in batch.files], self.store)
        history = SchemaHistory.open(self.history_path)  # once per batch, after its DDL
        cfg = self.config
        tables = table_batches(history, self.store, batch.tables, rows_of, self._filter, cfg.columns, cfg.routes,
                               table_filter(cfg.tables, cfg.exclude_tables), self._mirror_names,
                               lazy_rows=cfg.mirror.pass_rows)
        if not any(tb.pieces for tb in tables):  # all read (pieces are read by their MERGE): removed
            self._remove_staging(batch_id)  # side by side with the commits
        self.state.save_history()  # before the commit: a batch in the lake is typed by a history in the lake
        position = batch.range_end()
        source = position.source if position is not None else None
        versions = self.history_feed.batches(batch.files, tables, history, self._filter, ddl=bool(batch.ddls),
                                             end=batch.end())
        result = self.lake.write_batch(batch_id, tables, changelog_files=batch.changelog_actions(), position=position,
                                       fence=lambda log: self.fence.check(log, batch.start(), source),
                                       histories=versions)
        self.history_feed.resynced()
        stats = self.stats
        if not result.changelog_skipped:
            self.fence.committed(position)
            if (moved := stats.source_moved(self.fence.before, position)) is not None:  # said once: a batch
                self.progress(moved)  # replayed after a crash finds its commit there and says nothing
                if self.metrics is not None:
                    self.metrics.source_changes.inc()
        counts = batch.counts()
        names = [f"{b.db}.{b.table}" for b in tables]
        for name in stats.committed(batch, counts, result, names):
            self.progress(f"{name} has no primary key: written to the change log only, not mirrored")
        if self.metrics is not None:
            self.metrics.retried(*batch.retries())
            self.metrics.mirrors_waiting(stats.waiting, names)
        last_file, last_pos = batch.end()
        if time.monotonic() - self._lag_checked >= 5.0:  # one status query per 5 s, not per batch
            self._lag_checked = time.monotonic()
            stats.lag_bytes = self._lag_bytes(last_file, last_pos)
        return BatchWritten([c for c in counts if c[2]], len(batch.ddls), last_file, last_pos)

    def _remove_staging(self, batch_id: int) -> None:
        """Remove the batch's staged files on a thread of their own (``_staging_removed`` waits for it)."""
        staging, failed = self.store.key(self.store.staging(batch_id)), []

        def remove() -> None:
            try:
                self.store.delete_prefix(staging)
            except BaseException as exc:
                failed.append(exc)

        thread = threading.Thread(target=remove, name="sluice-staging", daemon=True)
        thread.start()
        self._clearing = (thread, failed)

    def _staging_removed(self, staging: str) -> None:
        """The batch's staged files are gone once this returns (removed here unless being removed)."""
        clearing, self._clearing = self._clearing, None
        if clearing is None:
            self.store.delete_prefix(self.store.key(staging))
            return
        clearing[0].join()
        if clearing[1]:
            raise clearing[1][0]

    def _mirror_names(self, name: tuple[str, str]) -> list[str] | None:
        """The column names of a mirror as the lake holds it (kept between batches), None: no mirror."""
        return column_names(self.lake.current(self.lake.table_path(*name)))

    def _reread(self, names: set[str], staged_seq: int | None) -> None:
        """Snapshot these tables again (a DDL the mirror cannot follow exactly), then renew the filter.
        A key-less table's ``read`` rows are numbered after the batch's staged rows (``staged_seq``)."""

        if not names:
            return
        runner = self._snapshot_runner(self._spark)
        runner.lake.seq.claim(staged_seq)
        self._snapshot_done(runner.run(only_new=True, only=frozenset(names)))

    def _snapshot_done(self, state: SnapshotState) -> None:
        """The stream's view of a finished snapshot: its filter, and the tables it read again under a history."""
        self._filter = SnapshotFilter(state, self._place_reader())
        self.history_feed.read_again(state)

    def _place_reader(self) -> PlaceReader | None:
        """What places a hashed snapshot key among its chunks (``sluice.spark.snapshot.key_places``)."""
        cfg = self.config
        return PlaceReader(cfg.source, self.history_path, cfg.columns) if cfg.columns is not None else None

    def _snapshot_runner(self, spark: Any, **extra: Any) -> SnapshotRunner:
        cfg = self.config
        return SnapshotRunner(spark, cfg.source, self.store, self.pipeline_id,
                              table_filter(cfg.tables, cfg.exclude_tables), chunk_rows=cfg.chunk_rows,
                              connections=cfg.snapshot_connections, progress=self.progress,
                              on_chunk=self.metrics and self.metrics.snapshot_progress, change_feed=cfg.change_feed,
                              columns=cfg.columns, routes=cfg.routes, **extra)

    def _lag_bytes(self, file: str, pos: int) -> int | None:
        try:
            with Connection.open(parse_dsn(self.config.source)) as conn:
                status = server_binlog_status(conn)
        except Exception:  # progress only: never fail a batch over it
            return None
        return status.pos - pos if status.file == file else None
