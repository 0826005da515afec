"""Text rows split into binary columns all at once (``sluice.spark.snapshot.text_rows``), no server.

``split_rows`` must read exactly what ``parse_text_row`` reads, row by row: NULLs, empty values,
every length-prefix width (1, 2, 3 bytes here; 8 is built by hand), bytes that are not UTF-8; and
raise ``ProtocolError`` where ``parse_text_row`` does: a missing value, a value or a prefix running
past its row, bytes left over, the 0xFF prefix. Every test runs on the compiled core's
``text_columns`` and on the numpy twin, and the two must agree on every cut of a block.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.binlog import rowplan
from sluice.errors import ProtocolError
from sluice.spark.snapshot.text_rows import split_rows
from sluice.wire.responses import lenenc_bytes
from sluice.wire.resultset import parse_text_row
from tests.conftest import core_or_twin, examples

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module", autouse=True, params=[True, False], ids=["compiled", "twin"])
def compiled(request: pytest.FixtureRequest) -> Iterator[bool]:
    yield from core_or_twin(request.param)

VALUE = st.one_of(
    st.none(),
    st.binary(max_size=30),
    st.sampled_from([b"", b"x" * 250, b"y" * 251, b"z" * 300, b"\xff\xfe" * 40000]),
)


def _payload(row: list[bytes | None]) -> bytes:
    return b"".join(b"\xfb" if v is None else lenenc_bytes(v) for v in row)


def _blocks(payloads: list[bytes], cuts: tuple[int, ...] = ()) -> list[tuple[bytes, bytes]]:
    """The payloads in blocks as ``RawResultSet.blocks`` holds them, cut before the rows ``cuts``."""
    out = []
    for a, b in zip((0, *cuts), (*cuts, len(payloads)), strict=True):
        ends, at = [], 0
        for p in payloads[a:b]:
            at += len(p)
            ends.append(at.to_bytes(8, "little"))
        out.append((b"".join(payloads[a:b]), b"".join(ends)))
    return out


@settings(max_examples=examples(150), deadline=None)
@given(st.integers(min_value=1, max_value=5).flatmap(
    lambda n: st.lists(st.lists(VALUE, min_size=n, max_size=n), max_size=12).map(lambda rows: (n, rows))))
def test_split_rows_reads_what_parse_text_row_reads(case: tuple[int, list[list[bytes | None]]]) -> None:
    n, rows = case
    payloads = [_payload(r) for r in rows]
    for cuts in ((), (len(rows) // 2,), (1, len(rows) // 2) if len(rows) > 1 else ()):
        columns = split_rows(_blocks(payloads, cuts), n)
        assert len(columns) == n
        for c, column in enumerate(columns):
            assert column.to_pylist() == [r[c] for r in rows]
    for payload, row in zip(payloads, rows, strict=True):
        decoded = tuple(None if v is None else v.decode("utf-8", "surrogateescape") for v in row)
        assert parse_text_row(payload, n) == decoded


def test_an_eight_byte_length_prefix() -> None:
    payload = b"\xfe" + (3).to_bytes(8, "little") + b"abc" + b"\x01d"
    assert [c.to_pylist() for c in split_rows(_blocks([payload, b"\x00\xfb"]), 2)] == [[b"abc", b""], [b"d", None]]


def test_no_rows() -> None:
    assert [c.to_pylist() for c in split_rows([], 3)] == [[], [], []]
    assert [c.to_pylist() for c in split_rows(_blocks([]), 3)] == [[], [], []]


@pytest.mark.parametrize(("payload", "message"), [
    (b"\x01a", "expected 2 values, found 1"),
    (b"\x01a\x05ab", "runs past"),
    (b"\x01a\x01b\x00", "bytes left"),
    (b"\x01a\xfc\x01", "runs past the row"),
    (b"\xff\x01a", "0xFF"),
])
def test_malformed_rows(payload: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        split_rows(_blocks([b"\x01x\x01y", payload], (1,)), 2)
    with pytest.raises(ProtocolError):
        parse_text_row(payload, 2)


def test_row_ends_that_do_not_fit_their_block() -> None:
    row = b"\x01a\x01b"
    for ends in ((3).to_bytes(8, "little"), (5).to_bytes(8, "little"),
                 (4).to_bytes(8, "little") + (2).to_bytes(8, "little") + (4).to_bytes(8, "little")):
        with pytest.raises(ProtocolError, match="do not fit"):
            split_rows([(row, ends)], 2)


def _either(blocks: list[tuple[bytes, bytes]], n: int) -> list[pa.Array] | str:
    try:
        return split_rows(blocks, n)
    except ProtocolError as exc:
        return f"ProtocolError: {exc}"


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(min_value=0, max_value=4).flatmap(
    lambda n: st.lists(st.lists(VALUE, min_size=n, max_size=n), min_size=1, max_size=6).map(lambda rows: (n, rows))))
def test_compiled_and_twin_agree_on_every_cut_row(case: tuple[int, list[list[bytes | None]]]) -> None:
    """The last row cut short at every byte, or run together with the one before it: the compiled
    core reads nothing past a row and gives the twin's columns or the twin's error."""
    n, rows = case
    payloads = [_payload(r) for r in rows]
    last = payloads[-1]
    cases = [[*payloads[:-1], last[:cut]] for cut in range(len(last) + 1) if cut < 600 or cut % 97 == 0]
    if len(payloads) > 1:
        cases.append([*payloads[:-2], payloads[-2] + last])
    for case_payloads in cases:
        blocks = _blocks(case_payloads, (len(case_payloads) // 2,))
        got = []
        for enabled in (True, False):
            previous = rowplan.use_compiled(enabled)
            try:
                if enabled and rowplan.core() is None:
                    pytest.skip("the compiled core was not built")
                got.append(_either(blocks, n))
            finally:
                rowplan.use_compiled(previous)
        assert got[0] == got[1]
