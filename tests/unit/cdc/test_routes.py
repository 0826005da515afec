"""``--route`` (no server): the rule parsed and matched in full, the first route winning, the
groups of the target, the typed errors of a bad route, and the check that routed tables can share
one mirror (one key, keyed tables only, a target apart from every source table)."""

from __future__ import annotations

import pytest

from sluice.cdc.routes import SOURCE_COLUMNS, mirror_key, parse_routes
from sluice.errors import ConfigError, RouteConflictError, SchemaError
from tests.unit.shards import SHARDS, TWO_SHARDS, shard_catalog

pytestmark = pytest.mark.unit

BASE = TWO_SHARDS


def test_a_route_matches_in_full_and_the_first_that_matches_wins() -> None:
    routes = parse_routes([r"(\w+)_[0-9]+\.(?P<t>\w+)=\1.\g<t>", r"shop_1\..*=other.all"])
    assert routes is not None
    assert routes.target("shop_1", "orders") == ("shop", "orders")  # the first route wins
    assert routes.target("eu_12", "users") == ("eu", "users")
    assert routes.target("shop", "orders") is None  # no match in full: its own mirror
    assert routes.mirror_of("shop", "orders") == ("shop", "orders")
    assert routes.texts == [r"(\w+)_[0-9]+\.(?P<t>\w+)=\1.\g<t>", r"shop_1\..*=other.all"]
    only = parse_routes([SHARDS])
    assert only is not None and only.target("shop_1", "orders_old") is None  # a prefix is no match
    assert only.groups([("shop_1", "orders"), ("shop_1", "users"), ("shop_2", "orders")]) == {
        ("shop", "orders"): [("shop_1", "orders"), ("shop_2", "orders")]}
    assert parse_routes(None) is None and parse_routes([]) is None
    assert mirror_key(("id",)) == ("id", *SOURCE_COLUMNS)


@pytest.mark.parametrize(("text", "message"), [
    ("shop_1.orders", "is not REGEX=TARGET"),
    ("shop_(.orders=shop.orders", "is not a regular expression"),
    (r"shop_1\.orders=orders", "is not db.table"),
    (r"shop_1\.orders=a.b.c", "is not db.table"),
    (r"shop_(\d)\.orders=shop.orders\2", "names group 2"),
    (r"shop_(\d)\.orders=shop.\g<x>", "names group x"),
])
def test_a_bad_route_is_a_config_error(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_routes([text])


def test_tables_that_cannot_share_a_mirror_are_refused() -> None:
    routes = parse_routes([SHARDS])
    assert routes is not None
    other_key = shard_catalog("CREATE TABLE shop_3.orders (id INT, line INT, PRIMARY KEY (id, line))")
    schemas = [*BASE.tables(), *other_key.tables()]
    with pytest.raises(RouteConflictError, match=r"shop_1\.orders \(primary key id\) and shop_3\.orders \(primary "
                       r"key id, line\)") as caught:
        routes.check(schemas)
    assert isinstance(caught.value, SchemaError)
    keyless = shard_catalog("CREATE TABLE shop_3.orders (id INT)")
    with pytest.raises(RouteConflictError, match=r"shop_3\.orders .* has no primary key"):
        routes.check([*BASE.tables(), *keyless.tables()])
    with pytest.raises(RouteConflictError, match=r"also a captured table mirrored as itself"):
        routes.check(BASE.tables(), [("shop", "orders")])
    itself = parse_routes([r"shop(_[0-9]+)?\.orders=shop.orders"])
    assert itself is not None
    with pytest.raises(RouteConflictError, match=r"sends shop\.orders itself"):
        itself.check([*BASE.tables(), *shard_catalog("CREATE DATABASE shop",
                                                "CREATE TABLE shop.orders (id INT PRIMARY KEY)").tables()])


