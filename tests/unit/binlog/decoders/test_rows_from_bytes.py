"""Change-log columns and typed images written from the row bytes equal those of decoded rows.

The event runs write a rows event's change-log JSON images and, for the pipeline's tasks, its
typed images straight from the body (``ChangeRows.add_body``: ``_rowjson.pxi`` and
``TypedImages.add_body``). The reference is the same body decoded into value tuples and added
with ``add_rows``. Random tables of every column type with whole images (typed images take no
other) and with random images: the buffers, the typed columns and whether the table's typed
images failed must be equal, or both must refuse the body.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.binlog import rowplan
from sluice.binlog.absent import ABSENT
from sluice.binlog.constants import ColumnType
from sluice.cdc.change_rows import kind_metas
from sluice.cdc.jsonl import KIND_CODES, line_parts, value_bytes
from tests.conftest import examples
from tests.unit.binlog.test_compiled_core import program_of, tables_and_bodies
from tests.unit.binlog.test_rowplan import Map

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(rowplan._compiled_core is None, reason="the compiled core is not built"),
]


def _outcome(add: Any) -> Any:
    core = rowplan._compiled_core
    rows = core.ChangeRows()
    rows.keep_typed = True
    try:
        add(rows)
    except Exception as exc:
        return type(exc)
    typed = rows.typed.get(("db", "t"))
    return (rows.length, _bytes(rows.buffers()),
            None if typed is None else (typed.failed, typed.length, None if typed.failed else _bytes(typed.buffers())))


def _bytes(buffers: Any) -> Any:
    """The core's handed-over buffers, nested in dicts, lists and tuples, as bytes (which compare by value)."""
    if isinstance(buffers, dict):
        return {name: _bytes(b) for name, b in buffers.items()}
    if isinstance(buffers, (list, tuple)):
        return type(buffers)(_bytes(b) for b in buffers)
    return buffers if isinstance(buffers, int) else bytes(buffers)


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables_and_bodies(whole=True) | tables_and_bodies(), st.integers(4, 2**40))
def test_columns_from_the_body_equal_those_of_its_decoded_rows(case: tuple[Map, str, int, int | None, bytes],
                                                               pos: int) -> None:
    m, kind, present, present_after, body = case
    program = program_of(m, kind, present, present_after, body)
    if program is None:
        return
    names = tuple(f"c{i}" for i in range(m.column_count))
    keys = line_parts(kind, "db", "t", names, ("c0",), "binlog.000001")[1]
    metas = kind_metas("db", "t", ("c0",), "binlog.000001")
    code = KIND_CODES[kind]
    ts = 1_700_000_000_000_000

    json = sum(1 << i for i, t in enumerate(m.column_types) if t == ColumnType.JSON)

    def decoded(rows: Any) -> None:
        rows.add_rows(code, keys, program.decode(body, 0, len(body)), rows.meta_id(metas[code]), pos, ts, ABSENT,
                      value_bytes, json)

    def from_bytes(rows: Any) -> None:
        rows.add_body(code, keys, program, body, 0, len(body), rows.meta_id(metas[code]), pos, ts, value_bytes)

    assert _outcome(from_bytes) == _outcome(decoded)
