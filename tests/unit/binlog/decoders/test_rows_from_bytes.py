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


# latin1 (MariaDB's default before 11.6) and koi8u map the bytes below 0x80 to ASCII; swe7 does not.
_CHARMAPS = {"latin1": 8, "koi8u": 75, "swe7": 10}
_ASCII_TEXTS = [b"", b"plain ascii text", b"quote \" back \\ slash", b"ctl \x00\x01\x08\x0c\x1f\x7f end",
                b"row-12345-cccccccccccccccccccccccccccccccccccccccc", b"[swe7 brackets] @ ^ ` { | } ~",
                b"caf\xe9", b"abcdefg\x80", b"\xff", b"12345678\xe912345678"]


@pytest.mark.parametrize("charset", sorted(_CHARMAPS))
@pytest.mark.parametrize("kind", ["write", "update"])
def test_charmap_text_below_0x80_is_written_as_the_decoded_text(charset: str, kind: str) -> None:
    """A single-byte charset's column whose table maps ASCII to itself takes its ASCII values' bytes
    as their UTF-8 (no text object made); every value, ASCII or not, and every charmap, must be
    written as its decoded text is. Each escape-needing byte falls at each offset of a word."""
    from sluice.binlog.column_info import ColumnInfo
    from sluice.binlog.constants import ColumnType as T
    from sluice.binlog.values.charsets import charmap_table
    from tests.unit.binlog.encoders import char_meta

    info = ColumnInfo(collation=_CHARMAPS[charset])
    m = Map((T.LONG, T.VARCHAR, T.STRING, T.BLOB),
            (0, 400, char_meta(T.STRING, 60), 2), (ColumnInfo(unsigned=False), info, info, info))
    table = charmap_table(charset)
    assert table is not None
    texts = [t for t in [*_ASCII_TEXTS, *(b"x" * i + bytes([c]) + b"y" * 9 for c in (0, 9, 10, 13, 31, 34, 92, 127)
                                         for i in range(9))]
             if "\ufffe" not in t.decode("latin1").translate(dict(enumerate(table)))]  # text the charset has
    body = bytearray()
    for i, text in enumerate(texts):
        row = b"\x00" + i.to_bytes(4, "little") + b"".join(
            len(t).to_bytes(prefix, "little") + t for t, prefix in ((text, 2), (text[:60], 1), (text[::-1], 2)))
        body += row * (2 if kind == "update" else 1)
    body = bytes(body)
    full = 0b1111
    program = program_of(m, kind, full, full if kind == "update" else None, body)
    assert program is not None
    keys = line_parts(kind, "db", "t", ("id", "a", "b", "c"), ("id",), "binlog.000001")[1]
    metas = kind_metas("db", "t", ("id",), "binlog.000001")
    code = KIND_CODES[kind]

    def decoded(rows: Any) -> None:
        rows.add_rows(code, keys, program.decode(body, 0, len(body)), rows.meta_id(metas[code]), 4, 0, ABSENT,
                      value_bytes, 0)

    def from_bytes(rows: Any) -> None:
        rows.add_body(code, keys, program, body, 0, len(body), rows.meta_id(metas[code]), 4, 0, value_bytes)

    got = _outcome(from_bytes)
    assert got == _outcome(decoded)
    assert not isinstance(got, type) and got[0] == len(texts) and got[2] is not None and not got[2][0]
    after = got[1]["after"][2]
    assert (b'"[swe7 brackets]' in after) == (charset != "swe7")  # swe7's 0x5B is "Ä", not "["
