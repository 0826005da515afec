"""Where a stream goes on: Spark's checkpoint read back, and a snapshot that replaces the position."""

from __future__ import annotations

import json

import pytest

from sluice.binlog.position import Checkpoint, SourceIdentity
from sluice.spark.pipeline.stream_resume import replaces, spark_offset, stream_position
from sluice.spark.snapshot.state import SnapshotState

pytestmark = pytest.mark.unit

HERE = SourceIdentity("mysql", "3e11fa47-71ca-11e1-9e33-c80aa9429562")


def _offset(checkpoint, batch: int, at: Checkpoint) -> None:
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
    (checkpoint / "offsets" / str(batch)).write_text(f"v1\n{json.dumps(meta)}\n{at.to_text()}")


def test_the_next_batch_starts_after_the_last_committed_one(tmp_path):
    first = Checkpoint("binlog.000002", 400, "u:1-5", HERE)
    second = Checkpoint("binlog.000003", 4, "u:1-9", HERE)
    assert spark_offset(tmp_path) is None
    _offset(tmp_path, 0, first)
    assert spark_offset(tmp_path) is None  # batch 0 planned, not committed: its start is Spark's initial one
    (tmp_path / "commits").mkdir()
    (tmp_path / "commits" / "0").write_text("v1\n{}")
    assert spark_offset(tmp_path) == first
    _offset(tmp_path, 1, second)
    found = spark_offset(tmp_path)
    assert found == first and found is not None and found.source == HERE  # batch 1 is run again from there
    (tmp_path / "commits" / "1").write_text("v1\n{}")
    assert spark_offset(tmp_path) == second


def test_the_lake_says_where_a_checkpoint_without_offsets_goes_on(tmp_path):
    lake = Checkpoint("binlog.000002", 900, None)
    assert stream_position(tmp_path / "none", lake) == lake
    assert stream_position(tmp_path / "none", None) is None


def test_only_a_snapshot_begun_after_the_position_replaces_it():
    at = Checkpoint("binlog.000002", 900, "u:1-5", HERE)
    later = Checkpoint("binlog.000009", 4, "u:1-80", HERE)
    earlier = Checkpoint("binlog.000001", 4, "u:1-2", HERE)
    assert replaces(at, SnapshotState(start=later.to_json())) == later
    assert replaces(at, SnapshotState(start=earlier.to_json())) is None  # the first snapshot: the stream is past it
    assert replaces(at, SnapshotState(start=at.to_json())) is None
    assert replaces(at, SnapshotState()) is None and replaces(None, SnapshotState(start=later.to_json())) is None
