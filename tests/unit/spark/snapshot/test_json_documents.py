"""MySQL's printed JSON documents written again as sluice's JSON text by the compiled core (``json_texts``).

The reference is the per-value path of a snapshot chunk's JSON column: ``json.loads`` with
``json_number``, then the mirror's ``json_text``. Documents as MySQL prints them (``", "`` and
``": "``, non-ASCII kept, control characters escaped) and in other shapes JSON allows (no spaces,
``\\u`` escapes, surrogate pairs, exponents, DECIMAL digits), random ones too, must give the same
column; documents the core cannot be sure of must make it step aside (None), never guess.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.lake.types.table_layout import mirror_columns_for_schema
from tests.conftest import examples
from tests.unit.spark.snapshot.test_chunk_arrow import _builder, _reference

pytestmark = pytest.mark.unit

core = pytest.importorskip("sluice.binlog._rowcore", reason="the compiled core is not built")

COLUMN = ColumnDef("j", "json")
SCHEMA = TableSchema("db", "t", (COLUMN,))
(MIRROR,) = mirror_columns_for_schema(SCHEMA, "mysql")


def reference(texts: list[bytes | None]) -> pa.Array:
    """The per-value path's column of ``texts``."""
    return _reference(COLUMN, MIRROR, [None if t is None else t.decode() for t in texts], "mysql")


def written(texts: list[bytes | None]) -> Any:
    raw = pa.array(texts, pa.binary())
    valid = np.asarray(raw.is_valid()).astype(np.uint8).tobytes()
    _, offsets, data = raw.buffers()
    return core.json_texts(data, offsets, raw.offset, len(raw), valid)


def built(texts: list[bytes | None]) -> pa.Array:
    """The column the snapshot's builder makes of ``texts``."""
    return _builder(COLUMN, "mysql")[1](pa.array(texts, pa.binary()))


SURE = [
    '{"a": [1, "two", null, true], "f": 1.25}', "null", "[]", "{}", '"text"', "1.50", "-0", "-0.0", "0",
    "1e300", "1E-7", "-2.5e+10", "100.0", "0.1", "123456789012345678901234567890", "-1.000000",
    '{"é": {"n": -5, "m": [0.5, 1.0e3]}}', '"quote \\" back \\\\ slash \\/ tab \\t nl \\n bs \\b ff \\f cr \\r"',
    '"\\u0001\\u001f\\u007f \\u00e9 \\u20ac \\ud83d\\ude00 \\u0000"', '"emoji 😀 and ünïcödé"',
    ' {"k" :[ 1 ,2 ] } ', '[[[[[]]]]]', '{"a": 1, "b": {"a": 2}}', "true", "false", '"\\u2028"',
    "[1, 2.50, 3e2, -0.000]", "1.0000000000000000e16",
]

NOT_SURE = [
    '"lone \\ud800"', '"\\udc00"', '{"a": 1, "a": 2}', "1e", "01", "[1,]", '{"a" 1}', "nul", "", " ",
    '"raw \x01 control"', "[" * 70 + "]" * 70, "10000000000000000.0", '{"x": 99999999999999999999.5}', "[1] x",
    "{" + ", ".join(f'"k{i}": {i}' for i in range(65)) + "}",
]


@pytest.mark.parametrize("text", SURE)
def test_documents_mysql_prints_are_written_as_the_per_value_path_writes(text: str) -> None:
    texts: list[bytes | None] = [text.encode(), None, text.encode()]
    out = written(texts)
    assert out is not None, "the core stepped aside for a document it takes"
    got = built(texts)
    want = reference(texts)
    assert got.equals(want), (got.to_pylist(), want.to_pylist())


@pytest.mark.parametrize("text", NOT_SURE)
def test_documents_the_core_is_not_sure_of_leave_the_column_to_the_per_value_path(text: str) -> None:
    assert written([b"[1, 2]", text.encode("utf-8", "surrogatepass")]) is None


def test_bytes_that_are_not_utf8_leave_the_column_to_the_per_value_path() -> None:
    assert written([b'"\xff"']) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
decimals = st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-10**6, max_value=10**6)


def test_the_builder_takes_the_core_s_column(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the core is sure, the per-value path (which alone calls ``column_array``) is not taken."""
    texts: list[bytes | None] = [t.encode() for t in SURE]
    want = reference(texts)

    def per_value(*_: Any) -> pa.Array:
        raise AssertionError("the per-value path was taken")

    monkeypatch.setattr("sluice.spark.snapshot.chunk_arrow.column_array", per_value)
    assert built(texts).equals(want)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(json_values | decimals.map(lambda d: ("decimal", str(d))), min_size=1, max_size=8),
       st.booleans(), st.booleans())
def test_random_documents_equal_the_per_value_path(values: list[Any], spaced: bool, ascii_only: bool) -> None:
    """Random documents printed as MySQL prints them (or compactly, or with every non-ASCII
    character escaped); a DECIMAL as its digits. Where the core takes the column, it must equal
    the reference; where it steps aside, the builder still does (by the per-value path)."""
    separators = (", ", ": ") if spaced else (",", ":")
    texts: list[bytes | None] = []
    for value in values:
        if isinstance(value, tuple):
            texts.append(value[1].encode())
        else:
            texts.append(json.dumps(value, separators=separators, ensure_ascii=ascii_only).encode())
    got = built(texts)
    want = reference(texts)
    assert got.equals(want), (texts, got.to_pylist(), want.to_pylist())


@settings(max_examples=examples(1500), deadline=None)
@given(st.sampled_from(SURE), st.lists(st.tuples(st.integers(0, 200), st.binary(max_size=3)), max_size=3))
def test_broken_documents_are_refused_or_written_as_the_reference_writes(text: str,
                                                                       edits: list[tuple[int, bytes]]) -> None:
    """Bytes cut, replaced and inserted anywhere: the core reads inside the buffer only, and a
    document it takes is one the reference takes too, written the same."""
    data = bytearray(text.encode())
    for at, piece in edits:
        at = min(at, len(data))
        data[at:at + 1] = piece
    out = written([bytes(data)])
    if out is None:
        return
    want = reference([bytes(data)]).to_pylist()[0]
    assert (None if out[0] == b"\x00" else out[2].decode()) == want
