"""``--history`` on the driver (``sluice.spark.pipeline.history_feed``): a bad regex, and a run that
would leave a history the lake keeps behind."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from sluice.cdc.filters import table_filter
from sluice.errors import ConfigError
from sluice.lake.layout import open_lake
from sluice.spark.pipeline.history_feed import HistoryFeed, history_pattern

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
