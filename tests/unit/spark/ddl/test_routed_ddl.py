"""DDL on a routed table (no server): the mirror steps ``plan_ddl`` plans made the routed mirror's
(``widen``, ``unroute``, a re-read, ``create``), and the type changes and keys that make a
``RouteConflictError`` naming both definitions and both tables."""

from __future__ import annotations

import pytest

from sluice.cdc.routes import parse_routes
from sluice.errors import RouteConflictError
from sluice.spark.ddl.plan import plan_ddl
from sluice.spark.ddl.routed import route_steps
from tests.unit.shards import SHARDS, WITH_USERS, shard_catalog

pytestmark = pytest.mark.unit

BASE = WITH_USERS


def _steps(sql: str) -> list[tuple[str, str, str]]:
    routes = parse_routes([SHARDS])
    assert routes is not None
    planned = plan_ddl(BASE, sql, None, lambda _d, _t: True, "mysql")
    return [(s.kind, s.name, f"{s.to[0]}.{s.to[1]}" if s.to else "")
            for s in route_steps(planned, routes, BASE, sql, None, lambda _d, _t: True, lambda _n: None)]


def test_ddl_on_a_routed_table_changes_only_its_share_of_the_mirror() -> None:
    assert _steps("ALTER TABLE shop_1.orders ADD COLUMN gift BOOL") == [("widen", "shop_1.orders", "shop.orders")]
    assert _steps("ALTER TABLE shop_1.orders ADD COLUMN gift INT NOT NULL DEFAULT 1") == [
        ("reread", "shop_1.orders", "")]  # its rows got a value: read again into the mirror
    assert _steps("ALTER TABLE shop_1.orders DROP COLUMN note") == [("reread", "shop_1.orders", "")]
    assert _steps("ALTER TABLE shop_1.orders MODIFY note VARCHAR(80)") == []  # a string as before
    assert _steps("DROP TABLE shop_2.orders") == [("unroute", "shop_2.orders", "shop.orders")]
    assert _steps("TRUNCATE TABLE shop_2.orders") == [("unroute", "shop_2.orders", "shop.orders")]
    assert _steps("RENAME TABLE shop_2.orders TO shop_2.orders_old") == [
        ("unroute", "shop_2.orders", "shop.orders"), ("reread", "shop_2.orders_old", "")]
    assert _steps("CREATE TABLE shop_3.orders (id INT PRIMARY KEY, amount DECIMAL(10,2))") == [
        ("unroute", "shop_3.orders", "shop.orders"), ("create", "shop.orders", "")]  # an old table's rows go
    assert _steps("ALTER TABLE shop_1.users ADD COLUMN x INT") == [("rewrite", "shop_1.users", "")]  # not routed
    with pytest.raises(RouteConflictError, match=r"amount .* is int in shop_1\.orders but decimal\(10,2\) in "
                       r"shop_2\.orders"):
        _steps("ALTER TABLE shop_1.orders MODIFY amount INT")
    with pytest.raises(RouteConflictError, match=r"primary key"):
        _steps("CREATE TABLE shop_3.orders (id INT, line INT, PRIMARY KEY (id, line))")




def test_widen_and_unroute_on_a_delta_mirror(tmp_path) -> None:
    """The two routed steps on a real Delta mirror: columns added once (a replay adds nothing), a
    column the mirror holds as another type refused, one table's rows deleted."""
    from deltalake import DeltaTable

    from sluice.lake.mirror.batch import TableBatch
    from sluice.lake.mirror.routed import column_names, routed_batch, routed_layout
    from sluice.lake.sink import DeltaLake
    from sluice.spark.ddl.plan import MirrorStep
    from sluice.spark.ddl.routed import check_mirror, run_routed

    routes = parse_routes([SHARDS])
    assert routes is not None
    target = ("shop", "orders")
    layout = routed_layout(routes, target, list(BASE.tables()), "mysql")
    lake = DeltaLake(tmp_path, "app")
    assert lake.create_mirror(*target, layout.columns)
    wider = shard_catalog("CREATE TABLE shop_1.orders (id INT PRIMARY KEY, amount DECIMAL(10,2), note VARCHAR(20), "
                     "gift BOOL)", "CREATE TABLE shop_2.orders (id INT PRIMARY KEY, amount DECIMAL(10,2))")
    widened = routed_layout(routes, target, list(wider.tables()), "mysql")
    said: list[str] = []
    step = MirrorStep("widen", "shop_1", "orders", to=target, columns=widened.columns)
    run_routed(lake, step, said.append)
    run_routed(lake, step, said.append)  # replayed after a crash: the column is there
    path = lake.table_path(*target)
    names = column_names(DeltaTable(path))
    assert names == ["id", "amount", "note", "_source_db", "_source_table", "gift"] and len(said) == 1
    widened = routed_layout(routes, target, list(wider.tables()), "mysql", order=names)  # as a batch takes it
    assert [c.name for c in widened.columns] == names
    clash = shard_catalog("CREATE TABLE shop_1.orders (id INT PRIMARY KEY, amount VARCHAR(9))")
    with pytest.raises(RouteConflictError, match=r"column amount of the routed mirror shop\.orders holds Delta type"):
        check_mirror(DeltaTable(path), routed_layout(routes, target, list(clash.tables()), "mysql"), target)
    one = BASE.get("shop_1", "orders")
    assert one is not None
    from sluice.cdc.records import RowChange
    from sluice.lake.changelog.schema import CHANGELOG_SCHEMA
    from sluice.lake.types.table_layout import mirror_columns_for_schema

    rows = [TableBatch(db, "orders", mirror_columns_for_schema(one, "mysql"), ("id",),
                       [RowChange("insert", db, "orders", None, {"id": 1}, ("id",), "b.1", 4, i, None, 0)])
            for i, db in enumerate(("shop_1", "shop_2"))]
    lake.write_batch(0, [routed_batch(widened, rows)], changelog=CHANGELOG_SCHEMA.empty_table())
    run_routed(lake, MirrorStep("unroute", "shop_2", "orders", to=target, why="drop table"), said.append)
    left = DeltaTable(path).to_pyarrow_table().to_pylist()
    assert [(r["_source_db"], r["id"]) for r in left] == [("shop_1", 1)]
    assert said[-1] == "DDL: shop_2.orders (drop table) — its 1 rows left the routed mirror shop.orders"
