"""The staged-file descriptors the tasks hand the driver: every kind round-trips through the rows
Spark carries, and a row of another kind is refused."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sluice.binlog.position import Checkpoint
from sluice.errors import ConfigError
from sluice.spark.source.descriptors import (
    DESCRIPTOR_SCHEMA,
    ChangelogFile,
    DdlMet,
    TableSource,
    from_row,
    to_row,
)

pytestmark = pytest.mark.unit

DESCRIPTORS = [
    ChangelogFile("part-0.parquet", 1234, 1_700_000_000_000, '{"numRecords":3}', 3, "binlog.000002", 400, 0,
                  "binlog.000003", 4, (1_700_000_000_000_001, 1_700_000_000_500_000), (2, 1), 1, 2,
                  Checkpoint("binlog.000003", 120, "u:1-7")),
    ChangelogFile("part-1.parquet", 1, 2, "{}", 1, "b.1", 4, 3, "b.1", 4, (5,), (1,)),
    TableSource("shop", "orders", 3, "binlog.000002", 400, 1, 1, 1, 1, "staging/7/x.arrow",
                '[[["id","int32"]],["id"]]'),
    TableSource("shop", "log", 2, "binlog.000002", 500, 0, 2, 0, 0),
    DdlMet("shop", "orders", "binlog.000002", 900, '{"sql":"ALTER TABLE orders ADD c INT"}'),
    DdlMet("shop", None, "binlog.000002", 950, '{"sql":"CREATE DATABASE x"}'),
]


def test_every_descriptor_round_trips_through_the_rows_spark_carries():
    table = pa.Table.from_pylist([to_row(d) for d in DESCRIPTORS], schema=DESCRIPTOR_SCHEMA)
    assert [from_row(row) for row in table.to_pylist()] == DESCRIPTORS


def test_descriptors_order_by_where_their_first_change_is():
    ordered = sorted(DESCRIPTORS, key=lambda d: d.first)
    assert [type(d).__name__ for d in ordered] == [
        "ChangelogFile", "ChangelogFile", "TableSource", "TableSource", "DdlMet", "DdlMet"]
    assert ordered[0].first_file == "b.1"
    assert [d.table for d in ordered[2:4]] == ["orders", "log"]  # binlog.000002 at 400, then at 500
    one_event = [TableSource("a", "b", 1, "f.1", 9, 2, 1, 0, 0), TableSource("a", "c", 1, "f.1", 9, 1, 1, 0, 0)]
    same_event = sorted(one_event, key=lambda d: d.first)
    assert [d.table for d in same_event] == ["c", "b"]  # one rows event: by the row's index


def test_a_changelog_file_gives_its_add_action_fields_and_a_table_its_counts():
    changes, source = DESCRIPTORS[0], DESCRIPTORS[2]
    assert isinstance(changes, ChangelogFile) and isinstance(source, TableSource)
    assert changes.add_fields() == {"path": "part-0.parquet", "size": 1234, "mtime": 1_700_000_000_000,
                                    "stats": '{"numRecords":3}'}
    assert [source.count(op) for op in ("insert", "update", "delete")] == [1, 1, 1]


def test_a_row_of_another_kind_is_refused():
    with pytest.raises(ConfigError, match="another version"):
        from_row({"kind": "index"})
