"""``SnapshotFilter`` across a failover: once the chunks or the stream were read on two servers, a
change lies before a chunk's high watermark when its GTID is in the watermark's executed set; a
change without a GTID is a typed error; a table the lake's position has passed is left alone. And
``watermarks.nearest`` / ``recent``: the exact boundary a chunk's window is read forward from."""

from __future__ import annotations

import pytest

from sluice.binlog.position import Checkpoint, SourceIdentity
from sluice.cdc.records import RowChange
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.table_read.chunks import Chunk
from sluice.cdc.table_read.watermarks import nearest, recent
from sluice.errors import SourceChangedError
from sluice.spark.snapshot.filter import SnapshotFilter
from sluice.spark.snapshot.state import SnapshotState

pytestmark = pytest.mark.unit

OLD = SourceIdentity("mysql", "3e11fa47-71ca-11e1-9e33-c80aa9429562")
NEW = SourceIdentity("mysql", "4f22ab58-82db-22f2-af44-d91bba53a673")
U = OLD.server  # the GTIDs' server: the old primary wrote them, the new one logged them again


def _state(second: SourceIdentity = OLD) -> SnapshotState:
    """``d.t`` in two chunks, ids below 10 read up to GTID 1-20 on the old primary, the rest up to
    1-30 on ``second``."""
    schema = TableSchema("d", "t", (ColumnDef("id", "int", nullable=False),), ("id",))
    chunks = [Chunk("d", "t", 0, ("id",), None, (10,)), Chunk("d", "t", 1, ("id",), (10,), None)]
    done = {
        chunks[0].id: {"low": Checkpoint("b.000001", 100, f"{U}:1-10", OLD).to_json(),
                       "high": Checkpoint("b.000001", 500, f"{U}:1-20", OLD).to_json()},
        chunks[1].id: {"low": Checkpoint("b.000001", 400, f"{U}:1-18", second).to_json(),
                       "high": Checkpoint("b.000002" if second is OLD else "b.000007", 90, f"{U}:1-30",
                                          second).to_json()},
    }
    tables = {"d.t": {"schema": schema.to_json(), "key": ["id"], "chunks": [c.to_json() for c in chunks],
                      "done": done, "writing": None}}
    return SnapshotState(Checkpoint("b.000001", 100, f"{U}:1-10", OLD).to_json(), tables, True, "mysql")


def _update(key: int, gtid: str | None, file: str = "b.000009", pos: int = 4) -> RowChange:
    return RowChange("update", "d", "t", {"id": key}, {"id": key}, ("id",), file, pos, 0, gtid, 0)


def test_one_server_compares_by_position() -> None:
    snapshot_filter = SnapshotFilter(_state())
    snapshot_filter.stream_read_on([OLD, None], None)
    assert not snapshot_filter.by_gtid
    # by position, not by GTID: at b.000001:200 the first chunk already holds the change
    assert snapshot_filter.keep([_update(3, f"{U}:25", "b.000001", 200)]) == []


def test_a_batch_read_on_the_new_server_compares_by_gtid() -> None:
    snapshot_filter = SnapshotFilter(_state())
    snapshot_filter.stream_read_on([OLD, NEW, None], None)  # a range planned on the old, read on the new
    assert snapshot_filter.by_gtid
    assert snapshot_filter.covers("d", "t", "b.000009", 4)  # a position there says nothing
    held, new = _update(3, f"{U}:20"), _update(3, f"{U}:21")  # the first chunk holds GTIDs up to 20
    assert snapshot_filter.keep([held, new]) == [new]
    assert snapshot_filter.keep([_update(12, f"{U}:30"), _update(12, f"{U}:31")]) == [_update(12, f"{U}:31")]
    assert snapshot_filter.keep_source("d", "t", ("id",), _arrow()) is None  # staged rows carry no GTIDs


def test_chunks_read_on_two_servers_compare_by_gtid() -> None:
    snapshot_filter = SnapshotFilter(_state(NEW))
    assert snapshot_filter.by_gtid
    assert snapshot_filter.keep([_update(12, f"{U}:30", "b.000001", 100)]) == []


def test_a_change_without_a_gtid_is_a_typed_error_naming_both_servers() -> None:
    snapshot_filter = SnapshotFilter(_state(NEW))
    with pytest.raises(SourceChangedError, match=f"{OLD.server} and {NEW.server}.*new snapshot"):
        snapshot_filter.keep([_update(3, None)])
    with pytest.raises(SourceChangedError, match=r"DDL on d\.t"):
        snapshot_filter.read_after("d", "t", "b.000003", 4)


def test_a_watermark_without_its_gtid_set_is_a_typed_error() -> None:
    state = _state(NEW)
    state.tables["d.t"]["done"]["d.t#1"]["high"]["gtid_set"] = None
    with pytest.raises(SourceChangedError, match="carries no GTID set"):
        SnapshotFilter(state).keep([_update(12, f"{U}:31")])


def test_a_table_the_lake_has_passed_is_left_alone() -> None:
    snapshot_filter = SnapshotFilter(_state(NEW))
    snapshot_filter.stream_read_on([], Checkpoint("b.000007", 400, f"{U}:1-29", NEW))
    assert snapshot_filter.covers("d", "t", "b.000009", 4)  # GTID 30 of the second chunk is still ahead
    snapshot_filter.stream_read_on([], Checkpoint("b.000007", 500, f"{U}:1-30", NEW))
    assert not snapshot_filter.covers("d", "t", "b.000009", 4)
    change = _update(3, f"{U}:12")
    assert snapshot_filter.keep([change]) == [change]


def _arrow():
    import pyarrow as pa

    from sluice.lake.mirror.merge_source import CHANGE_FILE, CHANGE_POS

    return pa.table({"id": pa.array([3], pa.int32()), CHANGE_FILE: ["b.000009"], CHANGE_POS: pa.array([4], pa.int64())})


def test_the_nearest_exact_point_is_on_the_marks_server_and_not_after_it() -> None:
    start = Checkpoint("b.000001", 100, f"{U}:1-10", OLD)
    highs = [Checkpoint("b.000001", 500, f"{U}:1-20", OLD), Checkpoint("b.000002", 90, f"{U}:1-30", OLD),
             Checkpoint("b.000001", 900, f"{U}:1-25", NEW), Checkpoint("b.000001", 950, None, OLD)]
    points = [start, *highs]
    assert nearest(points, Checkpoint("b.000001", 800, None, OLD)) == highs[0]
    assert nearest(points, Checkpoint("b.000001", 900, None, NEW)) == highs[2]
    assert nearest(points, Checkpoint("b.000001", 100, None, OLD)) == start
    assert nearest(points, Checkpoint("b.000001", 50, None, OLD)) is None
    assert nearest(points, Checkpoint("b.000001", 800, None, None)) is None  # a mark of no known server
    kept = recent([*points, *(Checkpoint("b.000003", p, f"{U}:1-{p}", OLD) for p in range(40, 60))], kept=3)
    assert sorted((p.source.server, p.pos) for p in kept if p.source) == sorted(
        [(OLD.server, 57), (OLD.server, 58), (OLD.server, 59), (NEW.server, 900)])
