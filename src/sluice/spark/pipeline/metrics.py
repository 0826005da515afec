"""Prometheus metrics of a running pipeline (``sluice run --metrics-port N``).

One registry per pipeline (never the process-wide default, so two pipelines in one process or a
test's second run do not collide), served over HTTP by ``prometheus_client``. The pipeline calls
:meth:`PipelineMetrics.batch` after every committed micro-batch and :meth:`lag` while it waits for
one, the snapshot calls
:meth:`snapshot_progress` after every chunk, the maintenance between batches
(``sluice.spark.pipeline.upkeep``) :meth:`table_size` and :meth:`maintained`, the progress loop
:meth:`in_flight` (the largest transaction read and not yet committed), and errors are counted by
their sluice error class.
Every name starts with ``sluice_``; what each one means is in its help text (``curl :N/metrics``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from sluice.errors import ConfigError
from sluice.spark.pipeline.stats import BatchWritten
from sluice.spark.source.in_flight import InFlight

__all__ = ["PipelineMetrics"]

_BATCH_SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class PipelineMetrics:
    """The metrics of one pipeline; ``serve`` exposes them on a port."""

    def __init__(self, pipeline: str) -> None:
        self.registry = r = CollectorRegistry()
        label = {"pipeline": pipeline}
        self.batches = Counter("sluice_batches", "Micro-batches committed to the lake", ["pipeline"],
                               registry=r).labels(**label)
        self.batch_seconds = Histogram(
            "sluice_batch_duration_seconds", "Time from a micro-batch's start to its commit in the lake",
            ["pipeline"], buckets=_BATCH_SECONDS, registry=r,
        ).labels(**label)
        self.changes = Counter("sluice_changes", "Row changes committed, per captured table and operation",
                               ["pipeline", "table", "op"], registry=r)
        self.ddl = Counter("sluice_ddl", "DDL statements applied to the mirror", ["pipeline"], registry=r).labels(
            **label)
        self.lag_seconds = Gauge(
            "sluice_lag_seconds", "Seconds the lake is behind the source: from the newest transaction commit of "
            "the last batch to its visibility in the lake, growing with the time since while no batch completes and "
            "the source has more", ["pipeline"], registry=r,
        ).labels(**label)
        self.lag_bytes = Gauge(
            "sluice_lag_bytes", "Bytes of binlog the server has written past the last committed position (same "
            "file; checked at most every 5 s)", ["pipeline"], registry=r,
        ).labels(**label)
        self.position = Gauge(
            "sluice_committed_position", "Binlog offset of the last committed change, labelled with its file",
            ["pipeline", "file"], registry=r,
        )
        self.snapshot_chunks = Gauge("sluice_snapshot_chunks", "Snapshot chunks in the plan", ["pipeline"],
                                     registry=r).labels(**label)
        self.snapshot_chunks_done = Gauge("sluice_snapshot_chunks_done", "Snapshot chunks written to the lake",
                                          ["pipeline"], registry=r).labels(**label)
        self.snapshot_rows = Gauge("sluice_snapshot_rows", "Rows the snapshot has written to the lake",
                                   ["pipeline"], registry=r).labels(**label)
        self.source_changes = Counter(
            "sluice_source_changes", "Times the source's server changed (a failover) and the stream went on by GTID",
            ["pipeline"], registry=r).labels(**label)
        self.errors = Counter("sluice_errors", "Errors that stopped the pipeline, by sluice error class",
                              ["pipeline", "error"], registry=r)
        self.retries = Counter(
            "sluice_retries", "Retries in committed batches: replication connections made again by the tasks "
            "(kind reconnect) and failed task attempts Spark ran again (kind task)", ["pipeline", "kind"], registry=r)
        self.table_files = Gauge("sluice_table_files", "Active data files of a lake table (db.table, "
                                 "_sluice.changes, _sluice.archive/...), when maintenance last looked at it",
                                 ["pipeline", "table"], registry=r)
        self.table_bytes = Gauge("sluice_table_bytes", "Bytes of a lake table's active data files, when maintenance "
                                 "last looked at it", ["pipeline", "table"], registry=r)
        self.mirror_staleness = Gauge(
            "sluice_mirror_staleness_seconds", "Age of the oldest change not yet MERGEd into a table's Delta "
            "mirror (held in its pending table): how far behind a plain reader of the mirror is; 0 when none "
            "waits", ["pipeline", "table"], registry=r)
        self.maintenance_last = Gauge(
            "sluice_maintenance_last_timestamp_seconds", "Unix time of the last maintenance step of each kind "
            "(compact, checkpoint, vacuum) that completed", ["pipeline", "kind"], registry=r)
        self.maintenance_steps = Counter("sluice_maintenance_steps", "Maintenance steps completed, by kind",
                                         ["pipeline", "kind"], registry=r)
        self.maintenance_failures = Counter("sluice_maintenance_failures", "Maintenance steps that failed, by kind",
                                            ["pipeline", "kind"], registry=r)
        self.largest_bytes = Gauge(
            "sluice_largest_transaction_bytes", "Binlog bytes of the largest transaction read from the source and "
            "not yet committed to the lake, the one being read included (so far); 0 when none", ["pipeline"],
            registry=r).labels(**label)
        self.largest_rows = Gauge(
            "sluice_largest_transaction_rows", "Row changes of captured tables in that transaction (so far)",
            ["pipeline"], registry=r).labels(**label)
        self._label = pipeline
        self._file: str | None = None
        self._server: Any = None

    def serve(self, port: int, host: str = "0.0.0.0") -> int:
        """Serve ``/metrics`` on ``host:port`` (0 picks a free port); returns the port."""
        try:
            self._server, _thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise ConfigError(f"--metrics-port {port}: cannot listen on {host}:{port} ({exc.strerror})") from None
        return int(self._server.server_port)

    def close(self) -> None:
        """Stop serving ``/metrics``, if served."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def batch(self, seconds: float, written: BatchWritten, lag_seconds: float | None, lag_bytes: int | None) -> None:
        """One committed micro-batch: its duration, ``(table, op, n)`` counts, DDL and last position."""
        self.batches.inc()
        self.batch_seconds.observe(seconds)
        for table, op, n in written.counts:
            self.changes.labels(self._label, table, op).inc(n)
        if written.ddl:
            self.ddl.inc(written.ddl)
        file, pos = written.file, written.pos
        if lag_seconds is not None:
            self.lag_seconds.set(lag_seconds)
        if lag_bytes is not None:
            self.lag_bytes.set(lag_bytes)
        if file is not None and pos is not None:
            if file != self._file and self._file is not None:
                self.position.remove(self._label, self._file)
            self._file = file
            self.position.labels(self._label, file).set(pos)

    def mirrors_waiting(self, waiting: dict[str, float], tables: Iterable[str]) -> None:
        """Each table's mirror staleness, read at each scrape: the time since its oldest pending change
        (``waiting``: db.table -> epoch seconds), 0 for the ``tables`` with none pending."""
        for table in tables:
            since = waiting.get(table)
            child = self.mirror_staleness.labels(self._label, table)
            child.set_function(_age(since))

    def in_flight(self, flight: InFlight | None) -> None:
        """Record the largest transaction in flight, as the source last reported it."""
        if flight is not None:
            self.largest_bytes.set(flight.largest_bytes)
            self.largest_rows.set(flight.largest_rows)

    def lag(self, seconds: float | None) -> None:
        """How far the lake is behind now (``PipelineStats.lag_now``)."""
        if seconds is not None:
            self.lag_seconds.set(seconds)

    def retried(self, reconnects: int, task_attempts: int) -> None:
        """Count a committed batch's reconnects and failed task attempts."""
        for kind, n in (("reconnect", reconnects), ("task", task_attempts)):
            self.retries.labels(self._label, kind).inc(n)  # zero too: the series exists from the first batch

    def table_size(self, table: str, files: int, size: int) -> None:
        """Record a lake table's active files and their bytes."""
        self.table_files.labels(self._label, table).set(files)
        self.table_bytes.labels(self._label, table).set(size)

    def maintained(self, kind: str, when: float) -> None:
        """Record a completed maintenance step of ``kind`` at Unix time ``when``."""
        self.maintenance_last.labels(self._label, kind).set(when)
        self.maintenance_steps.labels(self._label, kind).inc()

    def maintenance_failed(self, kind: str) -> None:
        """Count a maintenance step that failed."""
        self.maintenance_failures.labels(self._label, kind).inc()

    def snapshot_progress(self, done: int, total: int, rows: int) -> None:
        """Record the snapshot's chunks (planned, done) and the rows it has written."""
        self.snapshot_chunks.set(total)
        self.snapshot_chunks_done.set(done)
        self.snapshot_rows.set(rows)

    def error(self, exc: BaseException) -> None:
        """Count an error that stopped the pipeline, by its class name."""
        self.errors.labels(self._label, type(exc).__name__).inc()


def _age(since: float | None) -> Callable[[], float]:
    """Seconds since ``since`` (epoch seconds) whenever asked; always 0 for None."""
    if since is None:
        return lambda: 0.0
    return lambda: max(0.0, time.time() - since)
