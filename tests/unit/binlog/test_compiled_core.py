"""The compiled row core and its Python twin give the same result for every body.

The twin (the row plan's generated Python loops) is the reference. For random tables of every
column type and random row images — valid values, values no server writes, text that is not
valid in its character set, bodies cut at every byte — both paths must return equal values
(compared by type and ``repr``, so ``Decimal('1.0')`` differs from ``Decimal('1.00')``) or raise
the same typed error with the same message. The golden files decode to the reviewed JSON lines
on both, and the extension must have loaded wherever it was built.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.binlog import rowplan
from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.rowplan import RowPlan, plan_for
from sluice.cli import main as sluice_main
from sluice.errors import SluiceError
from tests.conftest import examples
from tests.unit.binlog.encoders import (
    char_meta,
    encode_date,
    encode_datetime2,
    encode_decimal,
    encode_json,
    encode_time2,
    encode_timestamp2,
)
from tests.unit.binlog.test_rowplan import Map

pytestmark = pytest.mark.unit

GOLDEN = sorted((Path(__file__).resolve().parents[2] / "data").glob("*.binlog"))
NO_EXTENSIONS = os.environ.get("SLUICE_NO_EXTENSIONS", "") not in ("", "0")

needs_core = pytest.mark.skipif(
    rowplan._compiled_core is None, reason="the compiled core is not built (test_compiled_core_loaded says so)"
)


def test_compiled_core_loaded() -> None:
    """A build that silently fell back to Python would pass every other test; this one fails."""
    if NO_EXTENSIONS:
        assert not rowplan.compiled()
        return
    assert rowplan._compiled_core is not None, (
        "sluice.binlog._rowcore did not import: reinstall sluice (pip install -e .) so that the "
        "package's build compiles it, or set SLUICE_NO_EXTENSIONS=1 to run the Python twin on purpose"
    )
    assert rowplan.compiled()


@pytest.fixture
def python_twin() -> Iterator[None]:
    previous = rowplan.use_compiled(False)
    try:
        yield
    finally:
        rowplan.use_compiled(previous)


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_files_on_the_python_twin(path: Path, capsys, python_twin: None) -> None:
    capsys.readouterr()
    assert sluice_main(["dump", str(path)]) == 0
    assert capsys.readouterr().out == path.with_suffix(".jsonl").read_text(encoding="utf-8")


# -- random tables and row images ---------------------------------------------------------------


_U = ColumnInfo(unsigned=True)
_S = ColumnInfo(unsigned=False)
UTF8, LATIN1, CP1251, SJIS, BINARY = 255, 8, 51, 13, 63

# (type, meta, facts): every layout and conversion a row plan knows.
COLUMNS: list[tuple[int, int, ColumnInfo]] = [
    *((t, 0, info) for t in (T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG) for info in (_U, _S)),
    (T.FLOAT, 4, _S), (T.DOUBLE, 8, _S), (T.YEAR, 0, _S), (T.NULL, 0, _S),
    *((T.NEWDECIMAL, p << 8 | s, _S) for p, s in ((1, 0), (5, 2), (9, 9), (10, 0), (18, 9), (30, 10), (65, 30))),
    (T.DATE, 0, _S), (T.TIME, 0, _S), (T.DATETIME, 0, _S), (T.TIMESTAMP, 0, _S),
    *((t, fsp, _S) for t in (T.DATETIME2, T.TIMESTAMP2, T.TIME2) for fsp in range(7)),
    *((T.BIT, (n // 8) | (n % 8) << 8, _S) for n in (1, 7, 8, 9, 17, 33, 64)),
    (T.VARCHAR, 400, ColumnInfo(collation=UTF8)), (T.VARCHAR, 30, ColumnInfo(collation=LATIN1)),
    (T.VARCHAR, 30, ColumnInfo(collation=CP1251)), (T.VARCHAR, 30, ColumnInfo(collation=SJIS)),
    (T.VARCHAR, 30, ColumnInfo(collation=BINARY)), (T.VARCHAR, 30, ColumnInfo()),
    (T.STRING, char_meta(T.STRING, 40), ColumnInfo(collation=UTF8)),
    (T.STRING, char_meta(T.STRING, 600), ColumnInfo(collation=UTF8)),
    (T.STRING, char_meta(T.STRING, 12), ColumnInfo(collation=BINARY)),
    (T.STRING, char_meta(T.ENUM, 1), ColumnInfo(enum_values=("a", "b", "c"))),
    (T.STRING, char_meta(T.ENUM, 2), _S),
    *((T.STRING, char_meta(T.SET, n), info) for n in (1, 2, 3, 8) for info in (_S, ColumnInfo(set_values=("x", "y")))),
    (T.BLOB, 2, ColumnInfo()), (T.BLOB, 1, ColumnInfo(collation=UTF8)), (T.BLOB, 3, ColumnInfo(collation=LATIN1)),
    (T.BLOB, 4, ColumnInfo(collation=BINARY)), (T.JSON, 4, _S), (T.GEOMETRY, 4, _S), (T.VECTOR, 4, _S),
    # MariaDB's own types, as the schema names them
    *((T.STRING, char_meta(T.STRING, n), ColumnInfo(collation=BINARY, mariadb_type=kind))
      for kind, n in (("uuid", 16), ("inet4", 4), ("inet6", 16))),
    (T.VARCHAR, 12, ColumnInfo(collation=BINARY, vector_dimension=3)),
]


def _valid(t: int, meta: int) -> st.SearchStrategy[bytes] | None:
    """Encodings a server writes for the temporal and DECIMAL types, or None for others."""
    if t == T.NEWDECIMAL:
        p, s = meta >> 8, meta & 0xFF
        return st.decimals(min_value=-(10 ** (p - s)) + 1, max_value=10 ** (p - s) - 1, places=s,
                           allow_nan=False, allow_infinity=False).map(lambda d: encode_decimal(d, p, s))
    if t == T.DATE:
        return st.builds(encode_date, st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31))
    if t == T.DATETIME2:
        return st.builds(encode_datetime2, st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31),
                         st.integers(0, 23), st.integers(0, 59), st.integers(0, 59),
                         st.integers(0, 999999).map(lambda u: u - u % 10 ** (6 - meta)), st.just(meta))
    if t == T.TIMESTAMP2:
        return st.builds(encode_timestamp2, st.integers(0, 2**32 - 1),
                         st.integers(0, 999999).map(lambda u: u - u % 10 ** (6 - meta)), st.just(meta))
    if t == T.TIME2:
        return st.builds(encode_time2, st.booleans(), st.integers(0, 838), st.integers(0, 59),
                         st.integers(0, 59), st.integers(0, 999999).map(lambda u: u - u % 10 ** (6 - meta)),
                         st.just(meta))
    if t == T.JSON:
        leaf = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(max_size=8))
        docs = st.recursive(leaf, lambda kids: st.lists(kids, max_size=3)
                            | st.dictionaries(st.text(max_size=4), kids, max_size=3), max_leaves=6)
        return docs.map(encode_json) | docs.map(_server_order).map(encode_json)
    return None


def _server_order(v: Any) -> Any:
    """A JSON value with its objects' keys in the order the server stores them: by length, then
    by bytes (the encoder keeps the order it is given)."""
    if isinstance(v, dict):
        return {k: _server_order(v[k]) for k in sorted(v, key=lambda k: (len(k.encode()), k.encode()))}
    if isinstance(v, list):
        return [_server_order(x) for x in v]
    return v


@st.composite
def tables_and_bodies(draw: Any, whole: bool = False) -> tuple[Map, str, int, int | None, bytes]:
    """A random table, a rows-event kind, its images' column bitmaps (every column: ``whole``) and a
    body of one to three rows."""
    picks = draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=8))
    m = Map(tuple(t for t, _, _ in picks), tuple(meta for _, meta, _ in picks), tuple(i for _, _, i in picks))
    plan = plan_for(m)
    kind = draw(st.sampled_from(["write", "delete", "update"]))
    full = (1 << m.column_count) - 1
    present = full if whole else draw(st.integers(1, full))
    present_after = (full if whole else draw(st.integers(1, full))) if kind == "update" else None
    body = bytearray()
    for _ in range(draw(st.integers(1, 3))):
        for image in [present] if present_after is None else [present, present_after]:
            body += _image(draw, plan, image)
    return m, kind, present, present_after, bytes(body)


def _image(draw: Any, plan: RowPlan, present: int) -> bytes:
    cols = [c for c in plan.cols if present >> c.index & 1]
    nulls = draw(st.integers(0, (1 << len(cols)) - 1)) if draw(st.booleans()) else 0
    out = bytearray(nulls.to_bytes((len(cols) + 7) // 8, "little"))
    for j, c in enumerate(cols):
        if nulls >> j & 1:
            continue
        t = plan.types[c.index]
        valid = _valid(t, c.spec[2] if t in (T.DATETIME2, T.TIMESTAMP2, T.TIME2) else
                       (c.spec[2] if t == T.NEWDECIMAL else 0))
        if c.kind == "var":
            if valid is not None and draw(st.booleans()):
                data = draw(valid)
            else:
                data = draw(st.binary(max_size=24) | st.text(max_size=12).map(lambda s: s.encode("utf-8")))
            out += len(data).to_bytes(c.prefix, "little") + data
        elif c.kind != "null":
            if valid is not None and draw(st.booleans()):
                out += draw(valid)
            else:
                out += draw(st.binary(min_size=c.size, max_size=c.size))
    return bytes(out)


def program_of(m: Map, kind: str, present: int, present_after: int | None, body: bytes) -> Any:
    """The compiled program the plan of ``m`` made for this body's shape (after decoding it once),
    or None when it has none or its images' columns are not in table order."""
    plan = plan_for(m)
    try:
        plan.decode_rows(kind, body, 0, len(body), present, present_after, False)
    except SluiceError:
        pass
    mask = (1 << m.column_count) - 1
    after = None if kind != "update" else (present if present_after is None else present_after) & mask
    program = plan._shapes[(kind, present & mask, after, False)][2]
    return program if program is not None and program.ordered else None


