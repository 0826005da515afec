"""The pipeline's maintenance between batches (``sluice.spark.pipeline.upkeep``) on a lake of
temporary Delta tables: round robin over the tables, the time budget per batch boundary, the
metrics, the change feed turned on for older mirrors, and the log cleaned at checkpoints only."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from sluice.lake.maintenance.change_feed import has_change_feed
from sluice.lake.maintenance.steps import COMMIT_LOG_CLEANUP, MaintenanceConfig
from sluice.lake.sink import DeltaLake
from sluice.spark.pipeline.metrics import PipelineMetrics
from sluice.spark.pipeline.upkeep import Upkeep
from tests.unit.lake.test_pending import ALWAYS_LATER, random_batches, state
from tests.unit.lake.test_sink import items, read

pytestmark = pytest.mark.unit

TABLES = ("shop/a", "shop/b", "_sluice/changes")


def _lake(root, files=5):
    for folder in TABLES:
        for i in range(files):
            txn = CommitProperties(app_transactions=[Transaction("app", i)])
            write_deltalake(str(root / folder), pa.table({"id": [i]}), mode="append", commit_properties=txn)


class Clock:
    """A clock that moves ``step`` seconds each time it is read: every step "takes" time."""

    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


def test_steps_stay_within_the_budget_and_every_table_gets_its_turn(tmp_path):
    _lake(tmp_path)
    config = MaintenanceConfig(min_small_files=3, checkpoint_interval=1000, budget=0.5)
    metrics = PipelineMetrics("p")
    upkeep = Upkeep(str(tmp_path), config, metrics=metrics, clock=Clock(0.1))
    upkeep.after_batch()
    first = upkeep.steps_run
    assert 1 <= first < 2 * len(TABLES)  # a compaction and a vacuum per table: not all in one boundary
    for _ in range(10):
        upkeep.after_batch()
    assert upkeep.steps_run == 2 * len(TABLES) and upkeep.failures == 0
    for folder in TABLES:
        dt = DeltaTable(str(tmp_path / folder))
        assert len(dt.file_uris()) == 1 and dt.transaction_version("app") == 4
    sample = metrics.registry.get_sample_value
    assert sample("sluice_maintenance_steps_total", {"pipeline": "p", "kind": "compact"}) == 3
    assert sample("sluice_maintenance_steps_total", {"pipeline": "p", "kind": "vacuum"}) == 3
    assert sample("sluice_maintenance_last_timestamp_seconds", {"pipeline": "p", "kind": "compact"}) > 0
    assert sample("sluice_table_files", {"pipeline": "p", "table": "shop.a"}) in (1, 5)
    upkeep.after_batch()  # every table is looked at again: sizes after the compaction
    upkeep.after_batch()
    upkeep.after_batch()
    assert sample("sluice_table_files", {"pipeline": "p", "table": "_sluice.changes"}) == 1
    assert sample("sluice_table_bytes", {"pipeline": "p", "table": "shop.a"}) > 0


def test_no_budget_or_disabled_runs_nothing(tmp_path):
    _lake(tmp_path, files=3)
    for config in (MaintenanceConfig(min_small_files=2, budget=0), MaintenanceConfig(min_small_files=2, enabled=False)):
        upkeep = Upkeep(str(tmp_path), config)
        upkeep.after_batch()
        assert upkeep.steps_run == 0
    assert len(DeltaTable(str(tmp_path / "shop/a")).file_uris()) == 3


def test_checkpoints_follow_the_interval(tmp_path):
    _lake(tmp_path, files=4)
    upkeep = Upkeep(str(tmp_path), MaintenanceConfig(checkpoint_interval=3, budget=60))
    upkeep.after_batch()
    for folder in TABLES:
        assert (tmp_path / folder / "_delta_log" / "00000000000000000003.checkpoint.parquet").exists()
    steps = upkeep.steps_run
    upkeep.after_batch()  # nothing new: nothing due (the vacuum was a day ago at the earliest)
    assert upkeep.steps_run == steps


def test_a_checkpoint_is_not_taken_for_a_commit(tmp_path):
    """A checkpoint adds no commit, so the writer is not told to read its tables' logs again after
    one (it would read the new checkpoint for nothing); after a VACUUM or a setting, it is."""
    _lake(tmp_path, files=4)
    told: list[str] = []
    upkeep = Upkeep(str(tmp_path), MaintenanceConfig(checkpoint_interval=3, budget=60, look_interval=0),
                    committed_to=told.append)
    upkeep.after_batch()  # the first look: a VACUUM, the log's cleanup left to checkpoints, a checkpoint
    assert sorted(set(told)) == sorted(str(tmp_path / t) for t in TABLES)
    told.clear()
    for folder in TABLES:
        for i in range(3):
            write_deltalake(str(tmp_path / folder), pa.table({"id": [i]}), mode="append")
    steps = upkeep.steps_run
    upkeep.after_batch()  # only a checkpoint is due
    assert upkeep.steps_run == steps + len(TABLES)
    for folder in TABLES:
        assert DeltaTable(str(tmp_path / folder)).version() == 7
        assert (tmp_path / folder / "_delta_log" / "00000000000000000007.checkpoint.parquet").exists()
    assert told == []


def test_start_turns_the_change_feed_on_for_mirrors_only(tmp_path):
    _lake(tmp_path, files=1)
    upkeep = Upkeep(str(tmp_path), MaintenanceConfig())
    upkeep.start(change_feed=False)
    assert not has_change_feed(DeltaTable(str(tmp_path / "shop/a")))
    said = []
    upkeep.progress = said.append
    upkeep.start(change_feed=True)
    assert all(has_change_feed(DeltaTable(str(tmp_path / "shop" / t))) for t in "ab")
    assert not has_change_feed(DeltaTable(str(tmp_path / "_sluice/changes")))
    assert said == ["the mirror of shop.a now writes Delta's change data feed",
                    "the mirror of shop.b now writes Delta's change data feed"]


def _log_entries(table):
    return sorted(p.name for p in (table / "_delta_log").glob("*.json"))


def test_the_log_is_cleaned_at_checkpoints_not_at_every_commit(tmp_path):
    _lake(tmp_path, files=3)
    for folder in TABLES:  # entries expire a second after they are written
        DeltaTable(str(tmp_path / folder)).alter.set_table_properties(
            {"delta.logRetentionDuration": "interval 1 second"})
    upkeep = Upkeep(str(tmp_path), MaintenanceConfig(checkpoint_interval=1000, budget=60))
    upkeep.after_batch()
    for folder in TABLES:
        assert DeltaTable(str(tmp_path / folder)).metadata().configuration[COMMIT_LOG_CLEANUP] == "false"
    table = tmp_path / "shop/a"
    DeltaTable(str(table)).create_checkpoint()
    time.sleep(1.5)
    entries = _log_entries(table)
    write_deltalake(str(table), pa.table({"id": [9]}), mode="append")  # a commit leaves the expired entries
    assert _log_entries(table) == [*entries, f"{len(entries):020d}.json"]
    upkeep = Upkeep(str(tmp_path), MaintenanceConfig(checkpoint_interval=1, budget=60))
    upkeep.after_batch()  # the checkpoint step deletes them
    left = _log_entries(table)
    assert entries[0] not in left and left[-1] == f"{len(entries):020d}.json"
    assert DeltaTable(str(table)).transaction_version("app") == 2


def test_a_table_whose_commits_clean_its_log_is_left_so_when_maintenance_is_off(tmp_path):
    _lake(tmp_path, files=1)
    Upkeep(str(tmp_path), MaintenanceConfig(enabled=False)).after_batch()
    assert COMMIT_LOG_CLEANUP not in DeltaTable(str(tmp_path / "shop/a")).metadata().configuration


def test_looks_at_the_writers_tables_read_only_their_new_commits(tmp_path, monkeypatch):
    """With the writer's kept tables (``open_table``), a look and its steps read a mirror, its
    pending table and the change log incrementally; an archived mirror is read whole. The writer's
    next batches see what the steps committed."""
    lake = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)
    model = DeltaLake(tmp_path / "model", "p")
    batches = random_batches(11, 40)
    write_deltalake(str(tmp_path / "lake/_sluice/archive/shop/old@binlog.000001-4"), pa.table({"id": [1]}))
    config = MaintenanceConfig(min_small_files=4, checkpoint_interval=10, look_interval=0, rescan_interval=0)
    upkeep = Upkeep(lake.root, config, open_table=lake.current)
    whole: list[str] = []  # the tables the writer and the upkeep read whole, once every table exists
    counting = False
    init = DeltaTable.__init__

    def counted(self, table_uri, *args, **kwargs):
        if counting:
            whole.append(str(table_uri))
        init(self, table_uri, *args, **kwargs)

    monkeypatch.setattr(DeltaTable, "__init__", counted)
    for b, changes in enumerate(batches):
        counting = b > 3  # by then every table exists and was read once
        lake.write_batch(b, [items(changes)])
        upkeep.after_batch()
        counting = False
        model.write_batch(b, [items(changes)])
        assert state(lake) == read(model.table_path("shop", "items"))
    assert upkeep.steps_run > 10 and upkeep.failures == 0
    assert [u for u in whole if "/archive/" not in u] == [] and any("/archive/" in u for u in whole)
    monkeypatch.undo()
    for kind in ("shop/items", "_sluice/pending/shop/items", "_sluice/changes"):
        dt = DeltaTable(str(tmp_path / "lake" / kind))
        assert dt.metadata().configuration.get(COMMIT_LOG_CLEANUP) == "false"
        if kind != "shop/items":  # a commit a batch: checkpointed (the mirror waits, ALWAYS_LATER)
            assert (tmp_path / "lake" / kind / "_delta_log/_last_checkpoint").exists()
    assert len(DeltaTable(str(tmp_path / "lake/_sluice/changes")).file_uris()) < len(batches)  # compacted
    lake.flush_all()
    assert read(lake.table_path("shop", "items")) == read(model.table_path("shop", "items"))
