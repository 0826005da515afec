"""How the driver splits a planned batch into executor ranges (``BatchPlanner.ranges``), no server."""

from __future__ import annotations

import itertools

import pytest

from sluice.binlog.position import Checkpoint
from sluice.cdc.schema import Catalog
from sluice.spark.source import planner as planner_module
from sluice.spark.source.datasource import SourceOptions
from sluice.spark.source.planner import BatchPlanner, _Planned, offset_checkpoint

pytestmark = pytest.mark.unit


def planner_of(sizes: list[int], rows: list[int] | None = None, **options: object) -> BatchPlanner:
    catalog = Catalog(flavor="mysql")
    pending, pos = [], 4
    for i, size in enumerate(sizes):
        pending.append(_Planned(Checkpoint("binlog.000001", pos), Checkpoint("binlog.000001", pos + size),
                                rows[i] if rows else 0, size, False, catalog))
        pos += size
    opts = SourceOptions(dsn="mysql://u@127.0.0.1:3306/", **options)  # type: ignore[arg-type]
    return BatchPlanner(opts, pending[0].start, None, "mysql", pending=pending)  # type: ignore[arg-type]


def split(planner: BatchPlanner, per_rows: int = 100_000, per_bytes: int = 16 << 20) -> list[int]:
    """The ranges' sizes in transactions."""
    parts = planner.ranges(planner.pending[0].start, planner.pending[-1].end, per_rows, per_bytes)
    assert parts is not None
    starts = [p.start for p in planner.pending]
    bounds = [starts.index(offset_checkpoint(p.start)) for p in parts] + [len(starts)]
    return [b - a for a, b in itertools.pairwise(bounds)]


def test_a_batch_is_split_for_the_cores_but_not_below_a_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner_module, "_parallelism", lambda: 4)
    assert split(planner_of([10 << 10] * 40)) == [40]  # 400 KiB: one range, one task, one file
    assert split(planner_of([256 << 10] * 8)) == [4, 4]  # 2 MiB: ranges of at least 1 MiB
    assert split(planner_of([256 << 10] * 32)) == [8, 8, 8, 8]  # 8 MiB: one range per core
    assert split(planner_of([1 << 20] * 40)) == [10, 10, 10, 10]  # 40 MiB: a quarter each
    assert split(planner_of([1 << 20] * 80)) == [16] * 5  # 80 MiB: bytesPerPartition caps a range
    # Rows counted (maxRowsPerBatch): a smaller rowsPerPartition than the floor is the user's to set.
    counted = planner_of([100] * 10, rows=[10] * 10, max_rows=1000)
    assert split(counted, per_rows=20) == [2, 2, 2, 2, 2]
    assert split(planner_of([100] * 10, rows=[1000] * 10, max_rows=10**6)) == [10]  # 10k rows: one range


def test_the_planner_orders_checkpoints_by_position_key() -> None:
    # The base name changes between two planned transactions (binlog < mysql-bin by position_key),
    # where ordering by the numeric extension alone would put mysql-bin.000009 first.
    catalog = Catalog(flavor="mysql")
    first = _Planned(Checkpoint("binlog.000010", 4), Checkpoint("binlog.000010", 900), 0, 896, False, catalog)
    second = _Planned(Checkpoint("binlog.000010", 900), Checkpoint("mysql-bin.000009", 4), 0, 4, False, catalog)
    opts = SourceOptions(dsn="mysql://u@127.0.0.1:3306/")
    planner = BatchPlanner(opts, first.start, None, "mysql", pending=[first, second])  # type: ignore[arg-type]
    assert planner.choose_end(first.start, None, None, target=second.start) == first.end
    assert planner.choose_end(first.start, None, None, target=None) == second.end
    planner.drop_before(second.start)
    assert planner.pending == [second]


def test_transactions_that_change_no_captured_table_are_in_no_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner_module, "_parallelism", lambda: 1)
    sizes = [64 << 10] * 12
    planner = planner_of(sizes)
    captured = [False, True, False, True, False, False, True] + [False] * 5
    for p, c in zip(planner.pending, captured, strict=True):
        p.captured = c
    parts = planner.ranges(planner.pending[0].start, planner.pending[-1].end, 100_000, 16 << 20)
    assert parts is not None and len(parts) == 1
    # the range starts at the first transaction with changes, ends after the last, and reads
    # through the small gaps between them
    assert offset_checkpoint(parts[0].start) == planner.pending[1].start
    assert offset_checkpoint(parts[0].end) == planner.pending[6].end
    # a gap of 1 MiB of nothing captured splits the range, and no range reads it
    wide = planner_of([64 << 10] + [256 << 10] * 4 + [64 << 10])
    for p, c in zip(wide.pending, [True, False, False, False, False, True], strict=True):
        p.captured = c
    parts = wide.ranges(wide.pending[0].start, wide.pending[-1].end, 100_000, 16 << 20)
    assert parts is not None
    assert [(offset_checkpoint(p.start), offset_checkpoint(p.end)) for p in parts] == [
        (wide.pending[0].start, wide.pending[0].end), (wide.pending[5].start, wide.pending[5].end)]
    # a batch of nothing captured has no range; a DDL is always read
    for p in wide.pending:
        p.captured = False
    assert wide.ranges(wide.pending[0].start, wide.pending[-1].end, 100_000, 16 << 20) == []
    wide.pending[2].ddl = True
    parts = wide.ranges(wide.pending[0].start, wide.pending[-1].end, 100_000, 16 << 20)
    assert parts is not None and [offset_checkpoint(p.start) for p in parts] == [wide.pending[2].start]
    # not looked at (None): read, as before
    unknown = planner_of([64 << 10] * 3)
    parts = unknown.ranges(unknown.pending[0].start, unknown.pending[-1].end, 100_000, 16 << 20)
    assert parts is not None and offset_checkpoint(parts[0].start) == unknown.pending[0].start


