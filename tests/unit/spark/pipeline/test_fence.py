"""The fence of a batch's commit (``sluice.spark.pipeline.fence``): a batch that starts before the
end of the lake's last committed batch never commits, and two writers' change-log commits on one
version cannot both land."""

from __future__ import annotations

import pytest

from sluice.binlog.position import Checkpoint
from sluice.errors import LakeBusyError
from sluice.lake.changelog.schema import CHANGELOG_SCHEMA
from sluice.lake.sink import DeltaLake
from sluice.spark.pipeline.fence import BatchFence

pytestmark = pytest.mark.unit

FILE = "binlog.000003"


def _commit(lake: DeltaLake, fence: BatchFence, batch: int, first: int, end: int) -> None:
    position = Checkpoint(FILE, end)
    result = lake.write_batch(batch, [], changelog=CHANGELOG_SCHEMA.empty_table(), position=position,
                              fence=lambda log: fence.check(log, (FILE, first)))
    if not result.changelog_skipped:
        fence.committed(position)


def test_a_batch_that_starts_before_the_lakes_last_batch_ended_never_commits(tmp_path):
    mine = DeltaLake(tmp_path, "one")
    fence = BatchFence(None)
    _commit(mine, fence, 0, 100, 500)
    _commit(mine, fence, 1, 500, 900)  # starts where the last one ended
    other = DeltaLake(tmp_path, "two")  # a second writer that read from 100 again
    with pytest.raises(LakeBusyError, match=f"starts at {FILE}:100, before .*{FILE}:900"):
        _commit(other, BatchFence(None), 0, 100, 700)
    assert mine.committed_batch() == 1 and other.committed_batch() is None


def test_a_commit_between_the_fence_and_the_change_logs_commit_makes_the_batch_fail(tmp_path):
    DeltaLake(tmp_path, "zero").write_batch(0, [], changelog=CHANGELOG_SCHEMA.empty_table())
    one, two = DeltaLake(tmp_path, "one"), DeltaLake(tmp_path, "two")
    seen = []

    def race(log) -> None:  # "two" checked its fence; "one" commits before "two" does
        seen.append(log.version())
        _commit(one, BatchFence(None), 0, 100, 500)

    with pytest.raises(LakeBusyError, match="conflicted with another writer"):
        two.write_batch(0, [], changelog=CHANGELOG_SCHEMA.empty_table(), position=Checkpoint(FILE, 500),
                        fence=race)
    assert seen == [0] and two.committed_batch() is None and one.committed_batch() == 0


def test_the_fence_knows_where_each_batch_goes_on_from_its_own_or_another_runs(tmp_path):
    """``before``: the lake's last committed position as the check read it, which says whether a
    batch was read on another server than the lake's last (a failover), across a restart too."""
    lake = DeltaLake(tmp_path, "one")
    fence = BatchFence(None)
    _commit(lake, fence, 0, 100, 500)
    assert fence.before is None  # the lake's first batch
    _commit(lake, fence, 1, 500, 900)
    assert fence.before == Checkpoint(FILE, 500)
    restarted = BatchFence(None)  # a new run reads it from the change log
    _commit(DeltaLake(tmp_path, "one"), restarted, 2, 900, 1200)
    assert restarted.before == Checkpoint(FILE, 900)
