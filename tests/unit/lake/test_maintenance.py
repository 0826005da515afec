"""Maintenance of a lake's Delta tables (``sluice.lake.maintenance.steps``) on temporary tables.

Each test builds a real Delta table with delta-rs the way the pipeline writes one (appends and
MERGEs that carry an app transaction per batch), runs a step and reads the table back: the rows
are the same, the app transaction still answers, the change feed is unchanged.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from sluice.errors import ConfigError, MaintenanceError
from sluice.lake.maintenance.change_feed import CHANGE_FEED, enable_change_feed, has_change_feed, mirror_configuration
from sluice.lake.maintenance.steps import (
    LakeTable,
    MaintenanceConfig,
    checkpoint,
    compact,
    due_steps,
    inspect,
    run_step,
    vacuum,
)

pytestmark = pytest.mark.unit

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
APP = "sluice-test"


def _batches(path: Path, n: int, *, configuration: dict[str, str] | None = None) -> None:
    """``n`` batches of one insert each, every commit with the app transaction (APP, batch)."""
    for i in range(n):
        txn = CommitProperties(app_transactions=[Transaction(APP, i)])
        write_deltalake(str(path), pa.table({"id": [i], "v": [f"v{i}"]}, schema=SCHEMA), mode="append",
                        commit_properties=txn, configuration=configuration if i == 0 else None)


def _rows(path: Path) -> list[tuple[int, str]]:
    table = DeltaTable(str(path)).to_pyarrow_table()
    return sorted(zip(table["id"].to_pylist(), table["v"].to_pylist(), strict=True))


def _cdf(path: Path) -> list[tuple[int, str, int]]:
    feed = pa.table(DeltaTable(str(path)).load_cdf(0).read_all())
    return sorted(zip(feed["id"].to_pylist(), feed["_change_type"].to_pylist(),
                      feed["_commit_version"].to_pylist(), strict=True))


def test_compaction_checkpoint_and_log_cleanup_keep_rows_feed_and_app_transactions(tmp_path):
    path = tmp_path / "db" / "t"
    _batches(path, 20, configuration={CHANGE_FEED: "true", "delta.logRetentionDuration": "interval 0 seconds"})
    rows, feed = _rows(path), _cdf(path)
    config = MaintenanceConfig(min_small_files=4)
    table = LakeTable(str(path), "db.t", "mirror")
    before = inspect(table.uri, config)
    assert (before.files, before.small_files, before.version) == (20, 20, 19)
    assert due_steps(before, config, since_vacuum=None) == ["compact", "vacuum"]

    result = compact(table, config)
    assert result.done and "compacted 20 files into 1" in result.summary
    after = inspect(table.uri, config)
    assert after.files == 1 and after.version == 20
    assert _rows(path) == rows
    assert _cdf(path) == feed  # dataChange=false: the compaction adds nothing to the feed

    result = checkpoint(table, config)
    assert result.done
    time.sleep(0.05)
    checkpoint(table, config)  # cleanup runs after the checkpoint: the log before it is now expired
    log = sorted(os.listdir(path / "_delta_log"))
    assert "00000000000000000000.json" not in log, log  # the expired entries are gone...
    assert any(name.endswith(".checkpoint.parquet") for name in log)
    dt = DeltaTable(str(path))
    assert dt.transaction_version(APP) == 19  # ...but a replayed batch is still recognised
    assert _rows(path) == rows
    assert inspect(table.uri, config).checkpoint_version == dt.version()


def test_due_steps_follow_the_config(tmp_path):
    path = tmp_path / "t"
    _batches(path, 5)
    config = MaintenanceConfig(min_small_files=6, checkpoint_interval=3, vacuum_interval=60)
    state = inspect(str(path), config)
    assert state.checkpoint_version == -1
    assert due_steps(state, config, since_vacuum=59) == ["checkpoint"]
    assert due_steps(state, config, since_vacuum=60) == ["checkpoint", "vacuum"]
    checkpoint(LakeTable(str(path), "t", "mirror"), config)
    assert due_steps(inspect(str(path), config), config, since_vacuum=0) == []
    five = MaintenanceConfig(min_small_files=5)
    assert due_steps(inspect(str(path), five), five, since_vacuum=0) == ["compact"]


def test_compaction_packs_one_tier_at_a_time_and_leaves_larger_files_alone(tmp_path):
    path = tmp_path / "t"
    rng = random.Random(5)
    # Incompressible values make file sizes predictable: a file of 600 rows is above 8 KiB.
    big = pa.table({"id": list(range(600)), "v": [f"{rng.getrandbits(64):016x}" for _ in range(600)]},
                   schema=SCHEMA)
    write_deltalake(str(path), big)
    _batches(path, 4)
    config = MaintenanceConfig(target_file_size=64 << 10, small_file_size=8 << 10, min_small_files=4)
    table = LakeTable(str(path), "t", "changes")
    state = inspect(str(path), config)
    assert (state.small_files, state.medium_files) == (4, 1)
    medium = {u for u in DeltaTable(str(path)).file_uris() if os.path.getsize(u.removeprefix("file://")) >= 8 << 10}
    dry = compact(table, config, dry_run=True).summary
    assert dry.startswith("would compact 4 small files") and dry.endswith("into files of about 8.0 KB"), dry
    assert compact(table, config).summary == "compacted 4 files into 1"
    after = set(DeltaTable(str(path)).file_uris())
    assert medium <= after and len(after) == 2  # the larger file was not rewritten with the small ones
    assert due_steps(inspect(str(path), config), config, since_vacuum=0) == []
    # Files between the two sizes are packed once as many of them gathered.
    for _ in range(3):
        write_deltalake(str(path), big, mode="append")
    state = inspect(str(path), config)
    assert state.medium_files >= 4 and due_steps(state, config, since_vacuum=0) == ["compact"]
    assert compact(table, config).done
    assert inspect(str(path), config).medium_files < 4
    assert len(_rows(path)) == 4 * 600 + 4


def test_small_file_size_defaults_to_an_eighth_of_the_target_and_stays_below_it():
    assert MaintenanceConfig().small_file_size == 4 << 20
    assert MaintenanceConfig(target_file_size=1 << 20).small_file_size == 128 << 10
    with pytest.raises(ConfigError, match="small_file_size"):
        MaintenanceConfig(target_file_size=1 << 20, small_file_size=2 << 20)


def test_vacuum_keeps_what_the_retention_needs_and_removes_strays_past_it(tmp_path):
    path = tmp_path / "t"
    _batches(path, 6)
    table = LakeTable(str(path), "t", "mirror")
    compact(table, MaintenanceConfig(min_small_files=2))
    stray = path / "part-00000-stray-c000.zstd.parquet"  # a killed writer's file, in no commit
    stray.write_bytes(b"not committed")
    rows = _rows(path)
    kept = vacuum(table, MaintenanceConfig())
    assert kept.done and "deleted 0 files" in kept.summary
    assert stray.exists()
    short = MaintenanceConfig(retention_hours=0, allow_short_retention=True)
    dry = vacuum(table, short, dry_run=True)
    assert not dry.done and "would delete 7 files" in dry.summary  # 6 compacted away and the stray
    assert stray.exists()
    assert "deleted 7 files" in vacuum(table, short).summary
    assert not stray.exists()
    assert _rows(path) == rows
    assert DeltaTable(str(path)).transaction_version(APP) == 5


def test_a_short_retention_is_refused_unless_allowed():
    with pytest.raises(ConfigError, match="below Delta's default of 168 hours"):
        MaintenanceConfig(retention_hours=24)
    assert MaintenanceConfig(retention_hours=24, allow_short_retention=True).retention_hours == 24
    with pytest.raises(ConfigError, match="min_small_files"):
        MaintenanceConfig(min_small_files=0)
    with pytest.raises(ConfigError, match="budget"):
        MaintenanceConfig(budget=-1)


def test_dry_runs_change_nothing(tmp_path):
    path = tmp_path / "t"
    _batches(path, 4)
    table = LakeTable(str(path), "t", "mirror")
    config = MaintenanceConfig(min_small_files=2)
    version = DeltaTable(str(path)).version()
    assert compact(table, config, dry_run=True).summary.startswith("would compact 4 small files")
    assert checkpoint(table, config, dry_run=True).summary == f"would checkpoint version {version} and delete " \
                                                               "expired log entries"
    assert DeltaTable(str(path)).version() == version
    assert not any(n.endswith(".checkpoint.parquet") for n in os.listdir(path / "_delta_log"))


def test_a_failed_step_is_one_typed_error(tmp_path):
    table = LakeTable(str(tmp_path / "gone"), "db.gone", "mirror")
    with pytest.raises(MaintenanceError, match=r"^compact of db\.gone .* failed"):
        run_step("compact", table, MaintenanceConfig())


def test_change_feed_is_turned_on_once_for_an_older_mirror(tmp_path):
    path = tmp_path / "t"
    _batches(path, 2)
    assert not has_change_feed(DeltaTable(str(path)))
    assert enable_change_feed(str(path)) is True
    assert enable_change_feed(str(path)) is False
    dt = DeltaTable(str(path))
    assert has_change_feed(dt) and dt.transaction_version(APP) == 1
    txn = CommitProperties(app_transactions=[Transaction(APP, 2)])
    write_deltalake(str(path), pa.table({"id": [9], "v": ["new"]}, schema=SCHEMA), mode="append", commit_properties=txn)
    feed = pa.table(DeltaTable(str(path)).load_cdf(dt.version() + 1).read_all())
    assert feed["id"].to_pylist() == [9] and feed["_change_type"].to_pylist() == ["insert"]
    assert mirror_configuration(True) == {CHANGE_FEED: "true"} and mirror_configuration(False) is None