def _outcome(m: Map, kind: str, body: bytes, present: int, present_after: int | None,
             start: int = 0, end: int | None = None) -> tuple[Any, ...]:
    end = len(body) if end is None else end
    try:
        rows = plan_for(m).decode_rows(kind, body, start, end, present, present_after, False)
    except SluiceError as exc:
        return type(exc).__name__, str(exc)
    return "rows", repr(rows), [[type(v) for v in (r if kind != "update" else r[0] + r[1])] for r in rows]


def _both(m: Map, kind: str, body: bytes, present: int, present_after: int | None,
          start: int = 0, end: int | None = None) -> tuple[Any, Any]:
    compiled = _outcome(m, kind, body, present, present_after, start, end)
    previous = rowplan.use_compiled(False)
    try:
        twin = _outcome(m, kind, body, present, present_after, start, end)
    finally:
        rowplan.use_compiled(previous)
    return compiled, twin


@needs_core
@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables_and_bodies())
def test_random_tables_decode_alike(case: tuple[Map, str, int, int | None, bytes]) -> None:
    m, kind, present, present_after, body = case
    compiled, twin = _both(m, kind, body, present, present_after)
    assert compiled == twin


@needs_core
@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables_and_bodies())
def test_bodies_cut_at_every_byte_fail_alike(case: tuple[Map, str, int, int | None, bytes]) -> None:
    m, kind, present, present_after, body = case
    padded = b"\xa5" * 3 + body + b"\x5a" * 9  # bytes past ``end`` must never be read
    for cut in range(len(body)):
        compiled, twin = _both(m, kind, padded, present, present_after, 3, 3 + cut)
        assert compiled == twin, cut


