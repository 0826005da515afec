"""RowChanges written as change rows and as change-log rows, and read back: one writing, both ways
exact (``sluice.lake.changelog.rows``)."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from sluice.cdc.records import RowChange
from sluice.cdc.schema import Catalog, apply_ddl
from sluice.lake.changelog.rows import change_batch, changelog_from_rows, changelog_table, to_row_changes
from sluice.lake.changelog.schema import CHANGE_ARROW_SCHEMA, CHANGELOG_SCHEMA
from sluice.lake.types.table_layout import mirror_columns_for_schema

pytestmark = pytest.mark.unit


def _columns():
    cat, _ = apply_ddl(Catalog(flavor="mysql"), "CREATE TABLE t (id INT PRIMARY KEY, d DECIMAL(30,10), "
                       "s VARCHAR(20), b VARBINARY(8))", "db")
    return mirror_columns_for_schema(cat.get("db", "t"), "mysql")


def _changes() -> list[RowChange]:
    one = {"id": 1, "d": Decimal("12345678901234567890.0123456789"), "s": "é\n", "b": b"\x00\xff"}
    two = {**one, "s": None}
    return [
        RowChange("insert", "db", "t", None, one, ("id",), "binlog.000002", 400, 0, "u:7", 1_700_000_000),
        RowChange("update", "db", "t", one, two, ("id",), "binlog.000002", 400, 1, "u:7", 1_700_000_000),
        RowChange("delete", "db", "t", two, None, ("id",), "binlog.000003", 4, 0, None, 1_700_000_001),
    ]


def test_change_rows_read_back_as_the_same_changes():
    changes = _changes()
    batch = change_batch(changes, [1_700_000_000_000_001, None, 7])
    assert batch.schema == CHANGE_ARROW_SCHEMA
    assert batch.column("commit_ts").cast(pa.int64()).to_pylist() == [1_700_000_000_000_001, None, 7]
    assert to_row_changes(_columns(), pa.Table.from_batches([batch])) == changes


def test_changelog_rows_are_the_change_rows_with_the_batch_and_in_binlog_order():
    changes = _changes()
    log = changelog_table(9, list(reversed(changes)))
    assert log.schema == CHANGELOG_SCHEMA
    assert log.column("batch_id").to_pylist() == [9, 9, 9]
    assert log.to_pylist() == changelog_from_rows(pa.Table.from_batches([change_batch(changes)]), 9).to_pylist()
    assert to_row_changes(_columns(), log) == changes
