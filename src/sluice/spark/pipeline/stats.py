"""The progress of a running pipeline: counts, lag and commit-to-visible latencies, updated after
every micro-batch (``sluice.spark.pipeline.runner``), and the one progress line ``sluice run`` prints."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from sluice.binlog.position import Checkpoint
from sluice.spark.source.in_flight import InFlight

__all__ = ["BatchWritten", "PipelineStats"]


@dataclass(frozen=True, slots=True)
class BatchWritten:
    """What one committed micro-batch wrote, as the metrics count it."""

    counts: list[tuple[str, str, int]]  # (db.table, insert|update|delete, changes), tables with changes
    ddl: int  # DDL statements the batch applied
    file: str  # the binlog position after its last change
    pos: int


@dataclass
class PipelineStats:
    """Progress of a running pipeline, updated after every micro-batch."""

    batches: int = 0
    rows: int = 0
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    skipped_batches: int = 0
    reconnects: int = 0  # replication connections the tasks of committed batches made again
    task_retries: int = 0  # failed attempts of those tasks that Spark ran again
    ops: dict[str, int] = field(default_factory=lambda: {"insert": 0, "update": 0, "delete": 0})
    unmirrorable: set[str] = field(default_factory=set)
    tables: set[str] = field(default_factory=set)
    started: float = field(default_factory=time.monotonic)
    last_commit_lag: float | None = None  # seconds from the newest commit in the batch to its visibility
    # Unix time the lake was last known as current as last_commit_lag says: the end of the last batch,
    # or a moment the query had nothing new to read (``current``).
    current_at: float | None = None
    lag_bytes: int | None = None
    # (commit-to-visible seconds, changes) of the last transactions: bounded, a run may last months
    latencies: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=100_000))
    first_batch: float | None = None  # monotonic start of the first batch that carried changes
    last_batch: float | None = None  # ... and end of the last one
    driver_seconds: float = 0.0  # of those batches, the driver's part: DDL, folds, MERGEs and commits
    in_flight: InFlight | None = None  # what the source was reading at the last report
    waiting: dict[str, float] = field(default_factory=dict)  # db.table -> its oldest pending change's time

    @staticmethod
    def source_moved(before: Checkpoint | None, after: Checkpoint | None) -> str | None:
        """``source changed: server … → …, resuming at GTID set …`` when a batch that goes on from
        ``before`` (the lake's last committed position) and ends at ``after`` was read on another
        server (a failover), else None."""
        old = None if before is None else before.source
        new = None if after is None else after.source
        if before is None or old is None or new is None or old.same_server(new):
            return None
        return f"source changed: server {old} → {new}, resuming at GTID set {before.gtid_set}"

    def committed(self, batch: Any, counts: list[tuple[str, str, int]], result: Any, tables: list[str]) -> list[str]:
        """Count a committed batch (a ``StagedBatch``, its ``counts()``, the lake's ``BatchResult``, the
        ``db.table`` names it wrote); the tables without a primary key seen for the first time."""
        self.batches += 1
        for _, op, count in counts:
            self.ops[op] = self.ops.get(op, 0) + count
            self.rows += count
        self.inserted += result.inserted
        self.updated += result.updated
        self.deleted += result.deleted
        self.tables.update(tables)
        reconnects, task_retries = batch.retries()
        self.reconnects += reconnects
        self.task_retries += task_retries
        self.waiting = dict(result.waiting)
        new = [name for name in result.unmirrorable if name not in self.unmirrorable]
        self.unmirrorable.update(new)
        lags, changes = batch.latencies(int(time.time() * 1_000_000))
        self.latencies.extend(zip(lags.tolist(), changes, strict=True))
        self.last_commit_lag = float(lags.min())
        self.current()
        return new
    def latency(self, q: float) -> float | None:
        """The ``q`` quantile (0.5: the median) of commit-to-visible over the recent changes, seconds."""
        total = sum(n for _, n in self.latencies)
        if not total:
            return None
        seen = 0
        for lag, n in sorted(self.latencies):
            seen += n
            if seen > q * total:
                return lag
        return max(lag for lag, _ in self.latencies)

    @property
    def batch_seconds(self) -> float:
        """From the start of the first batch with changes to the end of the last: the steady part."""
        return 0.0 if self.first_batch is None or self.last_batch is None else self.last_batch - self.first_batch

    def current(self, now: float | None = None) -> None:
        """The lake holds everything the source has (a batch just committed, or the query found
        nothing new): the lag stops growing here."""
        self.current_at = time.time() if now is None else now

    def lag_now(self, now: float | None = None) -> float | None:
        """Seconds the lake is behind now: the last batch's commit-to-visible lag plus the time since
        the lake was last known current, so that while no batch completes it grows with the time since
        the newest change the lake holds was committed, instead of repeating the last figure."""
        if self.last_commit_lag is None or self.current_at is None:
            return self.last_commit_lag
        return self.last_commit_lag + max(0.0, (time.time() if now is None else now) - self.current_at)

    def line(self) -> str:
        """The one progress line: changes, rate, batches, tables and lag so far, and the transaction the
        source is reading, if any (a big one takes a while: its bytes and rows so far show it moving)."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        behind = self.lag_now()
        lag = "" if behind is None else f", lag {behind:.1f}s"
        lag_b = "" if self.lag_bytes is None else f" / {self.lag_bytes:,} bytes"
        retried = self.reconnects + self.task_retries
        retries = f", {self.reconnects} reconnects / {self.task_retries} task retries" if retried else ""
        reading = "" if self.in_flight is None or not self.in_flight.file else f", {self.in_flight.describe()}"
        behind_mirror = self.mirror_behind()
        mirror = "" if behind_mirror is None else f", mirror {behind_mirror[0]} behind {behind_mirror[1]:.0f}s"
        return (
            f"{self.batches} batches, {self.rows:,} changes ({self.rows / elapsed:,.0f}/s), "
            f"{len(self.tables)} tables{lag}{lag_b}{mirror}{retries}{reading}"
        )

    def mirror_behind(self, now: float | None = None) -> tuple[str, float] | None:
        """The Delta mirror furthest behind the lake's change log, and by how many seconds its oldest
        pending change has waited (``DeltaLake.waiting``); None when no mirror waits."""
        if not self.waiting:
            return None
        table, since = min(self.waiting.items(), key=lambda item: item[1])
        return table, max(0.0, (time.time() if now is None else now) - since)
