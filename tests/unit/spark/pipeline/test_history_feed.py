"""``--history`` on the driver (``sluice.spark.pipeline.history_feed``): a bad regex, a run that
would leave a history the lake keeps behind, and the regex the lake records (``capture.json``)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from sluice.cdc.filters import table_filter
from sluice.errors import ConfigError
from sluice.lake.layout import open_lake
from sluice.spark.pipeline.history_feed import HistoryFeed, history_pattern
from sluice.spark.pipeline.lake_state import LakeState
from sluice.spark.snapshot.state import RESYNC_HISTORY, SnapshotState

pytestmark = pytest.mark.unit


def test_a_bad_regex_is_a_config_error_and_none_keeps_no_history():
    assert history_pattern(None) is None
    with pytest.raises(ConfigError, match=r"matches 'db\.table' in full"):
        history_pattern("shop.(")


def test_a_run_must_take_every_captured_table_whose_history_the_lake_keeps(tmp_path):
    lake = open_lake(tmp_path)
    for db, t in (("shop", "orders"), ("shop", "items"), ("audit", "log")):
        write_deltalake(lake.history(db, t), pa.table({"id": [1]}))
    HistoryFeed(r"shop\..*", lake).check_lake(table_filter(r"shop\..*", None))  # audit is not captured
    HistoryFeed(r"shop\..*|audit\.log", lake).check_lake(None)
    with pytest.raises(ConfigError, match=r"history of shop\.items, which this run's --history does not take"):
        HistoryFeed(r"shop\.orders", lake).check_lake(table_filter(r"shop\..*", None))
    with pytest.raises(ConfigError, match=r"shop\.items, shop\.orders"):
        HistoryFeed(None, lake).check_lake(table_filter(r"shop\..*", None))
    HistoryFeed(None, lake).check_lake(None, streams=False)  # sluice snapshot: no batch, no history written


def test_the_lake_records_its_history_regex_and_refuses_another_once_it_keeps_one(tmp_path):
    """capture.json keeps the --history of the runs that stream; once the lake keeps a history, a
    streaming run with another regex (wider or narrower) is refused, a snapshot-only run is let be
    and leaves the lake's regex as it was."""
    lake = open_lake(tmp_path / "lake")

    def run(history: str | None, *, streams: bool = True) -> None:
        LakeState(lake, tmp_path / "cp", "mysql://u@h/", history=(history, streams))

    def recorded() -> object:
        return json.loads((tmp_path / "lake" / "_sluice" / "capture.json").read_text()).get("history")

    run(r"shop\.orders")
    assert recorded() == r"shop\.orders"
    run(r"shop\.(orders|items)")  # no history kept yet: the new regex
    assert recorded() == r"shop\.(orders|items)"
    write_deltalake(lake.history("shop", "orders"), pa.table({"id": [1]}))
    run(r"shop\.(orders|items)")
    with pytest.raises(ConfigError, match=r"keeps the histories of --history 'shop\\\\.\(orders\|items\)', this "
                                          r"run has --history 'shop\\\\..\*'"):
        run(r"shop\..*")
    with pytest.raises(ConfigError, match=r"this run has no --history: a table it adds"):
        run(None)
    run(None, streams=False)  # sluice run --snapshot only writes no history
    assert recorded() == r"shop\.(orders|items)"
    old = open_lake(tmp_path / "old")  # a lake whose capture.json records no --history (written before)
    old.put_json(old.CAPTURE, {"tables": None, "exclude_tables": None, "columns": None})
    write_deltalake(old.history("shop", "orders"), pa.table({"id": [1]}))
    LakeState(old, tmp_path / "cp2", "mysql://u@h/", history=(r"shop\..*", True))
    assert json.loads((tmp_path / "old" / "_sluice" / "capture.json").read_text())["history"] == r"shop\..*"


def test_tables_read_again_under_a_history_are_taken_then_cleared_once_compared(tmp_path):
    """The tables ``snapshot.json`` flags as read again under a history are the feed's to compare
    (none without --history, whose run writes no history); once compared, the flags go."""
    lake = open_lake(tmp_path)
    tables = {"shop.orders": {"key": ["id"], RESYNC_HISTORY: True}, "shop.items": {"key": ["id"]}}
    SnapshotState(None, tables, True).save(lake)
    feed = HistoryFeed(r"shop\..*", lake)
    feed.read_again(SnapshotState.load(lake))
    assert feed.resync == {("shop", "orders")}
    none = HistoryFeed(None, lake)
    none.read_again(SnapshotState.load(lake))
    none.resynced()
    assert not none.resync and SnapshotState.load(lake).history_resyncs() == {("shop", "orders")}
    feed.resynced()
    assert not feed.resync and SnapshotState.load(lake).history_resyncs() == set()
