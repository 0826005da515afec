"""Sharded tables for the routing tests: ``shop_N.orders`` routed into ``shop.orders``, as the
catalogs the route checks, the routed mirror's layout and the routed DDL steps are given."""

from __future__ import annotations

from sluice.cdc.schema import Catalog, apply_ddl

SHARDS = r"shop_[0-9]+\.orders=shop.orders"

_ORDERS = ("CREATE TABLE shop_1.orders (id INT PRIMARY KEY, amount DECIMAL(10,2), note VARCHAR(20))",
           "CREATE TABLE shop_2.orders (id INT PRIMARY KEY, amount DECIMAL(10,2), note VARCHAR(40))")


def shard_catalog(*statements: str) -> Catalog:
    """A MySQL catalog of the databases shop_1 to shop_3 after ``statements``."""
    cat = Catalog(databases={db: ("utf8mb4", None) for db in ("shop_1", "shop_2", "shop_3")}, flavor="mysql")
    for sql in statements:
        cat, outcome = apply_ddl(cat, sql, None)
        assert outcome.understood, outcome.message
    return cat


TWO_SHARDS = shard_catalog(*_ORDERS)  # shop_1.orders and shop_2.orders: one key, other note lengths
WITH_USERS = shard_catalog(*_ORDERS, "CREATE TABLE shop_1.users (id INT PRIMARY KEY)")  # and a table not routed
