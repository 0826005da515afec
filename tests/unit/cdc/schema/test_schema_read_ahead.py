"""A catalog read after the start: the DDL logged between the start and ``read_at`` is already in
it, and ``SchemaTracker`` sorts each statement out as the capture meets it (no scan ahead)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from sluice.cdc.schema import Catalog, SchemaHistory, SchemaTracker, apply_ddl
from sluice.errors import ConfigError

pytestmark = pytest.mark.unit

READ_AT = ("b.000002", 100)


def catalog(*statements: str) -> Catalog:
    out = Catalog(server_charset="utf8mb4", server_collation="utf8mb4_0900_ai_ci", flavor="mysql")
    for sql in statements:
        out, outcome = apply_ddl(out, sql, "shop")
        assert outcome.understood, outcome
    return out


# The server now: t and w were created after the start (t then altered), u altered, v untouched.
TODAY = catalog(
    "CREATE TABLE t (a int PRIMARY KEY, b int)",
    "CREATE TABLE u (id int PRIMARY KEY, c int, d int)",
    "CREATE TABLE v (id int PRIMARY KEY)",
    "CREATE TABLE w (x int, y int)",
)


def names(tracker: SchemaTracker, table: str) -> tuple[str, ...] | None:
    t = tracker.catalog.get("shop", table)
    return None if t is None else t.names


def test_ddl_before_read_at_is_sorted_out_as_it_comes(caplog: pytest.LogCaptureFixture) -> None:
    tracker = SchemaTracker(TODAY, flavor="mysql", read_at=READ_AT)
    with caplog.at_level(logging.WARNING, logger="sluice.cdc.schema.tracker"):
        # Created after the start: replayed without today's definition, then altered as logged.
        tracker.on_query("CREATE TABLE t (a int PRIMARY KEY)", "shop", "b.000001", 50)
        assert names(tracker, "t") == ("a",)
        tracker.on_query("ALTER TABLE t ADD b int", "shop", "b.000001", 60)
        assert names(tracker, "t") == ("a", "b")
        # IF NOT EXISTS as the first statement on a table: it did not exist, so the server made it.
        tracker.on_query("CREATE TABLE IF NOT EXISTS w (x int)", "shop", "b.000001", 70)
        assert names(tracker, "w") == ("x",)
        # ... and once it exists it is the server's no-op again.
        tracker.on_query("CREATE TABLE IF NOT EXISTS t (q int)", "shop", "b.000001", 75)
        assert names(tracker, "t") == ("a", "b")
        # A rename's new name: made by the rename from the known definition, whatever it is today.
        tracker.on_query("CREATE TABLE s (k int)", "shop", "b.000001", 76)
        tracker.on_query("RENAME TABLE s TO v", "shop", "b.000001", 77)
        assert names(tracker, "v") == ("k",)
        tracker.on_query("DROP TABLE v", "shop", "b.000001", 78)
        tracker.on_query("CREATE TABLE v (id int PRIMARY KEY)", "shop", "b.000001", 79)
        assert caplog.records == []
        # Altered after the start: its earlier definition is unknown, and the user is told where.
        tracker.on_query("ALTER TABLE u ADD c int", "shop", "b.000001", 80)
        assert names(tracker, "u") == ("id", "c", "d")  # today's already has it
        tracker.on_query("ALTER TABLE u ADD d int", "shop", "b.000001", 85)
        assert names(tracker, "u") == ("id", "c", "d")
    [record] = caplog.records
    message = record.getMessage()
    for part in ("shop.u", "alter_table", "b.000001:80", "b.000002:100", "binlog_row_metadata=FULL"):
        assert part in message, (part, message)
    assert names(tracker, "v") == ("id",)
    assert not tracker.unparsed


def test_ddl_from_read_at_on_is_replayed_as_logged(caplog: pytest.LogCaptureFixture) -> None:
    tracker = SchemaTracker(TODAY, flavor="mysql", read_at=READ_AT)
    with caplog.at_level(logging.WARNING, logger="sluice.cdc.schema.tracker"):
        tracker.on_query("CREATE TABLE IF NOT EXISTS w (z int)", "shop", *READ_AT)
        tracker.on_query("ALTER TABLE u ADD e int", "shop", "b.000002", 200)
        tracker.on_query("CREATE TABLE IF NOT EXISTS v (z int)", "shop", "b.000001", 10)  # already past
    assert caplog.records == []
    assert names(tracker, "w") == ("x", "y")
    assert names(tracker, "v") == ("id",)
    # Dropped and made again: replayed as logged from there on.
    tracker.on_query("DROP TABLE u", "shop", "b.000001", 90)
    tracker.on_query("CREATE TABLE u (id int PRIMARY KEY)", "shop", "b.000001", 91)
    tracker.on_query("ALTER TABLE u ADD c int", "shop", "b.000001", 92)
    assert names(tracker, "u") == ("id", "c")


def test_a_schema_given_for_archived_files_is_later_than_all_of_them(caplog: pytest.LogCaptureFixture) -> None:
    """``read_later``: the files' DDL, wherever it is, is sorted out as before ``read_at``."""
    tracker = SchemaTracker(TODAY, flavor="mysql", read_later="shop.sql", positional="fallback")
    with caplog.at_level(logging.WARNING, logger="sluice.cdc.schema.tracker"):
        tracker.on_query("CREATE TABLE t (a int PRIMARY KEY)", "shop", "b.000900", 50)
        assert names(tracker, "t") == ("a",)
        tracker.on_query("ALTER TABLE u ADD c int", "shop", "z.999999", 80)
        assert names(tracker, "u") == ("id", "c", "d")
    [record] = caplog.records
    message = record.getMessage()
    for part in ("shop.u", "z.999999:80", "the schema of shop.sql", "read by position"):
        assert part in message, (part, message)


