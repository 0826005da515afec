"""The driver side of the ``binlog`` stream: offsets, the planner that plans micro-batches, ranges.

Offsets are transaction-boundary checkpoints as JSON (``Checkpoint.to_json``); ``offset_checkpoint``
reads them back, and reads the ``{"file", "pos", "gtid"}`` form too, which offsets kept in Spark's
checkpoints and in the change log's commits may have (``"gtid"`` is ``""`` without GTIDs). ``BatchPlanner``
follows the server ahead of the query and remembers every transaction boundary it passed (with its
row count when rows are counted, its size in binlog bytes, whether it was a DDL, and the catalog in
force at its start); ``choose_end`` picks a batch's end within the read limits (a DDL is a batch of
its own) and ``ranges`` splits a batch into ``RangePartition``s for the executors: about
``rowsPerPartition`` rows or ``bytesPerPartition`` bytes each, and at least one per core. With
``inFlightTo`` it reports what it is reading (``in_flight``).

Between batches the read-ahead thread follows on from the binlog's end (``follow_on``), so that a
large transaction committed between two triggers is read before the next one asks for it; the next
``latestOffset`` ends that (``finish_reading``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import InputPartition

from sluice.binlog.position import Checkpoint, precedes, same_place
from sluice.cdc.capture import ChangeCapture
from sluice.cdc.follow import follow
from sluice.cdc.schema import Catalog
from sluice.errors import ConfigError
from sluice.spark.source.follow_on import FollowOn
from sluice.spark.source.in_flight import report_in_flight

if TYPE_CHECKING:
    from sluice.spark.source.options import SourceOptions

__all__ = ["BatchPlanner", "RangePartition", "offset_checkpoint"]


def offset_checkpoint(offset: Mapping[str, Any]) -> Checkpoint:
    """The checkpoint of a stream offset: ``Checkpoint.from_json``'s document, in either of its forms
    (module docstring); ``ConfigError`` for anything else."""
    try:
        return Checkpoint.from_json(offset)
    except ConfigError as exc:
        raise ConfigError(f"not a binlog offset: {offset!r}; {exc}") from None


@dataclass
class RangePartition(InputPartition):
    """Whole transactions from ``start`` to ``end`` (offsets), decoded with ``catalog`` at start;
    ``index``: the range's place in its batch, in binlog order."""

    start: dict[str, Any]
    end: dict[str, Any]
    catalog: dict[str, Any]
    flavor: str
    rows: int = 0
    index: int = 0


@dataclass
class _Planned:
    start: Checkpoint
    end: Checkpoint
    rows: int
    size: int
    ddl: bool
    catalog: Catalog
    captured: bool | None = None  # whether it changed a captured table's rows; None: not looked at

    @property
    def empty(self) -> bool:
        """Nothing for an executor to do: no change of a captured table, and no DDL."""
        return self.captured is False and not self.ddl


