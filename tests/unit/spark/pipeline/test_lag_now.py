"""The lag the progress line and ``sluice_lag_seconds`` show grows while no batch completes."""

import pytest

from sluice.spark.pipeline.stats import PipelineStats

pytestmark = pytest.mark.unit


def test_the_lag_grows_from_the_last_batch_until_the_lake_is_current_again():
    stats = PipelineStats()
    assert stats.lag_now() is None and ", lag" not in stats.line()
    stats.last_commit_lag = 0.2
    stats.current(now=1000.0)  # the batch committed
    assert stats.lag_now(now=1000.0) == pytest.approx(0.2)
    assert stats.lag_now(now=1045.0) == pytest.approx(45.2)  # stalled: the newest change is 45.2 s old
    stats.current(now=1045.0)  # the query found nothing new: the lake holds everything
    assert stats.lag_now(now=1046.0) == pytest.approx(1.2)
    stats.current()
    assert "lag 0.2s" in stats.line()
