"""Every place that orders binlog positions orders them as ``position_key`` does, also in the cases
where a rule of its own would tell them apart: files of two base names, and a numeric extension
past six digits (no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluice.binlog.position import Checkpoint, position_key
from sluice.cdc.schema import Catalog, SchemaHistory, SchemaTracker, apply_ddl
from sluice.cdc.schema.history import HistoryEntry

pytestmark = pytest.mark.unit

# (earlier, later) by position_key. Ordered by the extension alone, or by the whole name as text,
# the first two pairs come out the other way round.
PAIRS = [
    (("binlog.000010", 4), ("mysql-bin.000009", 900)),
    (("binlog.999999", 900), ("binlog.1000000", 4)),
    (("binlog.000009", 900), ("binlog.000010", 4)),
    (("binlog.000010", 4), ("binlog.000010", 5)),
]
IDS = [f"{a[0]}:{a[1]}<{b[0]}:{b[1]}" for a, b in PAIRS]

CATALOG = Catalog(server_charset="utf8mb4", server_collation="utf8mb4_0900_ai_ci", flavor="mysql")


def catalog(*statements: str) -> Catalog:
    out = CATALOG
    for sql in statements:
        out, outcome = apply_ddl(out, sql, "shop")
        assert outcome.understood, outcome
    return out


def names(c: Catalog | None, table: str) -> tuple[str, ...] | None:
    assert c is not None
    t = c.get("shop", table)
    return None if t is None else t.names


@pytest.mark.parametrize(("earlier", "later"), PAIRS, ids=IDS)
def test_checkpoints_and_history_entries_order_by_position_key(earlier: tuple[str, int],
                                                                later: tuple[str, int]) -> None:
    assert position_key(*earlier) < position_key(*later)
    assert Checkpoint(*earlier).key == position_key(*earlier)
    assert Checkpoint(*earlier).key < Checkpoint(*later).key
    entries = [HistoryEntry("change", *later), HistoryEntry("change", *earlier)]
    assert [(e.file, e.pos) for e in sorted(entries, key=lambda e: e.key)] == [earlier, later]


@pytest.mark.parametrize(("earlier", "later"), PAIRS, ids=IDS)
def test_schema_history_folds_in_position_key_order(tmp_path: Path, earlier: tuple[str, int],
                                                    later: tuple[str, int]) -> None:
    path = tmp_path / "schema.jsonl"
    history = SchemaHistory.open(path)
    before = catalog("CREATE TABLE t (a int)")
    history.record_bootstrap(*earlier, before)
    after = catalog("CREATE TABLE t (a int, b int)")
    history.record(*later, None, after, sql="ALTER TABLE t ADD b int", tables=[("shop", "t")])
    for opened in (history, SchemaHistory.open(path)):
        assert [e.kind for e in opened.entries] == ["bootstrap", "change"]
        assert names(opened.catalog_at(*earlier), "t") == ("a",)
        assert names(opened.catalog_at(later[0], later[1] + 1), "t") == ("a", "b")


@pytest.mark.parametrize(("earlier", "later"), PAIRS, ids=IDS)
def test_schema_tracker_replays_ddl_before_read_at_in_position_key_order(earlier: tuple[str, int],
                                                                         later: tuple[str, int]) -> None:
    # The server's catalog, read at `later`, has w(x, y); a CREATE TABLE IF NOT EXISTS w logged before
    # that made w (it did not exist then), one logged from there on is the server's no-op.
    today = catalog("CREATE TABLE w (x int, y int)")
    ahead = SchemaTracker(today, flavor="mysql", read_at=later)
    ahead.on_query("CREATE TABLE IF NOT EXISTS w (x int)", "shop", *earlier)
    assert names(ahead.catalog, "w") == ("x",)
    at = SchemaTracker(today, flavor="mysql", read_at=earlier)
    at.on_query("CREATE TABLE IF NOT EXISTS w (x int)", "shop", *later)
    assert names(at.catalog, "w") == ("x", "y")