@dataclass
class BatchPlanner:
    """Driver side: follows the server ahead of the query, remembering transaction boundaries.

    After each ``latestOffset`` a thread goes on reading the next batch's worth while Spark runs
    the batch just planned, through the DDL transactions it meets (each starts a batch). The
    next ``latestOffset`` waits until what was read decides its batch (``wait_for_batch``), and
    joins the thread only when it has stopped; ``partitions`` / ``commit`` meanwhile touch
    ``pending`` under ``_lock`` only, which the thread notifies of every transaction it adds."""

    options: SourceOptions
    origin: Checkpoint
    capture: ChangeCapture
    flavor: str
    #: Whether the capture counts the captured tables' rows (so that a transaction counted 0 changed
    #: none): it then decodes no value, only walks the row images' lengths of those tables.
    counts_captured: bool = False
    pending: list[_Planned] = field(default_factory=list)
    at_end: bool = False
    _lock: threading.Condition = field(default_factory=threading.Condition)
    _thread: threading.Thread | None = None
    _failure: BaseException | None = None
    _stopping: bool = False
    _reporter: threading.Thread | None = None
    _following: FollowOn | None = None

    def in_flight(self) -> dict[str, Any]:
        """What was read and not yet committed (``sluice.spark.source.in_flight``): the open
        transaction of the capture, and the largest one read since the last commit, in bytes and rows."""
        with self._lock:
            largest = max(((p.size, p.rows) for p in self.pending), default=(0, 0))
        progress = self.capture.open_progress()
        opened = None
        if progress is not None:
            file, pos, size, rows = progress
            opened = {"file": file, "pos": pos, "bytes": size, "rows": rows}
            largest = max(largest, (size, rows))
        return {"open": opened, "largest_bytes": largest[0], "largest_rows": largest[1]}

    def read_ahead(self, want_rows: int | None, want_bytes: int | None, target: Checkpoint | None,
                   since: Checkpoint | None = None, *, through_ddl: bool = False) -> None:
        """Follow the binlog from the last boundary read until enough is planned from ``since``
        (default: from what is pending), a DDL transaction (which ends a batch) was seen there
        (unless ``through_ddl``), ``target`` or the binlog's end is reached."""
        with self._lock:
            pending = [p for p in self.pending if since is None or not precedes(p.start, since)]
        rows = sum(p.rows for p in pending)
        size = sum(p.size for p in pending)
        if ((want_rows is not None and rows >= want_rows) or (want_bytes is not None and size >= want_bytes)
                or (not through_ddl and any(p.ddl for p in pending))):
            return
        catalog = self.capture.tracker.catalog
        self.at_end = False
        if self.options.in_flight_to and self._reporter is None:
            self._reporter = report_in_flight(self.options.in_flight_to, self.in_flight, lambda: self._stopping)
        for committed in follow(self.options.follow_config(until_end=True), self.capture):
            tx = committed.transaction
            n = committed.row_count
            span = tx.end.pos - tx.start.pos if tx.end.file == tx.start.file else tx.end.pos
            with self._lock:
                self.pending.append(_Planned(tx.start, tx.end, n, span, tx.kind == "ddl", catalog,
                                             n > 0 if self.counts_captured else None))
                self._lock.notify_all()
            catalog = self.capture.tracker.catalog
            rows += n
            size += span
            if (want_rows is not None and rows >= want_rows) or (want_bytes is not None and size >= want_bytes):
                return
            if target is not None and not precedes(tx.end, target):
                return
            if (tx.kind == "ddl" and not through_ddl) or self._stopping:  # a DDL ends the batch
                return
        self.at_end = True

    def read_ahead_later(self, want_rows: int | None, want_bytes: int | None, target: Checkpoint | None,
                         since: Checkpoint, *, read_first: bool = True) -> None:
        """``read_ahead`` from ``since`` (the end of the batch just planned), through DDL
        transactions, in a thread, while Spark runs that batch; ``join`` waits for it. At the
        binlog's end, without a ``target``, the thread follows on (module docstring) until
        ``finish_reading``; ``read_first=False``: the planner is at the end already, and the thread
        only follows on."""
        following = self._following = (FollowOn(self.options.follow_config().connection, self._lock)
                                       if target is None else None)

        def run() -> None:
            try:
                if read_first:
                    self.read_ahead(want_rows, want_bytes, target, since, through_ddl=True)
                if following is not None:
                    following.run(lambda: self.at_end, lambda: self._stopping,
                                  lambda: self.read_ahead(want_rows, want_bytes, None, since, through_ddl=True))
            except BaseException as exc:  # raised by the next join, where a read would have raised it
                self._failure = exc
            finally:
                with self._lock:
                    self._lock.notify_all()

        self._thread = threading.Thread(target=run, name="sluice-binlog-planner", daemon=True)
        self._thread.start()

    def finish_reading(self) -> None:
        """The read-ahead thread stops following on (a read under way goes on to the binlog's end);
        ``wait_for_batch`` and ``join`` then see it end, or idle."""
        if self._following is not None:
            self._following.finish()

    @property
    def reading(self) -> bool:
        """Whether a ``read_ahead_later`` thread is still reading (not idle between reads)."""
        following = self._following
        return (self._thread is not None and self._thread.is_alive()
                and not (following is not None and following.idle))

    def wait_for_batch(self, start: Checkpoint, max_rows: int | None, max_bytes: int | None,
                       target: Checkpoint | None) -> None:
        """While a read-ahead thread reads, wait until what it planned from ``start`` decides the
        batch there: it holds a DDL, ``max_rows`` / ``max_bytes`` or reaches ``target``."""
        with self._lock:
            while self.reading and not self._decided(start, max_rows, max_bytes, target):
                self._lock.wait(0.5)

    def _decided(self, start: Checkpoint, max_rows: int | None, max_bytes: int | None,
                 target: Checkpoint | None) -> bool:
        """(``_lock`` held.) Whether ``choose_end(start, ...)`` can be taken from what is pending."""
        rows = size = 0
        first = True
        for p in self.pending:
            if precedes(p.start, start):
                continue
            if first and not same_place(p.start, start):
                return False  # not a boundary this planner passed
            first = False
            rows += p.rows
            size += p.size
            if (p.ddl or (target is not None and not precedes(p.end, target))
                    or (max_rows is not None and rows >= max_rows) or (max_bytes is not None and size >= max_bytes)):
                return True
        return False

    def join(self) -> None:
        """Wait for a ``read_ahead_later`` thread (not for one that finishes idle, which reads nothing
        more) and raise what it raised."""
        thread, following = self._thread, self._following
        self._thread = None
        # A thread asked to finish and idle reads nothing more: it ends on its own.
        if thread is not None and not (following is not None and following.idle and following.asked.is_set()):
            thread.join()
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def drop_before(self, start: Checkpoint) -> None:
        """Forget the planned transactions that start before ``start`` (already in a batch)."""
        with self._lock:
            self.pending = [p for p in self.pending if not precedes(p.start, start)]

    def choose_end(self, start: Checkpoint, max_rows: int | None, max_bytes: int | None,
                   target: Checkpoint | None) -> Checkpoint:
        """End of the batch from ``start`` within the row / byte limits. A DDL ends a batch and starts
        one of its own, which also takes the DDL transactions right after it while no transaction
        changes a captured table's rows (none of them has rows to type by the schema before the
        last one): a run of schema changes is one batch."""
        self.drop_before(start)
        with self._lock:
            pending = list(self.pending)
        end, rows, size = start, 0, 0
        ddl_run = False
        for p in pending:
            if target is not None and precedes(target, p.end):
                break
            if ddl_run:
                if p.captured is not False:
                    break
                if p.ddl:
                    end = p.end
                continue
            if p.ddl:
                if rows == 0 and size == 0:
                    end = p.end
                    ddl_run = p.captured is False
                    if ddl_run:
                        continue
                break
            if rows and max_rows is not None and rows + p.rows > max_rows:
                break
            if size and max_bytes is not None and size + p.size > max_bytes:
                break
            end, rows, size = p.end, rows + p.rows, size + p.size
        return end

    def ranges(self, start: Checkpoint, end: Checkpoint, per_partition: int,
               bytes_per_partition: int) -> list[RangePartition] | None:
        """Partitions for [start, end) from what was planned, or None if it was not: about
        ``per_partition`` rows each when rows were counted, else about ``bytes_per_partition``, and
        at least one range per core (of this machine) when the batch has enough transactions and
        each range would still hold 10,000 rows / 1 MiB. Transactions known to change no captured
        table are left out: a range neither starts nor ends with one, and where 1 MiB of them lie
        between two ranges no range reads them (a batch of nothing else has no range at all)."""
        with self._lock:
            pending = list(self.pending)
        chosen = [p for p in pending if not precedes(p.start, start) and not precedes(end, p.end)]
        if not chosen or not same_place(chosen[0].start, start) or not same_place(chosen[-1].end, end):
            return None
        # Rows are counted only under maxRowsPerBatch; planning by bytes decodes none (every count is 0).
        counted = self.options.max_rows is not None
        weights = [p.rows if counted else p.size for p in chosen]
        limit = per_partition if counted else bytes_per_partition
        # Split for the cores, but not below a floor: every range costs a task, a replication
        # connection and a change-log file, which a small batch (a 1 s trigger's) does not repay.
        floor = min(limit, _MIN_RANGE_ROWS if counted else _MIN_RANGE_BYTES)
        limit = max(1, floor, min(limit, -(-sum(weights) // _parallelism())))
        parts: list[RangePartition] = []
        group: list[_Planned] = []
        gap: list[_Planned] = []  # empty transactions after the group's last one
        weight = 0
        for p, w in zip(chosen, weights, strict=True):
            if p.empty:
                if group:
                    gap.append(p)
                continue
            if group and (weight + w > limit or sum(g.size for g in gap) >= _MIN_RANGE_BYTES):
                parts.append(self._range(group))
                group, gap, weight = [], [], 0
            group.extend(gap)  # read through: a range is whole consecutive transactions
            gap = []
            group.append(p)
            weight += w
        if group:
            parts.append(self._range(group))
        for index, part in enumerate(parts):
            part.index = index
        return parts

    def _range(self, group: list[_Planned]) -> RangePartition:
        return RangePartition(
            group[0].start.to_json(), group[-1].end.to_json(), group[0].catalog.to_json(), self.flavor,
            sum(g.rows for g in group),
        )


_MIN_RANGE_ROWS = 10_000
_MIN_RANGE_BYTES = 1 << 20


def _parallelism() -> int:
    """How many ranges a batch is split into at least: the cores of the machine (local mode)."""
    return max(1, os.cpu_count() or 1)
