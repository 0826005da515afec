"""Row changes and their JSON lines, built from decoded events (no server)."""

import json
import uuid
from decimal import Decimal

import pytest

from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.events import GtidEvent, MariadbGtidEvent, RowsEvent, TableMapEvent, TransactionPayloadEvent
from sluice.binlog.header import EventHeader
from sluice.binlog.rowplan import ABSENT
from sluice.cdc.jsonl import change_line
from sluice.cdc.records import RowChangeBuilder
from sluice.errors import SchemaError

pytestmark = pytest.mark.unit

SID = uuid.UUID("3d687a2c-b38e-11ed-91ef-3f952e283fc3")


def header(type_code: int, ts: int = 1711727631, server_id: int = 1) -> EventHeader:
    return EventHeader(ts, type_code, server_id, 100, 0, 0)


def table(names=("id", "amount", "note"), pk=((0, 0),), raw=b"t1") -> TableMapEvent:
    cols = tuple(ColumnInfo(name=n) for n in names) if names else tuple(ColumnInfo() for _ in range(3))
    return TableMapEvent(header(19), 7, 1, "shop", "orders", len(cols), (3, 246, 15), (0, 0x0A02, 40),
                         (False, False, True), cols, pk, raw)


def rows(kind: str, data, tmap=None) -> RowsEvent:
    return RowsEvent(header(30), kind, 7, 1, tmap or table(), 0b111, 0b111 if kind == "update" else None, data)


def test_update_record_matches_the_contract_example():
    builder = RowChangeBuilder()
    gtid = GtidEvent(header(33), 0, SID, 283)
    assert list(builder.feed(gtid, "binlog.000002", 1200)) == []
    event = rows("update", [((7, Decimal("10.50"), None), (7, Decimal("12.00"), "gift"))])
    (change,) = builder.feed(event, "binlog.000002", 1297)
    assert json.loads(change_line(change)) == {
        "op": "update", "db": "shop", "table": "orders",
        "before": {"id": 7, "amount": "10.50", "note": None},
        "after": {"id": 7, "amount": "12.00", "note": "gift"},
        "pk": ["id"], "file": "binlog.000002", "pos": 1297, "row": 0,
        "gtid": "3d687a2c-b38e-11ed-91ef-3f952e283fc3:283", "ts": 1711727631,
    }


def test_insert_and_delete_rows_are_numbered_and_absent_columns_left_out():
    builder = RowChangeBuilder()
    list(builder.feed(MariadbGtidEvent(header(162, server_id=9), 100, 0, 0), "f", 4))
    inserts = list(builder.feed(rows("write", [(1, Decimal("1.00"), ABSENT), (2, Decimal("2.00"), "x")]), "f", 50))
    assert [c.row for c in inserts] == [0, 1]
    assert inserts[0].after == {"id": 1, "amount": Decimal("1.00")} and inserts[0].before is None
    assert inserts[0].gtid == "0-9-100"
    (delete,) = builder.feed(rows("delete", [(3, Decimal("0.00"), None)]), "f", 90)
    assert delete.op == "delete" and delete.after is None and delete.before == {
        "id": 3, "amount": Decimal("0.00"), "note": None}


def test_anonymous_gtid_clears_the_gtid():
    builder = RowChangeBuilder()
    list(builder.feed(GtidEvent(header(33), 0, SID, 5), "f", 4))
    list(builder.feed(GtidEvent(header(34), 0, SID, 0), "f", 80))
    (change,) = builder.feed(rows("write", [(1, Decimal("1.00"), None)]), "f", 120)
    assert change.gtid is None


def test_payload_inner_rows_share_the_payload_offset_and_count_on():
    builder = RowChangeBuilder()
    inner = (rows("write", [(1, Decimal("1.00"), None), (2, Decimal("2.00"), None)]),
             rows("delete", [(3, Decimal("3.00"), None)]))
    payload = TransactionPayloadEvent(header(40), 0, 10, 20, inner)
    changes = list(builder.feed(payload, "binlog.000001", 777))
    assert [(c.pos, c.row, c.op) for c in changes] == [(777, 0, "insert"), (777, 1, "insert"), (777, 2, "delete")]


def test_without_column_names_the_builder_refuses_to_invent_them():
    builder = RowChangeBuilder()
    with pytest.raises(SchemaError, match="binlog_row_metadata=FULL"):
        list(builder.feed(rows("write", [(1, Decimal("1.00"), None)], table(names=None, raw=b"t2")), "f", 9))


def test_names_from_a_schema_source_are_used_when_the_binlog_has_none():
    builder = RowChangeBuilder(names=lambda tmap: ("a", "b", "c"))
    (change,) = builder.feed(rows("write", [(1, Decimal("1.00"), None)], table(names=None, raw=b"t3")), "f", 9)
    assert change.after == {"a": 1, "b": Decimal("1.00"), "c": None}


def test_value_encoding_rules():
    builder = RowChangeBuilder()
    event = rows("write", [(2**64 - 1, Decimal("-0.00100"), b"\x00\xff")])
    (change,) = builder.feed(event, "f", 1)
    after = json.loads(change_line(change))["after"]
    assert after == {"id": 18446744073709551615, "amount": "-0.00100", "note": "AP8="}


def test_partial_json_diffs_leave_after_and_geometry_is_srid_plus_wkb():
    from sluice.binlog.values.geometry import Geometry
    from sluice.binlog.values.json_binary import JsonDiff, JsonDiffs

    builder = RowChangeBuilder()
    diffs = JsonDiffs((JsonDiff("replace", "$.a[1]", 5), JsonDiff("remove", "$.b", None)))
    event = rows("update", [((1, Geometry(4326, b"\x01\x01"), {"a": [1, 2]}), (1, Geometry(0, b"\x02"), diffs))],
                 table(names=("id", "shape", "doc"), raw=b"t4"))
    (change,) = builder.feed(event, "f", 3)
    line = json.loads(change_line(change))
    assert line["after"] == {"id": 1, "shape": {"srid": 0, "wkb": "Ag=="}}
    assert line["before"]["doc"] == {"a": [1, 2]}
    assert line["json_diffs"] == {"doc": [{"op": "replace", "path": "$.a[1]", "value": 5},
                                          {"op": "remove", "path": "$.b"}]}


def test_decimal_inside_json_is_a_number_but_a_decimal_column_is_a_string():
    from sluice.binlog.values.json_binary import JsonDecimal

    builder = RowChangeBuilder()
    doc = {"dec": JsonDecimal("1.50"), "arr": [JsonDecimal("-0.00100")], "s": "\x00sluice-x:1"}
    (change,) = builder.feed(rows("write", [(1, Decimal("2.50"), doc)]), "f", 1)
    text = change_line(change)
    assert '"dec":1.50' in text and '"arr":[-0.00100]' in text
    assert json.loads(text)["after"]["amount"] == "2.50"
    assert json.loads(text)["after"]["note"]["s"] == "\x00sluice-x:1"
