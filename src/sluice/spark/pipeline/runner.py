"""The pipeline: a Structured Streaming query from the ``binlog`` source into a Delta lake.

``Pipeline.run()`` starts ``spark.readStream.format("binlog")`` on the source with
``option("stageTo", LAKE)``: every task writes its range's change-log file and each table's MERGE
source (the last state per primary key, typed) into the lake itself (``sluice.spark.source.staging``) and
Spark carries one descriptor row per file. Per micro-batch (``foreachBatch``, the methods
``Pipeline`` has of ``sluice.spark.pipeline.batches.BatchCommits``) the driver applies the batch's
DDL, folds each table's sources over the ranges (``sluice.spark.pipeline.staged_batch``),
MERGEs them into ``LAKE/<db>/<table>`` and then commits the change-log files to ``LAKE/_sluice/changes``
(``sluice.lake.sink``). A table whose changes need the per-row path (minimal images, partial
JSON updates) is built from the staged change-log rows. Each Delta commit records the batch id, so
a batch replayed after a crash is skipped where it was already written: exactly once.

The lake (a path or an object store, ``sluice.lake.storage``) keeps the pipeline's state in
``LAKE/_sluice/``: the schema history the source writes (``schema-history.jsonl``; a batch's tables
are typed from the schema in force at its first change, and no batch spans a schema change) and
``pipeline.json`` with the pipeline's id (the Delta app id). Spark's checkpoint needs a file system:
``--checkpoint-dir``, by default ``LAKE/_sluice/checkpoint`` when the lake is a path and a folder of
the machine's state directory when it is an object store. The source writes the schema history to
a file: for a lake on an object store that file lives beside the checkpoint and the driver copies it
into the lake, whole, before it commits a batch (and back, when the checkpoint is new). Deleting the
checkpoint does not start the lake over: every change-log commit records the stream offset its
batch ends at, and a checkpoint with no offset goes on from there under an app id of its own.
Before Spark starts, that position is checked on the server: a purged one stops the run with
``BinlogPurgedError``, or with ``--snapshot when-needed`` every captured table is snapshotted again
and the stream goes on from that snapshot (``sluice.spark.pipeline.stream_resume``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from sluice.binlog.position import Checkpoint, start_checkpoint
from sluice.cdc.filters import table_filter
from sluice.cdc.schema import SchemaHistory
from sluice.dsn import parse_dsn
from sluice.errors import BinlogPurgedError, ConfigError, LakeBusyError, SluiceError
from sluice.lake.sink import DeltaLake
from sluice.spark.ddl.batch import BatchDdl
from sluice.spark.pipeline.batches import BatchCommits
from sluice.spark.pipeline.config import PipelineConfig
from sluice.spark.pipeline.fence import BatchFence
from sluice.spark.pipeline.history_feed import HistoryFeed
from sluice.spark.pipeline.interrupts import StopSignals
from sluice.spark.pipeline.lake_state import LakeState, drop_unfinished_writes
from sluice.spark.pipeline.query import pipeline_session, stream_writer
from sluice.spark.pipeline.source_tables import check_source
from sluice.spark.pipeline.stats import PipelineStats
from sluice.spark.pipeline.stream_resume import (
    pipeline_remedy,
    purged_position,
    replaces,
    start_over,
    stream_position,
)
from sluice.spark.pipeline.upkeep import Upkeep
from sluice.spark.runtime.query_error import query_error
from sluice.spark.runtime.session import kill_driver, start_python_workers
from sluice.spark.snapshot.filter import SnapshotFilter
from sluice.spark.snapshot.state import SnapshotState, stream_start
from sluice.spark.source.in_flight import in_flight_file, read_in_flight, remove_in_flight

__all__ = ["Pipeline", "PipelineConfig", "PipelineStats"]

log = logging.getLogger(__name__)


class Pipeline(BatchCommits):
    """One streaming query from a server into a lake; ``run()`` blocks until it stops."""

    def __init__(self, config: PipelineConfig, *, progress: Callable[[str], None] | None = None,
                 metrics: Any = None) -> None:
        self.config = config
        self.metrics = metrics  # a PipelineMetrics (sluice run --metrics-port), or None
        self.stats = PipelineStats()
        self.progress = progress or (lambda text: log.info("%s", text))
        self._stop = threading.Event()
        self._signals: StopSignals | None = None
        self._refused = False  # a batch began after the stop was asked: left whole to the next run
        self.phase = "start"  # then "snapshot", "stream", "flush": where a stop asked for takes effect
        self._query: Any = None
        self._filter: SnapshotFilter | None = None  # the streamed changes the snapshot already holds
        self._lag_checked = 0.0  # when the source's binlog end was last asked (lag_bytes)
        self.error: BaseException | None = None
        self.fence = BatchFence()  # the lake's writer lease, and each batch's fence
        parse_dsn(config.source)  # a bad DSN fails here, before Spark starts
        self._key_file: str | None = None  # the hash key for the source's tasks, while the query runs
        self.state = LakeState(config.store, config.checkpoint_path, parse_dsn(config.source).redacted(),
                               (config.tables, config.exclude_tables), config.columns, config.routes, config.histories)
        self.store = self.state.store
        self.checkpoint_path = self.state.checkpoint_path
        self.history_path = self.state.history_path
        self.pipeline_id = self.state.pipeline_id
        self.app_id = self.state.app_id
        self.resume_at = self.state.resume_at
        if self.state.unknown_position is not None and config.starting_position == "earliest":
            batch, file, pos = self.state.unknown_position
            newest = f"; the newest change it holds is at {file}:{pos}" if file else ""
            raise ConfigError(
                f"the lake {self.state.store.uri} holds the stream's batches up to batch {batch}, but Spark's "
                f"checkpoint {config.checkpoint_path} holds no position and the lake's change log records none "
                f"(an earlier sluice wrote it){newest}. Starting over would write those changes "
                "twice: restore the checkpoint folder, or give --from FILE:POS where the stream should go on "
                "(the end of that change's transaction)")
        self.lake = DeltaLake(self.store, self.app_id, change_feed=config.change_feed, cadence=config.mirror)
        self.upkeep = Upkeep(self.lake.store, config.maintenance, progress=self.progress,
                             open_table=self.lake.current, committed_to=self.lake.stale)
        self.ddl = BatchDdl(self.lake, self.history_path, config.tables, config.exclude_tables, self.progress,
                            config.columns, config.routes)
        self.history_feed = HistoryFeed(config.history, self.store, config.columns)  # --history: SCD type 2
        self._spark: Any = None
        self._in_flight = ""  # the file the source reports what it reads and has not committed yet to

    # -- the query --------------------------------------------------------------------------------
    def snapshot(self, spark: Any, state: SnapshotState | None) -> str | None:
        """Run or resume the initial snapshot (``snapshot="initial"|"only"``) unless the stream has
        already started; ``state``: the lake's snapshot state, None when it has none. Returns where
        the stream must start, None when the snapshot does not decide."""

        cfg = self.config
        if cfg.snapshot == "never" and state is None:
            return None
        if state is None or cfg.snapshot != "never" or not state.complete:
            runner = self._snapshot_runner(spark, history=SchemaHistory.open(self.history_path),
                                           stopping=self._stop.is_set)
            # Once the stream runs, only tables added to the capture (or dropped from the snapshot by
            # `sluice snapshot` or by a DDL to re-read) are read; the stream then goes on from its
            # checkpoint. With --snapshot never, only a re-read a DDL started is finished here.
            only = frozenset(state.tables) if cfg.snapshot == "never" and state is not None else None
            state = runner.run(only_new=self.state.streamed(), only=only)
            self.state.save_history()
        if state.complete:
            self._snapshot_done(state)
            # Always the snapshot's start: Spark takes it only while its checkpoint holds no offset yet,
            # which is also the case after a crash before the first batch committed.
            return stream_start(state)
        return None

    def start(self) -> Any:
        """Take the lake (one writer at a time, ``sluice.lake.lease``), start Spark, the snapshot if one
        is due, then the streaming query (None after a snapshot only)."""

        cfg = self.config
        self.history_feed.check_lake(table_filter(cfg.tables, cfg.exclude_tables), streams=cfg.snapshot != "only")
        at, again = self._going_on()  # before anything is written: a purged position leaves the lake as it was
        self.fence.take(self.store, cfg.writer_lease, self._lost)
        if again:  # --snapshot when-needed: every captured table again, from a new start
            start_over(self.lake, table_filter(cfg.tables, cfg.exclude_tables))
        self.store.delete_prefix(self.store.STAGING)  # an earlier run's unfinished batch
        self.ddl.mirror.finish_move()  # a RENAME's move a kill cut short, before the snapshot looks for tables
        held = SnapshotState.find(self.store)
        if held is not None:
            held.finish_discards(self.store)  # a dropped read's mirror a kill left half removed, before any reads it
        drop_unfinished_writes(self.checkpoint_path)
        self.state.load_history()
        self.upkeep.metrics = self.metrics
        self.upkeep.start(change_feed=cfg.change_feed)
        check_source(cfg.source, cfg.tables, cfg.exclude_tables, self.progress, cfg.routes, cfg.columns)
        if not log.isEnabledFor(logging.DEBUG):  # a batch's error is reported once, by run(), not by py4j too
            logging.getLogger("py4j.clientserver").setLevel(logging.CRITICAL)
        spark = pipeline_session(cfg)
        if self._signals is not None:
            self._signals.install()  # in place of the SIGINT handler PySpark's SparkContext installed
        self._spark = spark
        starting = cfg.starting_position
        found = SnapshotState.find(self.store)
        if cfg.snapshot != "never" or found is not None:
            self.phase = "snapshot"
            after_snapshot = self.snapshot(spark, found)
            if after_snapshot is not None:
                starting = after_snapshot
                if replaces(at, SnapshotState.find(self.store)) is not None:
                    self._go_on_from_snapshot(at, after_snapshot)
        if self.resume_at is not None:  # the lake's last batch: nothing lost, nothing twice
            starting = self.resume_at.to_text()
            self.progress(f"Spark's checkpoint {self.checkpoint_path} holds no position: going on from the lake's "
                          f"last batch, {self.resume_at}")
        elif self.state.unknown_position is not None:  # an older lake's stream: --from says where it stood
            starting = cfg.starting_position
            self.progress(f"Spark's checkpoint {self.checkpoint_path} holds no position: going on from {starting}")
        if cfg.snapshot == "only" or self._stop.is_set():
            return None
        self.phase = "stream"
        # The tasks' Python workers come up while the query starts, not in its first batch, unless
        # nothing can be waiting (a new query from the server's end): on few cores starting them
        # delays the query's own start.
        if not (str(starting).strip().lower() == "latest" and not self.state.streamed()):
            start_python_workers(spark, ("sluice.spark.source.datasource", "sluice.spark.source.staging"))
        self._in_flight = in_flight_file()
        writer, self._key_file = stream_writer(
            spark, cfg, starting=str(starting), history=self.history_path, stage_to=self.lake.root,
            in_flight=self._in_flight, batch=self._batch, checkpoint=self.checkpoint_path)
        self._query = writer.start()
        return self._query

    def purged(self) -> tuple[Checkpoint | None, BinlogPurgedError | None]:
        """Where the stream goes on (None: it never ran) and what of it the server no longer has
        (None: nothing, or a snapshot begun after it replaces it; ``stream_resume``)."""
        cfg = self.config
        at = stream_position(self.checkpoint_path, self.resume_at)
        if at is None or replaces(at, SnapshotState.find(self.store)) is not None:
            return at, None
        purged = purged_position(cfg.source, at)
        return at, None if purged is None else purged.with_remedy(
            pipeline_remedy(cfg.source, self.store.uri, cfg.tables))

    def _going_on(self) -> tuple[Checkpoint | None, bool]:
        """Where the stream goes on, and whether every captured table is snapshotted again first
        (``--snapshot when-needed`` and a purged position); a purged position is raised otherwise
        (``sluice snapshot``, which runs with ``only``, has dealt with it)."""
        at, purged = self.purged()
        if purged is None or self.config.snapshot == "only":
            return at, False
        if self.config.snapshot != "when-needed":
            raise purged
        self.progress(f"{purged.facts}: snapshotting every captured table again (--snapshot when-needed), "
                      "then streaming on from that snapshot")
        return at, True

    def _go_on_from_snapshot(self, at: Checkpoint | None, start: str) -> None:
        """The snapshot of every captured table begun after the stream's position ``at`` replaces it:
        a new Spark checkpoint (the old one's offsets lead back to ``at``) and app id, from ``start``."""
        self.app_id = self.lake.app_id = self.state.new_checkpoint()
        self.resume_at = None
        # The DDL journal names a batch of the old numbering; the new one's batch of that number is another
        self.store.delete(self.store.DDL_JOURNAL)
        self.progress(f"the stream goes on from the snapshot's start {start_checkpoint(start, 'the snapshot')}, not "
                      f"from {at}: the snapshot of every captured table replaces it (Spark's checkpoint "
                      f"{self.checkpoint_path} started over)")

    def run(self, *, report_every: float = 5.0, handle_signals: bool = True,
            label: str = "sluice run") -> PipelineStats:
        """Run until stopped (Ctrl-C / SIGTERM: at the next batch boundary, a second Ctrl-C at once;
        ``sluice.spark.pipeline.interrupts``) or, with ``trigger="once"``, until everything available
        at the start is in the lake. ``label`` begins the lines the signals print."""
        if handle_signals and threading.current_thread() is threading.main_thread():
            self._signals = StopSignals(label, self.stop, lambda: self.phase, kill_driver)
            self._signals.install()
        try:
            query = self.start()
            if query is None:  # snapshot only
                return self.stats
            last = time.monotonic()
            while query.isActive:
                if self._stop.is_set():
                    self._stop_at_boundary(query)
                    break
                try:
                    query.awaitTermination(0.5)
                except Exception:  # the query ended with an error: reported as sluice's own below
                    break
                self._watch_lag(query)
                if time.monotonic() - last >= report_every:
                    last = time.monotonic()
                    self.stats.in_flight = read_in_flight(self._in_flight) if self._in_flight else None
                    if self.metrics is not None:
                        self.metrics.in_flight(self.stats.in_flight)
                    self.progress(self.stats.line())
            exc = query.exception()
            if exc is not None and self.error is None and not self._refused:
                raise query_error(exc, where=self.lake.root)
            if self.error is not None:
                if isinstance(self.error, Exception) and not isinstance(self.error, SluiceError):
                    raise query_error(self.error, where=self.lake.root) from self.error
                raise self.error
            self._flush()
        finally:
            if self._key_file is not None:
                os.unlink(self._key_file)
                self._key_file = None
            if self._in_flight:
                remove_in_flight(self._in_flight)
            if self._signals is not None:
                self._signals.restore()
                self._signals = None
            self.close()
        return self.stats

    def _watch_lag(self, query: Any) -> None:
        """Between batches: a query waiting with nothing new to read leaves the lake current; one
        planning or running a batch does not, and the lag grows (``PipelineStats.lag_now``)."""
        try:
            status = query.status
        except Exception:  # the query just ended: run()'s loop sees it
            return
        if not status.get("isTriggerActive") and not status.get("isDataAvailable"):
            self.stats.current()
        if self.metrics is not None:
            self.metrics.lag(self.stats.lag_now())

    def close(self) -> None:
        """Give the lake up: stop renewing the lease and release it (``run`` does this when it ends)."""
        self.fence.release()

    def _lost(self, exc: LakeBusyError) -> None:
        """Another writer took the lake: stop at once, with that error."""
        self.error = self.error or exc
        self.progress(str(exc))
        self.stop()

    def _flush(self) -> None:
        """At a clean stop, MERGE what is pending into the mirrors (``sluice.lake.mirror.pending``)."""
        self.phase = "flush"
        started = time.monotonic()
        rows = self.lake.flush_all()
        if rows:
            self.progress(f"mirrors: MERGEd {rows:,} pending changes in {time.monotonic() - started:.1f} s")

    def stop(self) -> None:
        """Ask the running query to stop after the batch in flight (``run()`` then returns)."""
        self._stop.set()

    def _stop_at_boundary(self, query: Any) -> None:
        deadline = time.monotonic() + 600
        while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
            time.sleep(0.1)
        query.stop()