@needs_core
@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=6), st.binary(max_size=80),
       st.sampled_from(["write", "update"]))
def test_random_bytes_fail_alike(picks: list[tuple[int, int, ColumnInfo]], body: bytes, kind: str) -> None:
    m = Map(tuple(t for t, _, _ in picks), tuple(meta for _, meta, _ in picks), tuple(i for _, _, i in picks))
    full = (1 << m.column_count) - 1
    compiled, twin = _both(m, kind, body, full, full if kind == "update" else None)
    assert compiled == twin


@needs_core
def test_golden_rows_events_cut_at_every_byte_fail_alike(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """Real rows events of the golden files (MySQL and MariaDB), each body cut at every byte."""
    calls: list[tuple[RowPlan, str, bytes, int, int, int, int | None]] = []
    real = RowPlan.decode_rows

    def record(self: RowPlan, kind: str, buf: Any, start: int, end: int, present: int,
               present_after: int | None, partial: bool) -> list[Any]:
        if not partial and len(calls) < 400:
            calls.append((self, kind, bytes(buf), start, end, present, present_after))
        return real(self, kind, buf, start, end, present, present_after, partial)

    monkeypatch.setattr(RowPlan, "decode_rows", record)
    # Every rows event through the parser's row plans (no event runs), so that all are recorded.
    monkeypatch.setattr(rowplan, "core", lambda: None)
    before = rowplan.handed_over
    for path in GOLDEN:
        assert sluice_main(["dump", "--format", "none", str(path)]) == 0
    capsys.readouterr()
    assert rowplan.handed_over == before, "the compiled core gave a real, valid rows event to the twin"
    monkeypatch.setattr(RowPlan, "decode_rows", real)
    assert len(calls) >= 20
    for plan, kind, buf, start, end, present, present_after in calls:
        for cut in range(start, min(end, start + 300) + 1):
            outcomes = []
            for on in (True, False):
                rowplan.use_compiled(on)
                try:
                    outcomes.append(repr(plan.decode_rows(kind, buf, start, cut, present, present_after, False)))
                except SluiceError as exc:
                    outcomes.append(f"{type(exc).__name__}: {exc}")
            rowplan.use_compiled(True)
            assert outcomes[0] == outcomes[1], (plan.table_name, cut - start)


@needs_core
@settings(max_examples=examples(800), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables_and_bodies(), st.data())
def test_counting_rows_by_their_lengths_agrees_with_decoding(case: tuple[Map, str, int, int | None, bytes],
                                                             data: Any) -> None:
    """``RowProgram.count`` (dump --count-only) finds as many rows as decoding does, or rejects a
    body whose lengths run past its end, which decoding rejects too."""
    m, kind, present, present_after, body = case
    cut = data.draw(st.integers(0, len(body)))
    plan = plan_for(m)
    try:
        rows: Any = plan.decode_rows(kind, body, 0, cut, present, present_after, False)
    except SluiceError:
        rows = None
    mask = (1 << m.column_count) - 1
    program = plan._shapes[(kind, present & mask, None if present_after is None else present_after & mask, False)][2]
    try:
        counted = program.count(body, 0, cut)
    except rowplan._compiled_core.Reject:
        assert rows is None
        return
    if rows is not None:
        assert counted == len(rows)
