"""The mirror plan of each DDL kind, from the catalog before it and the statement (no server)."""

from decimal import Decimal

import pytest

from sluice.cdc.schema import Catalog, apply_ddl
from sluice.cdc.schema.lineage import ColumnFill
from sluice.spark.ddl.plan import plan_ddl, widening

pytestmark = pytest.mark.unit


def catalog(*statements: str, flavor: str = "mysql") -> Catalog:
    # a server's catalog as the bootstrap reads it: the defaults of the database shop are known
    cat = Catalog(databases={"shop": ("utf8mb4", None)}, flavor=flavor)
    for sql in statements:
        cat, outcome = apply_ddl(cat, sql, "shop")
        assert outcome.understood, outcome.message
    return cat


BASE = catalog(
    "CREATE TABLE t (id INT PRIMARY KEY, qty INT, price DECIMAL(10,2), note VARCHAR(20), name CHAR(4))",
    "CREATE TABLE u (id INT PRIMARY KEY, v INT)",
    "CREATE TABLE nokey (a INT)",
)


def everything(_db: str, _t: str) -> bool:
    return True


def plan(sql: str, captured=everything):
    return plan_ddl(BASE, sql, "shop", captured, "mysql")


def kinds(steps):
    return [(s.kind, s.name) for s in steps]


def test_add_column_with_a_constant_default_rewrites_with_the_default():
    (step,) = plan("ALTER TABLE t ADD COLUMN status VARCHAR(10) DEFAULT 'new' AFTER id")
    assert step.kind == "rewrite"
    assert [c.name for c in step.columns] == ["id", "status", "qty", "price", "note", "name"]
    added = step.origins[1]
    assert added.source is None and added.fill == ColumnFill("new")


@pytest.mark.parametrize(("ddl", "value"), [
    ("ADD c INT NOT NULL", 0),
    ("ADD c INT", None),
    ("ADD c INT DEFAULT NULL", None),
    ("ADD c INT DEFAULT -3", -3),
    ("ADD c DECIMAL(6,2) DEFAULT 1.5", Decimal("1.50")),
    ("ADD c VARCHAR(3) NOT NULL", ""),
    ("ADD c ENUM('a','b') NOT NULL", "a"),
    ("ADD c DOUBLE DEFAULT '2.5'", 2.5),
])
def test_fills_sluice_computes(ddl, value):
    (step,) = plan(f"ALTER TABLE t {ddl}")
    assert step.kind == "rewrite" and step.origins[-1].fill == ColumnFill(value)


@pytest.mark.parametrize("ddl", [
    "ADD c DATETIME DEFAULT CURRENT_TIMESTAMP",
    "ADD c INT DEFAULT (qty * 2)",
    "ADD c INT AS (qty + 1)",
    "ADD c DATE NOT NULL",
    "ADD c DECIMAL(4,1) DEFAULT 1.25",
    "ADD c BIGINT NOT NULL AUTO_INCREMENT UNIQUE",
    "MODIFY qty SMALLINT",
    "MODIFY price DECIMAL(10,1)",
    "MODIFY note VARCHAR(5)",
    "MODIFY note CHAR(20)",
    "MODIFY qty VARCHAR(10)",
])
def test_what_sluice_cannot_compute_is_reread(ddl):
    (step,) = plan(f"ALTER TABLE t {ddl}")
    assert step.kind == "reread" and step.name == "shop.t", step


@pytest.mark.parametrize("ddl", ["MODIFY qty BIGINT", "MODIFY price DECIMAL(14,3)", "MODIFY qty DECIMAL(12,0)"])
def test_widening_rewrites_in_place(ddl):
    (step,) = plan(f"ALTER TABLE t {ddl}")
    assert step.kind == "rewrite"


@pytest.mark.parametrize("ddl", ["MODIFY note VARCHAR(40)", "MODIFY note TEXT", "MODIFY name VARCHAR(8)"])
def test_widening_within_the_mirror_type_changes_nothing(ddl):
    assert plan(f"ALTER TABLE t {ddl}") == []


def test_rename_drop_and_reorder_keep_values_by_origin():
    (step,) = plan("ALTER TABLE t RENAME COLUMN note TO remark, DROP COLUMN qty, MODIFY name CHAR(4) FIRST")
    assert [(o.name, o.source) for o in step.origins] == [
        ("name", "name"), ("id", "id"), ("price", "price"), ("remark", "note")]


def test_no_mirror_change_for_keys_indexes_and_options():
    assert plan("ALTER TABLE t ADD INDEX ix (qty)") == []
    assert plan("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (id, qty)") == []
    assert plan("ALTER TABLE t COMMENT 'x'") == []


def test_table_lifecycle():
    assert kinds(plan("TRUNCATE TABLE t")) == [("truncate", "shop.t")]
    assert kinds(plan("DROP TABLE t, u")) == [("archive", "shop.t"), ("archive", "shop.u")]
    assert sorted(kinds(plan("DROP DATABASE shop"))) == [("archive", "shop.nokey"), ("archive", "shop.t"),
                                                         ("archive", "shop.u")]
    # a mirror left under the name is archived; the new table's is created empty, with its columns
    archive, create = plan("CREATE TABLE w (id INT PRIMARY KEY, v VARCHAR(5))")
    assert kinds([archive, create]) == [("archive", "shop.w"), ("create", "shop.w")]
    assert [c.name for c in create.columns] == ["id", "v"]
    assert kinds(plan("CREATE TABLE w (a INT)")) == [("archive", "shop.w")]  # no key: no mirror
    (move,) = plan("RENAME TABLE t TO t2")
    assert (move.kind, move.name, move.to) == ("move", "shop.t", ("shop", "t2"))
    (cross,) = plan("RENAME TABLE t TO other.t")
    assert cross.kind == "move" and cross.to == ("other", "t")