def test_without_read_at_the_catalog_is_the_one_at_the_start() -> None:
    tracker = SchemaTracker(TODAY, flavor="mysql")
    tracker.on_query("CREATE TABLE IF NOT EXISTS w (x int)", "shop", "b.000001", 70)
    assert names(tracker, "w") == ("x", "y")


def test_a_restart_takes_read_at_and_the_tables_met_from_the_history(tmp_path: Path) -> None:
    history = SchemaHistory.open(tmp_path / "h.jsonl")
    history.record_bootstrap("b.000001", 4, TODAY, READ_AT)
    first = SchemaTracker(TODAY, history, flavor="mysql", read_at=READ_AT)
    first.on_query("CREATE TABLE t (a int PRIMARY KEY)", "shop", "b.000001", 50)

    reopened = SchemaHistory.open(tmp_path / "h.jsonl")
    assert reopened.read_ahead("b.000001", 4) == (READ_AT, set())
    read_at, met = reopened.read_ahead("b.000001", 55)
    assert (read_at, met) == (READ_AT, {("shop", "t")})
    resumed = SchemaTracker(reopened.catalog_at("b.000001", 55), reopened, flavor="mysql", read_at=read_at, met=met)
    for tracker in (first, resumed):
        tracker.on_query("CREATE TABLE IF NOT EXISTS t (q int)", "shop", "b.000001", 60)
        tracker.on_query("CREATE TABLE IF NOT EXISTS w (x int)", "shop", "b.000001", 70)
    assert resumed.catalog == first.catalog
    assert names(resumed, "t") == ("a",) and names(resumed, "w") == ("x",)
    # An ALTER already in today's definition changes nothing, yet a restart after it knows the table.
    first.on_query("ALTER TABLE u ADD c int", "shop", "b.000001", 80)
    assert SchemaHistory.open(tmp_path / "h.jsonl").read_ahead("b.000001", 81)[1] >= {("shop", "u")}


def test_history_keeps_read_at_only_when_it_is_after_the_start(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    history = SchemaHistory.open(path)
    history.record_bootstrap("b.000001", 4, TODAY, READ_AT)
    history.record_bootstrap("b.000003", 4, TODAY, ("b.000003", 4))
    history.record_bootstrap("b.000004", 4, TODAY)
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert [line.get("read_at") for line in lines] == [{"file": "b.000002", "pos": 100}, None, None]
    assert SchemaHistory.open(path).read_ahead("b.000003", 50) == (None, set())


def test_a_damaged_read_at_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    SchemaHistory.open(path).record_bootstrap("b.000001", 4, TODAY, READ_AT)
    path.write_text(path.read_text().replace('"pos":100', '"pos":"x"'))
    with pytest.raises(ConfigError, match=r"line 2.*read_at"):
        SchemaHistory.open(path)
