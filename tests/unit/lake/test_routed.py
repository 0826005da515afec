"""A routed mirror's layout and batches (no server): the union of the routed tables' columns, a
column two tables type apart named with both definitions, and the tables' batches, column-wise and
per row, made the mirror's one batch with ``_source_db`` / ``_source_table`` (the change records
keeping their own table)."""

from __future__ import annotations

import re
from decimal import Decimal

import pyarrow as pa
import pytest

from sluice.cdc.records import RowChange
from sluice.cdc.routes import SOURCE_COLUMNS, parse_routes
from sluice.errors import RouteConflictError
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.mirror.merge_source import DELETE_FLAG
from sluice.lake.mirror.routed import routed_batch, routed_layout
from sluice.lake.types.table_layout import mirror_columns_for_schema
from tests.unit.shards import SHARDS, WITH_USERS, shard_catalog

pytestmark = pytest.mark.unit

BASE = WITH_USERS


def test_the_routed_layout_is_the_union_and_a_type_conflict_names_both() -> None:
    routes = parse_routes([SHARDS])
    assert routes is not None
    wider = shard_catalog("CREATE TABLE shop_3.orders (id INT PRIMARY KEY, amount DECIMAL(10,2), gift BOOL)")
    layout = routed_layout(routes, ("shop", "orders"), [*BASE.tables(), *wider.tables()], "mysql")
    assert [c.name for c in layout.columns] == ["id", "amount", "note", "gift", *SOURCE_COLUMNS]
    assert layout.primary_key == ("id", *SOURCE_COLUMNS)
    assert layout.tables == (("shop_1", "orders"), ("shop_2", "orders"), ("shop_3", "orders"))
    clash = shard_catalog("CREATE TABLE shop_3.orders (id INT PRIMARY KEY, amount VARCHAR(10))")
    with pytest.raises(RouteConflictError) as caught:
        routed_layout(routes, ("shop", "orders"), [*BASE.tables(), *clash.tables()], "mysql")
    assert re.search(r"amount of the routed mirror shop\.orders is decimal\(10,2\) in shop_1\.orders but "
                     r"varchar\(10\)[^,]* in shop_3\.orders", str(caught.value))


def test_the_tables_batches_become_the_mirrors_one_keeping_each_changes_source() -> None:
    routes = parse_routes([SHARDS])
    assert routes is not None
    layout = routed_layout(routes, ("shop", "orders"), list(BASE.tables()), "mysql")
    one = BASE.get("shop_1", "orders")
    assert one is not None
    cols = mirror_columns_for_schema(one, "mysql")
    source = pa.table({"id": pa.array([1, 2], pa.int32()), "amount": pa.array([None, None], cols[1].arrow_type),
                       "note": ["a", "b"], DELETE_FLAG: [False, True]})
    a = TableBatch("shop_1", "orders", cols, ("id",), (), source, 3)
    b = TableBatch("shop_2", "orders", cols[:1], ("id",), (), pa.table({"id": pa.array([1], pa.int32()),
                                                                        DELETE_FLAG: [False]}), 1)
    merged = routed_batch(layout, [a, b])
    assert (merged.db, merged.table, merged.primary_key, merged.change_count) == ("shop", "orders",
                                                                                   layout.primary_key, 4)
    assert merged.source is not None
    assert merged.source.to_pylist()[1:] == [
        {"id": 2, "amount": None, "note": "b", "_source_db": "shop_1", "_source_table": "orders",
         DELETE_FLAG: True},
        {"id": 1, "amount": None, "note": None, "_source_db": "shop_2", "_source_table": "orders",
         DELETE_FLAG: False}]
    change = RowChange("update", "shop_2", "orders", {"id": 1}, {"id": 1, "note": "x"}, ("id",), "b.1", 4, 0,
                       None, 0)
    per_row = routed_batch(layout, [TableBatch("shop_2", "orders", cols, ("id",), [change])])
    (routed,) = per_row.changes
    assert (routed.db, routed.table) == ("shop_2", "orders")  # the change log's record keeps its own source
    assert routed.after == {"id": 1, "note": "x", "_source_db": "shop_2", "_source_table": "orders"}
    assert routed.pk == ("id", *SOURCE_COLUMNS)
    assert routed_batch(layout, [TableBatch("shop_1", "orders", cols, ("id",), ())]).change_count == 0




def test_a_routed_mirror_in_delta_keeps_equal_keys_apart_and_loses_one_tables_rows(tmp_path) -> None:
    """Real Delta tables in a temporary folder: two tables' changes in one MERGE per batch, the
    change log keeping each change's table, then one table's rows deleted, twice."""
    from deltalake import DeltaTable

    from sluice.lake.mirror.routed import delete_rows
    from sluice.lake.sink import DeltaLake

    routes = parse_routes([SHARDS])
    assert routes is not None
    layout = routed_layout(routes, ("shop", "orders"), list(BASE.tables()), "mysql")
    cols = mirror_columns_for_schema(BASE.get("shop_1", "orders"), "mysql")  # type: ignore[arg-type]

    def change(db: str, op: str, key: int, note: str | None, row: int) -> RowChange:
        image = {"id": key, "amount": Decimal("1.50"), "note": note}
        return RowChange(op, db, "orders", image if op != "insert" else None, image if op != "delete" else None,
                         ("id",), "b.1", 10 * key, row, None, 0)

    lake = DeltaLake(tmp_path, "app")
    first = [TableBatch("shop_1", "orders", cols, ("id",), [change("shop_1", "insert", 1, "a", 0),
                                                            change("shop_1", "insert", 2, "b", 1)]),
             TableBatch("shop_2", "orders", cols, ("id",), [change("shop_2", "insert", 1, "c", 2)])]
    changes = [c for tb in first for c in tb.changes]
    lake.write_batch(0, [routed_batch(layout, first)], changelog=_log(0, changes))
    second = [TableBatch("shop_2", "orders", cols, ("id",), [change("shop_2", "update", 1, "d", 0),
                                                             change("shop_2", "insert", 2, None, 1)])]
    lake.write_batch(1, [routed_batch(layout, second)], changelog=_log(1, list(second[0].changes)))
    path = str(tmp_path / "shop" / "orders")
    rows = sorted((r["_source_db"], r["id"], r["note"]) for r in DeltaTable(path).to_pyarrow_table().to_pylist())
    assert rows == [("shop_1", 1, "a"), ("shop_1", 2, "b"), ("shop_2", 1, "d"), ("shop_2", 2, None)]
    logged = DeltaTable(str(tmp_path / "_sluice" / "changes")).to_pyarrow_table(columns=["db", "table"]).to_pylist()
    assert sorted((r["db"], r["table"]) for r in logged) == [("shop_1", "orders")] * 2 + [("shop_2", "orders")] * 3
    assert delete_rows(path, None, "shop_2", "orders") == 2
    assert delete_rows(path, None, "shop_2", "orders") == 0  # again: nothing
    left = sorted((r["_source_db"], r["id"]) for r in DeltaTable(path).to_pyarrow_table().to_pylist())
    assert left == [("shop_1", 1), ("shop_1", 2)]
    assert delete_rows(str(tmp_path / "none"), None, "shop_1", "orders") == 0


def _log(batch_id: int, changes: list[RowChange]) -> pa.Table:
    from sluice.lake.changelog.rows import changelog_table

    return changelog_table(batch_id, changes)
