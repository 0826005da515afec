"""The compiled JSON-lines writer (``_rowcore.rows_jsonl``) and its twin write the same bytes.

The twin is ``sluice.cdc.jsonl.change_line`` over the ``RowChange`` records the builder makes of a
rows event. Random tables of every column type with random row images (the compiled-core tests'
strategy), column names that need escaping, every operation, minimal images: the lines must be
equal byte for byte.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.binlog import rowplan
from sluice.binlog.absent import ABSENT
from sluice.binlog.events import RowsEvent
from sluice.binlog.header import build_header
from sluice.binlog.rowplan import plan_for
from sluice.cdc.jsonl import KIND_CODES, change_line, gtid_ts, line_parts, rows_event_lines, value_bytes
from sluice.cdc.records import RowChangeBuilder
from sluice.errors import SluiceError
from tests.conftest import examples
from tests.unit.binlog.test_compiled_core import program_of, tables_and_bodies
from tests.unit.binlog.test_rowplan import Map

T_JSON = 245

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(rowplan._compiled_core is None, reason="the compiled core is not built"),
]

NAMES = st.text(min_size=1, max_size=6).filter(lambda s: "\x00" not in s)


@settings(max_examples=examples(800), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables_and_bodies(), st.lists(NAMES, min_size=8, max_size=8, unique=True), NAMES,
       st.none() | st.text(max_size=12), st.integers(0, 2**32 - 1), st.integers(4, 2**40))
def test_compiled_lines_equal_the_change_lines(case: tuple[Map, str, int, int | None, bytes], names: list[str],
                                               table: str, gtid: str | None, ts: int, pos: int) -> None:
    m, kind, present, present_after, body = case
    try:
        rows = plan_for(m).decode_rows(kind, body, 0, len(body), present, present_after, False)
    except SluiceError:
        return  # bodies the decoder rejects are the compiled-core tests' business
    m.table = table
    columns = tuple(names[: m.column_count])
    header = build_header(ts, 30, 1, 19 + len(body), 0, 0)
    event: Any = RowsEvent(header, kind, 1, 0, m, present, present_after, rows)  # type: ignore[arg-type]
    builder = RowChangeBuilder(resolve=lambda _table, _file, _pos: (columns, (columns[0],)))
    builder.gtid = gtid
    expected = "".join(f"{change_line(change)}\n" for change in builder.feed(event, "binlog.000001", pos))
    got = rows_event_lines(rowplan._compiled_core.rows_jsonl, event, columns, (columns[0],), "binlog.000001",
                           pos, gtid)
    assert got == expected.encode()


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables_and_bodies(), st.lists(NAMES, min_size=8, max_size=8, unique=True), st.none() | st.text(max_size=12),
       st.integers(0, 2**32 - 1), st.integers(4, 2**40))
def test_lines_written_from_the_body_equal_those_of_its_decoded_rows(
        case: tuple[Map, str, int, int | None, bytes], names: list[str], gtid: str | None, ts: int, pos: int) -> None:
    """``RowProgram.lines`` writes a body's lines without a value tuple (``_rowjson.pxi``): the
    same bytes as ``rows_jsonl`` over the program's decoded rows, or the same rejection."""
    m, kind, present, present_after, body = case
    program = program_of(m, kind, present, present_after, body)
    if program is None:
        return
    columns = tuple(names[: m.column_count])
    head, keys, mid = line_parts(kind, "db", "t", columns, (columns[0],), "binlog.000001")
    code = KIND_CODES[kind]

    def outcome(write: Any) -> Any:
        try:
            return write()
        except Exception as exc:
            return type(exc)

    core = rowplan._compiled_core
    expected = outcome(lambda: core.rows_jsonl(code, head, keys, program.decode(body, 0, len(body)), mid, pos,
                                               gtid_ts(gtid), ts, ABSENT, value_bytes))
    got = outcome(lambda: program.lines(body, 0, len(body), code, head, keys, mid, pos, gtid_ts(gtid), ts,
                                        value_bytes))
    assert got == expected
    counted = outcome(lambda: program.lines(body, 0, len(body), code, None, None, None, 0, None, 0, None))
    assert isinstance(counted, bytes) == isinstance(expected, bytes)


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | st.floats() | st.text(max_size=20)
    | st.binary(max_size=20) | st.decimals(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=examples(800), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(VALUES, min_size=1, max_size=4), st.sampled_from(["write", "delete", "update"]))
def test_every_kind_of_value_is_written_as_change_line_writes_it(values: list[Any], kind: str) -> None:
    from sluice.binlog.values.json_binary import JsonDecimal

    values = [JsonDecimal(v) if isinstance(v, float) and v == v and abs(v) < 1e9 and v % 1 else v for v in values]
    m = Map(tuple([T_JSON] * len(values)), tuple([4] * len(values)))
    row = tuple(values)
    rows = [(row, row)] if kind == "update" else [row]
    columns = tuple(f"c{i}" for i in range(len(values)))
    event: Any = RowsEvent(build_header(1, 30, 1, 40, 0, 0), kind, 1, 0, m, 0, None, rows)  # type: ignore[arg-type]
    builder = RowChangeBuilder(resolve=lambda _table, _file, _pos: (columns, ()))
    builder.gtid = "g:1"
    expected = "".join(f"{change_line(change)}\n" for change in builder.feed(event, "f", 4))
    got = rows_event_lines(rowplan._compiled_core.rows_jsonl, event, columns, (), "f", 4, "g:1")
    assert got == expected.encode()


def test_strings_are_escaped_wherever_the_byte_to_escape_falls_in_a_word() -> None:
    """The writer tests eight bytes at a time for bytes to escape: put each kind at every offset."""
    m = Map((T_JSON,), (4,))
    builder = RowChangeBuilder(resolve=lambda _table, _file, _pos: (("s",), ()))
    for special in ('"', "\\", "\n", "\x00", "\x01", "\x1f", " ", "\x7f", "é", "\U0001f600", "\u2028"):
        for length in range(0, 34):
            for at in range(length):
                text = "a" * at + special + "b" * (length - at - 1)
                event: Any = RowsEvent(build_header(1, 30, 1, 40, 0, 0), "write", 1, 0, m, 0, None,  # type: ignore[arg-type]
                                       [(text,)])
                expected = "".join(f"{change_line(change)}\n" for change in builder.feed(event, "f", 4))
                got = rows_event_lines(rowplan._compiled_core.rows_jsonl, event, ("s",), (), "f", 4, None)
                assert got == expected.encode(), (special, length, at)
