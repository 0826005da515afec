"""The canonical row form ``sluice verify`` compares in: equal values give equal text and checksums
whatever Arrow type carried them, unequal ones differ, and every value keeps its exact form."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, time
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.spark.verify.rows import canonical_column, row_checksums
from tests.conftest import examples

pytestmark = pytest.mark.unit


def test_decimals_keep_their_digits():
    array = pa.array([Decimal("12345678901234567890.123456789"), Decimal("-0.10"), None], pa.decimal128(29, 9))
    assert canonical_column(array) == ["12345678901234567890.123456789", "-0.100000000", None]


def test_temporal_values_are_iso_text():
    assert canonical_column(pa.array([date(2024, 2, 29), None])) == ["2024-02-29", None]
    stamps = pa.array([datetime(2024, 1, 2, 3, 4, 5, 600000)], pa.timestamp("us"))
    assert canonical_column(stamps) == ["2024-01-02 03:04:05.600000"]
    aware = pa.array([datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)], pa.timestamp("us", tz="UTC"))
    assert canonical_column(aware) == ["2024-01-02 03:04:05.000000Z"]
    assert canonical_column(pa.array([time(23, 59, 59, 1)], pa.time64("us"))) == ["23:59:59.000001"]


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary(), pa.binary(3)])
def test_binary_values_are_base64_whatever_their_arrow_type(kind: pa.DataType):
    assert canonical_column(pa.array([b"\x00\xff\x10", None], kind)) == ["AP8Q", None]


def test_other_values_are_python_values():
    assert canonical_column(pa.array([1, None, -(2**63)])) == [1, None, -(2**63)]
    assert canonical_column(pa.array(["é", "\U0001f600"])) == ["é", "\U0001f600"]
    assert canonical_column(pa.array([[1, 2], None], pa.list_(pa.int32()))) == [[1, 2], None]


def test_checksums_with_a_key_name_each_row_by_its_key():
    columns = [[1, 2], ["a", "b"]]
    rows = list(row_checksums(columns, (0,)))
    assert [k for k, _ in rows] == ["[1]", "[2]"]
    assert rows[0][1] != rows[1][1] and all(len(d) == 16 for _, d in rows)
    two = list(row_checksums(columns, (1, 0)))
    assert [k for k, _ in two] == ['["a",1]', '["b",2]']
    assert [d for _, d in two] == [d for _, d in rows]  # the checksum is of the whole row, not the key
    assert [k for k, _ in row_checksums(columns, ())] == [None, None]


def test_row_text_is_compact_json_of_the_canonical_values():
    (_, digest), = row_checksums([[Decimal("1.50")], [b"\x01"], [datetime(2024, 1, 1)]], ())
    (_, same), = row_checksums([["1.50"], ["AQ=="], ["2024-01-01T00:00:00"]], ())
    assert digest == same


def test_a_row_differs_when_any_value_does():
    base = list(row_checksums([[1], ["x"], [None]], (0,)))
    for changed in ([[1], ["y"], [None]], [[1], ["x"], [0]], [[1], ["x "], [None]]):
        assert next(iter(row_checksums(changed, (0,))))[1] != base[0][1]


_values = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=8),
                    st.floats(allow_nan=False, allow_infinity=False))


@settings(max_examples=examples(200))
@given(st.lists(st.tuples(_values, _values), min_size=1, max_size=20))
def test_equal_rows_have_equal_checksums_and_distinct_rows_distinct_ones(rows):
    columns = [list(c) for c in zip(*rows, strict=True)]
    sums = [d for _, d in row_checksums(columns, ())]
    texts = [json.dumps(list(r), separators=(",", ":"), ensure_ascii=False) for r in rows]
    for i in range(len(rows)):
        for j in range(len(rows)):
            assert (sums[i] == sums[j]) == (texts[i] == texts[j])

