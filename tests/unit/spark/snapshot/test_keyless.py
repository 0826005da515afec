"""Key-less tables in the snapshot: their rows as change-log ``read`` records, written once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sluice.binlog.position import Checkpoint
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.table_read.consistent import ConsistentRead
from sluice.lake.changelog.schema import CHANGELOG_SCHEMA
from sluice.lake.sink import DeltaLake
from sluice.spark.snapshot.keyless import read_records, snapshot_keyless

pytestmark = pytest.mark.unit


def _read() -> ConsistentRead:
    rows = [{"x": 1, "y": "a"}, {"x": 2, "y": "é"}, {"x": 2, "y": "é"}, {"x": None, "y": None}]
    return ConsistentRead("shop", "log", Checkpoint("binlog.000003", 1234, None), rows, "binlog_snapshot")


def test_read_records_are_the_rows_at_the_scan_position() -> None:
    table = read_records(_read(), 1_700_000_000)
    assert table.schema == CHANGELOG_SCHEMA
    rows = table.to_pylist()
    assert [r["op"] for r in rows] == ["read"] * 4
    assert {(r["db"], r["table"], r["file"], r["pos"]) for r in rows} == {("shop", "log", "binlog.000003", 1234)}
    assert [r["row"] for r in rows] == [0, 1, 2, 3]
    assert [json.loads(r["after"]) for r in rows] == _read().rows
    assert rows[1]["after"] == '{"x":2,"y":"é"}'  # the JSON-lines encoding of the change records
    assert all(r["before"] is None and r["pk"] == [] and r["batch_id"] is None for r in rows)


def test_a_scan_whose_append_landed_is_not_read_again(tmp_path: Path) -> None:
    from deltalake import CommitProperties, Transaction, write_deltalake

    lake = DeltaLake(tmp_path, "sluice-test-snapshot")
    read = _read()
    app = f"{lake.app_id}:shop.log@binlog.000003:1234"
    write_deltalake(lake.changelog_path, read_records(read, 0), mode="append",
                    commit_properties=CommitProperties(app_transactions=[Transaction(app, 0)]))
    columns = (ColumnDef("x", "int"), ColumnDef("y", "varchar", length=10, charset="utf8mb4"))
    schema = TableSchema("shop", "log", columns)
    entry = {"schema": schema.to_json(), "key": [], "chunks": [], "done": {}, "writing": None,
             "scan": {"position": read.position.to_json(), "rows": 4, "method": "binlog_snapshot"}, "read": None}
    saved: list[dict] = []
    # No server behind this DSN: reading the table again would fail.
    snapshot_keyless("mysql://nobody@127.0.0.1:9/", lake, entry, lambda: saved.append(dict(entry)), print)
    assert entry["read"] == {"position": read.position.to_json(), "rows": 4, "method": "binlog_snapshot"}
    assert entry["scan"] is None and saved
    assert DeltaTable(lake.changelog_path).to_pyarrow_table().num_rows == 4
