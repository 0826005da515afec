"""``SnapshotFilter.covers``: the stream's changes of a snapshotted table can be filtered only
before the last high watermark of its chunks; after it, the pipeline may take its column-wise path."""

from __future__ import annotations

import pytest

from sluice.binlog.position import Checkpoint
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.snapshot.chunks import Chunk
from sluice.spark.snapshot.filter import SnapshotFilter
from sluice.spark.snapshot.state import SnapshotState

pytestmark = pytest.mark.unit


def _state() -> SnapshotState:
    schema = TableSchema("d", "t", (ColumnDef("id", "int", nullable=False),), ("id",))
    chunks = [Chunk("d", "t", 0, ("id",), None, (10,)), Chunk("d", "t", 1, ("id",), (10,), None)]
    done = {
        chunks[0].id: {"low": Checkpoint("b.000001", 100).to_json(), "high": Checkpoint("b.000001", 500).to_json()},
        chunks[1].id: {"low": Checkpoint("b.000001", 400).to_json(), "high": Checkpoint("b.000002", 90).to_json()},
    }
    tables = {"d.t": {"schema": schema.to_json(), "key": ["id"], "chunks": [c.to_json() for c in chunks],
                      "done": done, "writing": None}}
    return SnapshotState(Checkpoint("b.000001", 100).to_json(), tables, True, "mysql")


def test_covers_only_before_the_last_high_watermark() -> None:
    snapshot_filter = SnapshotFilter(_state())
    assert snapshot_filter.covers("d", "t", "b.000001", 4000)
    assert snapshot_filter.covers("d", "t", "b.000002", 89)
    assert not snapshot_filter.covers("d", "t", "b.000002", 90)
    assert not snapshot_filter.covers("d", "t", "b.000003", 4)
    assert not snapshot_filter.covers("d", "other", "b.000001", 4000)