class _Reads(Exception):
    """The planner went on to read the server."""


class _NoServer:
    """A capture that no read may reach."""

    @property
    def tracker(self) -> object:
        raise _Reads


def test_the_read_ahead_looks_past_the_batch_just_planned() -> None:
    """A DDL ends its batch; the read-ahead started for the next batch must not stop at it."""
    planner = planner_of([100, 1 << 20])
    planner.capture = _NoServer()  # type: ignore[assignment]
    ddl, after = planner.pending
    planner.pending[0] = _Planned(ddl.start, ddl.end, 0, ddl.size, True, ddl.catalog)
    planner.read_ahead(None, 1 << 20, None)  # what is pending holds a DDL: a batch ends there, nothing to read
    planner.read_ahead(None, 1 << 20, None, since=ddl.end)  # the next batch's MiB is planned already
    with pytest.raises(_Reads):
        planner.read_ahead(None, 2 << 20, None, since=ddl.end)  # past the DDL, short of the next batch's worth
    with pytest.raises(_Reads):
        planner.read_ahead(None, None, None, since=after.end)  # nothing after the last planned boundary


def test_a_batch_is_planned_once_the_read_ahead_decides_it_while_it_reads_on() -> None:
    """``wait_for_batch`` returns when what is planned from the start holds the batch whole (here:
    up to a DDL), not when the read-ahead thread stops; and the end it gives is the DDL's start."""
    import threading

    planner = planner_of([100, 100, 100, 100])
    first, second, ddl, after = planner.pending
    planner.pending = [first]
    release, added = threading.Event(), threading.Event()

    def read() -> None:  # the read-ahead thread: two transactions, then a DDL, then it stalls
        for p in (second, _Planned(ddl.start, ddl.end, 0, ddl.size, True, ddl.catalog)):
            with planner._lock:
                planner.pending.append(p)
                planner._lock.notify_all()
        added.set()
        release.wait(10)
        with planner._lock:
            planner.pending.append(after)
            planner._lock.notify_all()

    planner._thread = threading.Thread(target=read, daemon=True)
    planner._thread.start()
    planner.wait_for_batch(first.start, None, None, None)
    assert added.is_set() and planner.reading
    assert planner.choose_end(first.start, None, None, None) == second.end
    release.set()
    planner.join()
    assert [p.start for p in planner.pending] == [first.start, second.start, ddl.start, after.start]


def test_waiting_for_a_batch_ends_when_the_read_ahead_stops() -> None:
    """A start the planner never passed is not decided by anything it reads: the wait lasts until the
    thread stops, and ``latestOffset`` then joins it and reads afresh."""
    import threading
    import time

    planner = planner_of([100, 100])
    planner._thread = threading.Thread(target=time.sleep, args=(0.3,), daemon=True)
    planner._thread.start()
    planner.wait_for_batch(Checkpoint("binlog.000001", 50), None, None, None)
    assert not planner.reading, "the wait ended while the read-ahead still read an undecided batch"


def test_a_run_of_schema_changes_is_one_batch() -> None:
    """A DDL starts a batch that takes the DDL transactions after it while none changes a captured
    table's rows (a CREATE ... SELECT's rows are typed by the schema after it: such a DDL stays
    alone); whatever else comes next starts the next batch."""

    def planned(kinds: str) -> BatchPlanner:
        planner = planner_of([100] * len(kinds))
        marks = {"D": (True, False), "S": (True, True), "?": (True, None), "e": (False, False), "r": (False, True)}
        planner.pending = [_Planned(p.start, p.end, 1 if marks[k][1] else 0, p.size, marks[k][0], p.catalog,
                                    marks[k][1])
                         for p, k in zip(planner.pending, kinds, strict=True)]
        return planner

    def batch(kinds: str, target: int | None = None) -> int:
        """How many transactions the first batch takes."""
        planner = planned(kinds)
        ends = [p.end for p in planner.pending]
        end = planner.choose_end(planner.pending[0].start, None, None, None if target is None else ends[target - 1])
        return ends.index(end) + 1

    assert batch("DeDr") == 3  # two DDLs with an empty transaction between; the rows start the next batch
    assert batch("DDDe") == 3  # the empty transaction after the last DDL is the next batch's
    assert batch("DSD") == 1  # a CREATE ... SELECT with captured rows ends the run
    assert batch("SD") == 1  # and is a batch of its own
    assert batch("D?") == 1  # rows not counted (an ops filter): nothing is known to be empty
    assert batch("DDD", target=2) == 2  # never past the availableNow target
    assert batch("rrD") == 2  # rows, then the DDL's batch
