"""Debezium's change events from sluice's JSON lines: each value in the connector's default
encoding, checked against the examples of Debezium's MySQL connector documentation, and the
envelope, checked over every golden binlog file."""

from __future__ import annotations

import base64
import io
import json
from decimal import Decimal, localcontext
from pathlib import Path
from types import SimpleNamespace

import pytest

from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, CaptureOutput, ChangeCapture
from sluice.cdc.debezium import DEBEZIUM_OPS, DebeziumLines, column_rules, transaction_source
from sluice.errors import SchemaError
from sluice.io.binlog_file import iter_raw_spans

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"
TEXT = ColumnInfo(name="s", collation=45)


def _rule(t: int, meta: int = 0, info: ColumnInfo | None = None, nullable: bool = True):
    table_map = SimpleNamespace(schema="db", table="t", column_types=(t,), column_meta=(meta,), nullable=(nullable,))
    return column_rules(table_map, [info or ColumnInfo(name="c")])[(info or ColumnInfo(name="c")).name or "@1"]


def test_datetime_is_epoch_milliseconds_up_to_three_digits_and_microseconds_beyond():
    # Debezium's example: DATETIME 2018-06-20 06:37:03 becomes 1529476623000.
    assert _rule(T.DATETIME2, 0)("2018-06-20 06:37:03") == 1529476623000
    assert _rule(T.DATETIME2, 3)("2018-06-20 06:37:03.125") == 1529476623125
    assert _rule(T.DATETIME2, 6)("2018-06-20 06:37:03.000001") == 1529476623000001
    assert _rule(T.DATETIME2, 6)("1000-01-01 00:00:00.000000") == -30610224000000000


def test_timestamp_is_the_utc_instant_as_iso_text():
    # Debezium's example: a TIMESTAMP of that instant becomes "2018-06-20T13:37:03Z".
    assert _rule(T.TIMESTAMP2, 0)("2018-06-20T13:37:03Z") == "2018-06-20T13:37:03Z"
    assert _rule(T.TIMESTAMP2, 3)("2018-06-20T13:37:03.250Z") == "2018-06-20T13:37:03.250Z"


def test_date_is_days_since_the_epoch_and_time_is_signed_microseconds():
    assert _rule(T.DATE)("2018-06-20") == 17702
    assert _rule(T.DATE)("1969-12-31") == -1
    assert _rule(T.TIME2, 2)("-838:59:59.50") == -(838 * 3600 + 59 * 60 + 59) * 1_000_000 - 500_000
    assert _rule(T.TIME2, 0)("12:00:01") == 43_201_000_000


def test_zero_dates_are_null_when_the_column_allows_it_and_the_epoch_otherwise():
    assert _rule(T.DATE, nullable=True)("0000-00-00") is None
    assert _rule(T.DATE, nullable=False)("0000-00-00") == 0
    assert _rule(T.DATETIME2, 0, nullable=False)("2020-00-10 00:00:00") == 0
    assert _rule(T.TIMESTAMP2, 0, nullable=False)("0000-00-00 00:00:00") == "1970-01-01T00:00:00Z"
    assert _rule(T.TIMESTAMP2, 0, nullable=True)("0000-00-00 00:00:00") is None


@pytest.mark.parametrize(("text", "scale", "unscaled"), [
    ("10.50", 2, 1050), ("-0.01", 2, -1), ("1.28", 2, 128), ("-1.28", 2, -128), ("0.000", 3, 0),
    ("-99999999999999999999999999999999999.999999999999999999999999999999", 30, -(10**65 - 1)),
])
def test_decimal_is_the_unscaled_twos_complement_big_endian_in_base64(text: str, scale: int, unscaled: int):
    raw = base64.b64decode(_rule(T.NEWDECIMAL, 65 << 8 | scale)(text))
    assert int.from_bytes(raw, "big", signed=True) == unscaled
    # minimal, as Java's BigInteger.toByteArray: no redundant sign byte
    assert len(raw) == 1 or not ((raw[0] == 0 and raw[1] < 0x80) or (raw[0] == 0xFF and raw[1] >= 0x80))
    with localcontext(prec=100):  # Debezium's reader: the unscaled value with the column's scale
        assert Decimal(unscaled).scaleb(-scale) == Decimal(text)


def test_bits_are_a_boolean_for_one_bit_else_little_endian_bytes_of_the_bit_count():
    assert _rule(T.BIT, 1 << 8)(1) is True and _rule(T.BIT, 1 << 8)(0) is False
    twelve = _rule(T.BIT, 4 << 8 | 1)  # BIT(12): 1 whole byte, 4 more bits -> 2 bytes
    assert base64.b64decode(twelve(0x0A0B)) == b"\x0b\x0a"
    assert len(base64.b64decode(_rule(T.BIT, 0 << 8 | 8)(5))) == 8  # BIT(64)


def test_sets_are_comma_joined_and_json_is_its_text():
    members = ColumnInfo(name="c", set_values=("x", "y", "z"))
    assert _rule(T.STRING, T.SET << 8 | 1, members)(["x", "z"]) == "x,z"
    assert _rule(T.STRING, T.SET << 8 | 1, members)([]) == ""
    assert json.loads(_rule(T.JSON, 4)({"a": [1, "b"]})) == {"a": [1, "b"]}


def test_columns_read_by_position_have_no_debezium_form():
    unsure = ColumnInfo(name="@1", mark_unsure=True)
    with pytest.raises(SchemaError, match="read by position"):
        _rule(T.LONG, 0, unsure)
    with pytest.raises(SchemaError, match="members"):
        _rule(T.STRING, T.SET << 8 | 1, ColumnInfo(name="c"))


def _events(name: str) -> tuple[list[dict], list[dict]]:
    """A golden file's JSON lines and Debezium's events, from one capture."""
    data = (DATA / f"{name}.binlog").read_bytes()
    capture = ChangeCapture(CaptureConfig(output=CaptureOutput.LINES), Checkpoint(name, 4))
    convert = DebeziumLines(capture.layouts, name="shop", connector="mysql")
    lines, events = [], []
    for committed in capture.feed_file(name, name, iter_raw_spans(io.BytesIO(data))):
        server_id, thread = transaction_source(committed.transaction.events)
        for chunk in committed.lines or ():
            lines += [json.loads(line) for line in chunk.splitlines()]
            events += [json.loads(line) for line in convert.convert_chunk(chunk, server_id, thread).splitlines()]
    return lines, events


@pytest.mark.parametrize("name", ["mysql-matrix", "mariadb-matrix", "mysql-multitable", "mariadb-compressed"])
def test_every_change_is_one_event_with_the_envelope_and_the_same_columns(name: str):
    lines, events = _events(name)
    assert events and len(events) == len(lines)
    for line, event in zip(lines, events, strict=True):
        assert list(event) == ["before", "after", "source", "op", "ts_ms", "transaction"]
        assert event["op"] == DEBEZIUM_OPS[line["op"]]
        for side in ("before", "after"):
            assert (event[side] is None) == (line[side] is None)
            if line[side] is not None:
                assert list(event[side]) == list(line[side])
                nulls = {k for k, v in line[side].items() if v is None}  # and a zero date may become null
                assert nulls <= {k for k, v in event[side].items() if v is None}
        source = event["source"]
        assert (source["db"], source["table"], source["file"], source["pos"], source["row"], source["gtid"]) == (
            line["db"], line["table"], line["file"], line["pos"], line["row"], line["gtid"])
        assert source["name"] == "shop" and source["ts_ms"] == event["ts_ms"] == line["ts"] * 1000
        assert isinstance(source["server_id"], int)
