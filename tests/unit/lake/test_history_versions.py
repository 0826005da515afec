"""A table's history (SCD type 2): the versions one batch makes (``sluice.lake.mirror.versions``) and
their commits to a real Delta table in a temporary folder (``sluice.lake.mirror.history``), replayed
batches included. The pipeline's runs against real servers are in tests/integration/test_history.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.constants import ColumnType as T
from sluice.cdc.records import RowChange
from sluice.errors import SchemaError
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.mirror.history import HistoryBatch
from sluice.lake.mirror.versions import (
    CLOSE,
    END_AT,
    END_SEQ,
    START_AT,
    START_SEQ,
    Change,
    converted,
    resync,
    versions,
)
from sluice.lake.sink import DeltaLake
from sluice.lake.types.mirror_columns import MirrorColumn, mirror_columns

pytestmark = pytest.mark.unit


class _Map:
    column_types, column_meta, schema, table = (T.LONG, T.VARCHAR), (0, 200), "shop", "t"


COLUMNS: tuple[MirrorColumn, ...] = mirror_columns(_Map(), (ColumnInfo(name="id"), ColumnInfo(name="v", collation=255)))
KEY = ("id",)


def ins(i: int, v: str, us: int, seq: int) -> Change:
    return Change("insert", None, {"id": i, "v": v}, us, seq)


def upd(i: int, v0: str, j: int, v: str, us: int, seq: int) -> Change:
    return Change("update", {"id": i, "v": v0}, {"id": j, "v": v}, us, seq)


def dele(i: int, v: str, us: int, seq: int) -> Change:
    return Change("delete", {"id": i, "v": v}, None, us, seq)


def ts(us: int | None) -> datetime | None:
    return None if us is None else datetime.fromtimestamp(us / 1e6, UTC)


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return [(r["id"], r["v"], r[START_SEQ], r[END_SEQ]) for r in table.to_pylist()]


def test_every_change_of_a_key_in_one_batch_is_a_version_in_order():
    source = versions(COLUMNS, KEY, [ins(1, "a", 10, 1), upd(1, "a", 1, "b", 10, 2), upd(1, "b", 1, "c", 11, 3),
                                     dele(1, "c", 12, 4), ins(1, "d", 12, 5)])
    closes = source.filter(source.column(CLOSE))
    assert closes.num_rows == 1 and closes.column(END_SEQ).to_pylist() == [1]  # the version before the batch
    made = source.filter(pc.invert(source.column(CLOSE)))
    assert rows(made) == [(1, "a", 1, 2), (1, "b", 2, 3), (1, "c", 3, 4), (1, "d", 5, None)]
    assert made.column(START_AT).to_pylist() == [ts(10), ts(10), ts(11), ts(12)]
    assert made.column(END_AT).to_pylist() == [ts(10), ts(11), ts(12), None]


def test_a_key_change_closes_the_old_key_and_opens_the_new_one():
    source = versions(COLUMNS, KEY, [upd(1, "a", 2, "a", 20, 7), upd(3, "x", 3, "y", 21, 8)])
    closes = source.filter(source.column(CLOSE))
    assert sorted(zip(closes.column("id").to_pylist(), closes.column(END_SEQ).to_pylist(), strict=True)) == \
        [(1, 7), (2, 7), (3, 8)]
    made = source.filter(pc.invert(source.column(CLOSE)))
    assert rows(made) == [(2, "a", 7, None), (3, "y", 8, None)]


def test_a_minimal_image_takes_the_columns_of_the_version_before_it_in_the_batch():
    made = versions(COLUMNS, KEY, [ins(1, "a", 1, 1), Change("update", {"id": 1}, {"id": 5}, 2, 2)])
    assert rows(made.filter(pc.invert(made.column(CLOSE))))[-1] == (5, "a", 2, None)
    with pytest.raises(SchemaError, match="binlog_row_image=FULL"):  # nothing before it gives v
        versions(COLUMNS, KEY, [Change("update", {"id": 1}, {"id": 1}, 2, 2)])


def test_names_the_history_keeps_for_itself_and_keys_without_values_are_refused():
    own = mirror_columns(type("M", (), {"column_types": (T.LONG, T.LONG), "column_meta": (0, 0), "schema": "s",
                                        "table": "t"})(), (ColumnInfo(name="id"), ColumnInfo(name=START_AT)))
    with pytest.raises(SchemaError, match="keeps for itself"):
        versions(own, KEY, [])
    with pytest.raises(SchemaError, match="primary key"):
        versions(COLUMNS, KEY, [Change("insert", None, {"v": "a"}, 1, 1, "shop.t at f:4 row 0")])


def test_converted_leaves_history_ops_out_and_refuses_partial_json():
    change = RowChange("history", "shop", "t", None, {"id": 1, "v": "a"}, KEY, "f", 4, 0, None, 1)
    assert converted(COLUMNS, change, 1, 1) is None
    partial = RowChange("update", "shop", "t", {"id": 1}, {"id": 1}, KEY, "f", 4, 0, None, 1, {"v": []})
    with pytest.raises(SchemaError, match="PARTIAL_JSON"):
        converted(COLUMNS, partial, 1, 1)


def test_resync_makes_the_changes_from_the_current_versions_to_the_mirror():
    mirror = pa.table({"id": [1, 2, 3], "v": ["a", "B", "c"], "w": [None, None, 5]})
    current = pa.table({"id": [1, 2, 4], "v": ["a", "b", "d"], START_SEQ: [1, 2, 3]})
    changes = resync(COLUMNS, KEY, mirror, current, 100, 9, "shop.t")
    assert [(c.op, (c.after or c.before or {}).get("id")) for c in changes] == \
        [("update", 2), ("insert", 3), ("delete", 4)]
    assert all(c.at_us == 100 and c.seq == 9 for c in changes)
    dropped = pa.table({"id": [1], "v": ["a"], "gone": [7]})  # a column the mirror lost: the row changed
    assert [c.op for c in resync(COLUMNS, KEY, mirror.slice(0, 1), dropped, 1, 1, "")] == ["update"]


def _versions(lake: DeltaLake) -> pa.Table:
    """The history of shop.t by key, then version (the ones the history started with first)."""
    table = DeltaTable(lake.store.history("shop", "t")).to_pyarrow_table()
    return table.take(pc.sort_indices(table, [("id", "ascending"), (START_SEQ, "ascending", "at_start")]))


def _history(lake: DeltaLake) -> list[tuple[Any, ...]]:
    return rows(_versions(lake))


def _batch(lake: DeltaLake, batch_id: int, changes: list[Change], seed: int = 0) -> None:
    records = [RowChange(c.op, "shop", "t", dict(c.before) if c.before else None, dict(c.after) if c.after else None,
                         KEY, "binlog.000001", 100 + (c.seq or 0), 0, None, c.at_us // 1_000_000) for c in changes]
    lake.write_batch(batch_id, [TableBatch("shop", "t", COLUMNS, KEY, records)],
                     histories=[HistoryBatch("shop", "t", COLUMNS, KEY, changes, seed)])


def test_the_history_is_written_exactly_once_beside_the_mirror(tmp_path):
    lake = DeltaLake(tmp_path, "app")
    _batch(lake, 0, [ins(1, "a", 1, 0), ins(2, "b", 1, 1)])
    _batch(lake, 1, [upd(1, "a", 1, "a2", 2, 2), upd(1, "a2", 1, "a3", 2, 3), dele(2, "b", 3, 4)])
    want = [(1, "a", 0, 2), (1, "a2", 2, 3), (1, "a3", 3, None), (2, "b", 1, 4)]
    assert _history(lake) == want
    _batch(lake, 1, [upd(1, "a", 1, "a2", 2, 2), upd(1, "a2", 1, "a3", 2, 3), dele(2, "b", 3, 4)])  # replayed
    assert _history(lake) == want
    # a kill after the history's commit and before the change log's: the replay adds nothing twice
    batch2 = [upd(1, "a3", 3, "c", 4, 5)]
    plan = lake.histories.plan(HistoryBatch("shop", "t", COLUMNS, KEY, batch2, 0), 2)
    assert plan is not None
    lake.histories.commit(plan, 2, CommitProperties(app_transactions=[Transaction("app", 2)]))
    assert lake.committed_batch() == 1
    _batch(lake, 2, batch2)
    assert lake.committed_batch() == 2
    assert _history(lake) == [(1, "a", 0, 2), (1, "a2", 2, 3), (1, "a3", 3, 5), (2, "b", 1, 4), (3, "c", 5, None)]


def test_a_history_starts_from_the_mirror_and_follows_an_added_column(tmp_path):
    lake = DeltaLake(tmp_path, "app")
    lake.write_batch(0, [TableBatch("shop", "t", COLUMNS, KEY, [
        RowChange("insert", "shop", "t", None, {"id": 1, "v": "a"}, KEY, "binlog.000001", 4, 0, None, 1)])])
    _batch(lake, 1, [ins(2, "b", 5_000_000, 7)], seed=4_000_000)  # the history starts now, with the mirror's row
    assert _history(lake) == [(1, "a", None, None), (2, "b", 7, None)]
    started = DeltaTable(lake.store.history("shop", "t")).to_pyarrow_table().sort_by("id").column(START_AT)
    assert started.to_pylist() == [ts(4_000_000), ts(5_000_000)]
    # the mirror gains a column (a DDL's rewrite), and the history is compared with it at the DDL
    wider = mirror_columns(type("M", (), {"column_types": (T.LONG, T.VARCHAR, T.LONG), "column_meta": (0, 200, 0),
                                          "schema": "shop", "table": "t"})(),
                           (ColumnInfo(name="id"), ColumnInfo(name="v", collation=255), ColumnInfo(name="n")))
    write_deltalake(lake.store.mirror("shop", "t"), pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"],
                                                              "n": pa.array([0, 0], pa.int32())}),
                    mode="overwrite", schema_mode="overwrite")
    lake.forget()
    lake.write_batch(2, [], changelog=None, histories=[HistoryBatch("shop", "t", wider, KEY, (), 0, (6_000_000, 9))])
    table = _versions(lake)
    assert [(r["id"], r["n"], r[START_SEQ], r[END_SEQ]) for r in table.to_pylist()] == \
        [(1, None, None, 9), (1, 0, 9, None), (2, None, 7, 9), (2, 0, 9, None)]
