"""``PipelineStats``: commit-to-visible quantiles weighted by the changes of each transaction, in
bounded memory; and the pipeline's clean-up of checkpoint writes a kill cut short."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sluice.binlog.position import Checkpoint, SourceIdentity
from sluice.spark.pipeline.stats import PipelineStats

pytestmark = pytest.mark.unit


def test_latency_quantiles_weigh_each_transaction_by_its_changes() -> None:
    stats = PipelineStats()
    assert stats.latency(0.5) is None
    stats.latencies.extend([(3.0, 1), (0.5, 8), (1.0, 1)])  # 10 changes: eight at 0.5 s
    assert stats.latency(0.5) == 0.5
    assert stats.latency(0.85) == 1.0
    assert stats.latency(0.95) == 3.0
    assert stats.latency(1.0) == 3.0


def test_latencies_stay_bounded() -> None:
    stats = PipelineStats()
    stats.latencies.extend((float(i), 1) for i in range(250_000))
    assert len(stats.latencies) == 100_000 and stats.latency(0.0) == 150_000.0


def test_unfinished_checkpoint_writes_are_dropped(tmp_path: Path) -> None:
    from sluice.spark.pipeline.lake_state import drop_unfinished_writes

    offsets = tmp_path / "checkpoint" / "offsets"
    offsets.mkdir(parents=True)
    kept = [offsets / "0", offsets / ".0.crc", tmp_path / "checkpoint" / "metadata"]
    dropped = [offsets / ".1.3f2a.tmp", offsets / "..1.3f2a.tmp.crc", tmp_path / "checkpoint" / ".metadata.9c.tmp"]
    for path in kept + dropped:
        path.write_text("x")
    drop_unfinished_writes(tmp_path / "checkpoint")
    assert all(p.exists() for p in kept) and not any(p.exists() for p in dropped)
    drop_unfinished_writes(tmp_path / "none")  # no checkpoint yet: nothing to do


def test_a_batch_read_on_another_server_than_the_lakes_last_says_source_changed() -> None:
    a = SourceIdentity("mysql", "3d687a2c-b38e-11ed-91ef-3f952e283fc3")
    b = SourceIdentity("mysql", "8a94f357-aab4-11df-86ab-c80aa9429562")
    on_a = Checkpoint("binlog.000003", 900, f"{a.server}:1-9", a)
    on_b = Checkpoint("binlog.000001", 300, f"{a.server}:1-9,{b.server}:1", b)
    moved = PipelineStats.source_moved
    assert moved(None, on_a) is None  # the lake's first batch
    assert moved(Checkpoint("binlog.000003", 400, f"{a.server}:1-5", a), on_a) is None
    assert moved(on_a, None) is None  # a batch without changes says nothing of its server
    assert moved(on_a, on_b) == f"source changed: server {a} → {b}, resuming at GTID set {a.server}:1-9"
    assert moved(on_b, Checkpoint("binlog.000001", 600, f"{a.server}:1-9,{b.server}:1-2", b)) is None
    assert moved(Checkpoint("binlog.000003", 900), on_b) is None  # a lake from before positions named a server


def test_the_progress_line_names_the_mirror_furthest_behind():
    from sluice.spark.pipeline.stats import PipelineStats

    stats = PipelineStats()
    assert stats.mirror_behind() is None and "mirror" not in stats.line()
    stats.waiting = {"shop.orders": 1000.0, "shop.items": 940.0}
    assert stats.mirror_behind(now=1060.0) == ("shop.items", 120.0)
    stats.waiting = {"shop.orders": time.time() - 30}
    assert "mirror shop.orders behind 30s" in stats.line()


def test_mirror_staleness_is_read_at_each_scrape():
    from sluice.spark.pipeline.metrics import PipelineMetrics

    metrics = PipelineMetrics("p")
    metrics.mirrors_waiting({"shop.items": time.time() - 5}, ["shop.items", "shop.orders"])

    def value(table: str) -> float | None:
        return metrics.registry.get_sample_value("sluice_mirror_staleness_seconds",
                                                 {"pipeline": "p", "table": table})

    first = value("shop.items")
    assert first is not None and 5 <= first < 60 and value("shop.orders") == 0.0
    time.sleep(0.2)
    assert value("shop.items") >= first + 0.2  # it grows between batches, not only at them
    metrics.mirrors_waiting({}, ["shop.items"])
    assert value("shop.items") == 0.0