def test_rename_into_and_out_of_the_capture():
    only_shop = lambda db, _t: db == "shop"  # noqa: E731
    assert kinds(plan("RENAME TABLE t TO attic.t", only_shop)) == [("archive", "shop.t")]
    back = catalog("CREATE TABLE attic.x (id INT PRIMARY KEY)")
    steps = plan_ddl(back, "RENAME TABLE attic.x TO shop.x", "shop", only_shop, "mysql")
    assert kinds(steps) == [("reread", "shop.x")]


def test_primary_key_appears_or_goes():
    assert kinds(plan("ALTER TABLE nokey ADD PRIMARY KEY (a)")) == [("reread", "shop.nokey")]
    assert kinds(plan("ALTER TABLE u DROP PRIMARY KEY")) == [("archive", "shop.u")]


def test_a_statement_not_understood_rereads_its_tables():
    assert kinds(plan("ALTER TABLE t ADD SPATIAL INDEX (qty), FROBNICATE")) == [("reread", "shop.t")]


def test_uncaptured_tables_are_left_alone():
    assert plan("ALTER TABLE t ADD c INT", lambda _db, t: t != "t") == []


def test_widening_rules():
    cat = catalog("CREATE TABLE w (a INT UNSIGNED, b INT, c TINYINT UNSIGNED)")
    a, b, c = cat.get("shop", "w").columns
    big = catalog("CREATE TABLE w (a BIGINT, b INT UNSIGNED, c SMALLINT)").get("shop", "w").columns
    assert widening(a, big[0]) and not widening(b, big[1]) and widening(c, big[2])


PARTITIONED = catalog(
    "CREATE TABLE p (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) "
    "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE)",
    "CREATE TABLE x (id INT PRIMARY KEY, v INT)",
)


def partition_plan(sql: str, captured=everything):
    return kinds(plan_ddl(PARTITIONED, sql, "shop", captured, "mariadb"))


@pytest.mark.parametrize("sql", [
    "ALTER TABLE p DROP PARTITION p0",
    "ALTER TABLE shop.p TRUNCATE PARTITION p0, p1",
    "ALTER TABLE p TRUNCATE PARTITION ALL",
    "ALTER TABLE p IMPORT PARTITION p0 TABLESPACE",
])
def test_partition_maintenance_that_removes_rows_rereads_the_table(sql):
    assert partition_plan(sql) == [("reread", "shop.p")]


def test_an_exchanged_partition_rereads_both_tables():
    sql = "ALTER TABLE p EXCHANGE PARTITION p1 WITH TABLE `shop`.`x` WITHOUT VALIDATION"
    assert partition_plan(sql) == [("reread", "shop.p"), ("reread", "shop.x")]
    assert partition_plan(sql, captured=lambda _d, t: t == "x") == [("reread", "shop.x")]


def test_an_imported_tablespace_rereads_the_table():
    assert partition_plan("ALTER TABLE x IMPORT TABLESPACE") == [("reread", "shop.x")]


def test_mariadb_convert_partition_to_table_makes_a_table_with_its_rows():
    after, outcome = apply_ddl(PARTITIONED, "ALTER TABLE p CONVERT PARTITION p0 TO TABLE q", "shop")
    q = after.get("shop", "q")
    assert q is not None and [c.name for c in q.columns] == ["id", "v"] and q.primary_key == ("id",)
    assert outcome.rows_replaced == (("shop", "p"), ("shop", "q"))
    steps = partition_plan("ALTER TABLE p CONVERT PARTITION p0 TO TABLE q")
    assert steps == [("reread", "shop.p"), ("reread", "shop.q")]


def test_mariadb_convert_table_to_partition_archives_the_table_it_took():
    sql = "ALTER TABLE p CONVERT TABLE x TO PARTITION p2 VALUES LESS THAN (100)"
    after, _ = apply_ddl(PARTITIONED, sql, "shop")
    assert after.get("shop", "x") is None
    assert partition_plan(sql) == [("archive", "shop.x"), ("reread", "shop.p")]


@pytest.mark.parametrize("sql", [
    "ALTER TABLE p ADD PARTITION (PARTITION p2 VALUES LESS THAN (30))",
    "ALTER TABLE p REORGANIZE PARTITION p1 INTO "
    "(PARTITION a VALUES LESS THAN (20), PARTITION b VALUES LESS THAN MAXVALUE)",
    "ALTER TABLE p COALESCE PARTITION 1",
    "ALTER TABLE p REBUILD PARTITION p0",
    "ALTER TABLE p ANALYZE PARTITION p0",
    "ALTER TABLE p REMOVE PARTITIONING",
    "ALTER TABLE x DISCARD TABLESPACE",
])
def test_partition_maintenance_that_keeps_every_row_changes_no_mirror(sql):
    assert partition_plan(sql) == []
