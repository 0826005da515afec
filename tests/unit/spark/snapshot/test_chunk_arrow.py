"""Snapshot chunks as mirror Arrow tables (``sluice.spark.snapshot.chunk_arrow``), no server.

Every column builder, vectorized or not, must give exactly the array the per-value path gives: the
text converter of ``sluice.cdc.textvalues``, then the mirror column's converter, then
``column_array`` — the values the binlog path writes for the same row. Edge values per type: min /
max integers (unsigned BIGINT too), ZEROFILL, YEAR 0000, negative zero and widest DECIMALs, DOUBLE
extremes and negative zero, zero and partial dates, every fsp, strings with multibyte and trailing
spaces, binary bytes that are not UTF-8. FLOAT, temporal and SET texts must not take the per-value
path. Then a text the cast rejects (it falls back and names the value), keys, IPC round trips and a
whole table.
"""

from __future__ import annotations

import itertools
import random
import struct
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.textvalues import text_converter
from sluice.errors import SchemaError
from sluice.lake.types.mirror_columns import column_array
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.snapshot.chunk_arrow import (
    chunk_table,
    column_builders,
    integer_keys_in_order,
    key_values,
    text_array,
    texts,
)
from tests.conftest import examples

pytestmark = pytest.mark.unit

I64 = ("-9223372036854775808", "9223372036854775807", "0", "-1", "0042")
U64 = ("0", "18446744073709551615", "9223372036854775808", "00000000000000000001")

CASES: list[tuple[ColumnDef, tuple[str, ...]]] = [
    (ColumnDef("c", "tinyint"), ("-128", "127", "0", "007")),
    (ColumnDef("c", "tinyint", unsigned=True), ("0", "255")),
    (ColumnDef("c", "smallint"), ("-32768", "32767")),
    (ColumnDef("c", "smallint", unsigned=True), ("0", "65535")),
    (ColumnDef("c", "mediumint"), ("-8388608", "8388607")),
    (ColumnDef("c", "mediumint", unsigned=True), ("0", "16777215")),
    (ColumnDef("c", "int"), ("-2147483648", "2147483647", "0000000005")),
    (ColumnDef("c", "int", unsigned=True), ("0", "4294967295")),
    (ColumnDef("c", "bigint"), I64),
    (ColumnDef("c", "bigint", unsigned=True), U64),
    (ColumnDef("c", "year"), ("0000", "1901", "2155", "2024")),
    (ColumnDef("c", "decimal", precision=10, scale=2), ("-0.00", "0.00", "-99999999.99", "99999999.99", "0.01",
                                                        "-0.01", "12.50")),
    (ColumnDef("c", "decimal", precision=38, scale=0), ("9" * 38, "-" + "9" * 38, "-0", "0")),
    (ColumnDef("c", "decimal", precision=38, scale=38), ("0." + "9" * 38, "-0." + "0" * 38, "-0." + "0" * 37 + "1")),
    (ColumnDef("c", "decimal", precision=65, scale=30), ("-0." + "0" * 30, "1" * 35 + "." + "5" * 30)),
    (ColumnDef("c", "decimal", precision=5, scale=0, unsigned=True), ("0", "99999")),
    (ColumnDef("c", "double"), ("0", "-0", "1.7976931348623157e308", "-1.7976931348623157e308",
                                "2.2250738585072014e-308", "5e-324", "4.9406564584124654e-324", "0.1", "1e16",
                                "123456789012345680000",
                                "-1.5e-7", "3.141592653589793", "1e-7", "100")),
    (ColumnDef("c", "float"), ("0", "-0", "3.4028234663852886e38", "1.401298464324817e-45", "0.1", "-2.5")),
    (ColumnDef("c", "date"), ("2024-02-29", "0000-00-00", "2024-00-10", "2024-02-00", "0000-01-01", "9999-12-31",
                              "1000-01-01", "2023-02-29")),
    *[(ColumnDef("c", "datetime", fsp=f), ("0000-00-00 00:00:00" + ("." + "0" * f if f else ""),
                                           "2024-01-31 23:59:59" + ("." + "123456"[:f] if f else ""),
                                           "1000-01-01 00:00:00" + ("." + "9" * f if f else "")))
      for f in range(7)],
    *[(ColumnDef("c", "timestamp", fsp=f), ("0000-00-00 00:00:00" + ("." + "0" * f if f else ""),
                                            "1970-01-01 00:00:01" + ("." + "000001"[-f:] if f else ""),
                                            "2038-01-19 03:14:07" + ("." + "9" * f if f else "")))
      for f in range(7)],
    *[(ColumnDef("c", "time", fsp=f), ("-838:59:59" + ("." + "0" * f if f else ""),
                                       "00:00:00" + ("." + "5" * f if f else "")))
      for f in range(7)],
    (ColumnDef("c", "char", length=10, charset="utf8mb4", collation="utf8mb4_general_ci"),
     ("", "a", "été", "日本語", "emoji 😀", "trailing  ", " lead")),
    (ColumnDef("c", "varchar", length=10, charset="latin1", collation="latin1_swedish_ci"), ("é", "x")),
    (ColumnDef("c", "text", charset="utf8mb4", collation="utf8mb4_bin"), ("long " * 100, "")),
    (ColumnDef("c", "varchar", length=4, charset="binary"), ("\udcff\udcfe", "ab")),
    (ColumnDef("c", "binary", length=4, charset="binary"), ("\x00\x00\udcff\x01", "abcd")),
    (ColumnDef("c", "varbinary", length=4, charset="binary"), ("\udc80", "", "é")),
    (ColumnDef("c", "blob", charset="binary"), ("\udcff" * 300, "")),
    (ColumnDef("c", "enum", enum_values=("a", "b c", "")), ("a", "b c", "")),
    (ColumnDef("c", "set", set_values=("x", "y")), ("x,y", "", "y")),
    (ColumnDef("c", "bit", length=64), ("\udcff" * 8, "\x00" * 8)),
    (ColumnDef("c", "json"), ('{"a": [1, 2.5, "x"]}', "null", "1.50")),
]


def _reference(column: ColumnDef, mirror: Any, values: Sequence[str | None], flavor: str | None) -> pa.Array:
    convert = text_converter(column, flavor)
    decoded = [None if v is None else v if convert is None else convert(v) for v in values]
    return column_array(mirror, [None if v is None else mirror.convert(v) for v in decoded])


def _builder(column: ColumnDef, flavor: str | None) -> tuple[Any, Any]:
    schema = TableSchema("db", "t", (column,))
    (mirror,) = mirror_columns_for_schema(schema, flavor)
    (build,) = column_builders(schema, (mirror,), flavor)
    return mirror, build


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
@pytest.mark.parametrize(("column", "values"), CASES, ids=lambda c: c.sql_type() if isinstance(c, ColumnDef) else "")
def test_builders_equal_the_per_value_path(column: ColumnDef, values: tuple[str, ...], flavor: str) -> None:
    mirror, build = _builder(column, flavor)
    sample = [*values, None, *reversed(values)]
    got = build(text_array(sample))
    want = _reference(column, mirror, sample, flavor)
    assert got.type == mirror.arrow_type
    assert got.equals(want), (got.to_pylist(), want.to_pylist())
    # Float values compare bit for bit (equals() takes -0.0 == 0.0).
    if pa.types.is_floating(mirror.arrow_type):
        assert [repr(v) for v in got.to_pylist()] == [repr(v) for v in want.to_pylist()]


COLUMN_WISE = ("float", "date", "datetime", "timestamp", "set")


@pytest.mark.parametrize(("column", "values"), [c for c in CASES if c[0].data_type in COLUMN_WISE],
                         ids=lambda c: c.sql_type() if isinstance(c, ColumnDef) else "")
def test_floats_temporal_texts_and_sets_skip_the_per_value_path(column: ColumnDef, values: tuple[str, ...],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Their builders convert column-wise (the per-value path, which alone calls ``column_array``,
    is not taken) unless a text needs it: an impossible day such as 2023-02-29 falls back."""
    mirror, build = _builder(column, "mysql")
    possible = [v for v in values if v != "2023-02-29"]
    sample = [*possible, None, *reversed(possible)]
    want = _reference(column, mirror, sample, "mysql")

    def per_value(*_: Any) -> pa.Array:
        raise AssertionError("the per-value path was taken")

    monkeypatch.setattr("sluice.spark.snapshot.chunk_arrow.column_array", per_value)
    got = build(text_array(sample))
    assert got.equals(want), (got.to_pylist(), want.to_pylist())
    if column.data_type == "date":
        with pytest.raises(AssertionError, match="per-value path"):
            build(text_array(["2023-02-29"]))


def test_mariadb_types_from_text_are_what_the_binlog_path_writes() -> None:
    """UUID / INET4 / INET6 as the server's text (upper case or long forms normalised as the row
    decoder prints the bytes), MariaDB's VECTOR as its float32s (the text protocol sends its bytes)."""
    raw = struct.pack("<2f", 1.5, -0.25).decode("utf-8", "surrogateescape")
    cases = [
        (ColumnDef("c", "uuid"), ["0B8A1C2D-3E4F-11EF-A5B6-C7D8E9F00102"], ["0b8a1c2d-3e4f-11ef-a5b6-c7d8e9f00102"]),
        (ColumnDef("c", "inet4"), ["192.0.2.1"], ["192.0.2.1"]),
        (ColumnDef("c", "inet6"), ["2001:0db8:0:0:0:0:0:1", "::ffff:192.0.2.1"], ["2001:db8::1", "::ffff:192.0.2.1"]),
        (ColumnDef("c", "vector", length=2), [raw], [[1.5, -0.25]]),
    ]
    for column, sent, expected in cases:
        _, build = _builder(column, "mariadb")
        assert build(text_array([*sent, None])).to_pylist() == [*expected, None], column


def test_negative_zero_and_scale_of_decimals() -> None:
    _, build = _builder(ColumnDef("c", "decimal", precision=10, scale=2), None)
    assert build(text_array(["-0.00", "1.50"])).to_pylist() == [Decimal("0.00"), Decimal("1.50")]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=20))
def test_doubles_parse_as_python_does(values: list[float]) -> None:
    column = ColumnDef("c", "double")
    _, build = _builder(column, None)
    # What the servers print: Python's shortest repr, exponent spellings and %.17g both.
    sample = [repr(v) for v in values] + [format(v, ".17g") for v in values] + [format(v, "e") for v in values]
    got = build(text_array(sample)).to_pylist()
    assert [repr(v) for v in got] == [repr(float(t)) for t in sample]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), min_size=1, max_size=20), st.booleans())
def test_integers_parse_as_python_does(values: list[int], signed: bool) -> None:
    if signed:
        values = [v - 2**63 for v in values]
    mirror, build = _builder(ColumnDef("c", "bigint", unsigned=not signed), None)
    got = build(text_array([str(v) for v in values]))
    assert got.equals(_reference(ColumnDef("c", "bigint", unsigned=not signed), mirror, [str(v) for v in values], None))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.decimals(min_value=Decimal("-99999.99999"), max_value=Decimal("99999.99999"), places=5,
                            allow_nan=False, allow_infinity=False), min_size=1, max_size=20))
def test_decimals_parse_as_python_does(values: list[Decimal]) -> None:
    column = ColumnDef("c", "decimal", precision=10, scale=5)
    mirror, build = _builder(column, None)
    sample = [format(v, "f") for v in values]
    assert build(text_array(sample)).equals(_reference(column, mirror, sample, None))


def test_a_text_the_cast_rejects_falls_back_and_is_named() -> None:
    _, build = _builder(ColumnDef("c", "int"), None)
    with pytest.raises(SchemaError, match=r"column `c` \(int\).*'12x'"):
        build(text_array(["1", "12x"]))
    _, build = _builder(ColumnDef("c", "tinyint"), None)
    with pytest.raises(SchemaError, match="does not fit"):
        build(text_array(["300"]))
    _, build = _builder(ColumnDef("c", "varchar", length=3, charset="utf8mb4", collation="utf8mb4_bin"), None)
    with pytest.raises(SchemaError, match="does not fit"):  # not UTF-8 in a text column
        build(text_array(["\udcff"]))


def test_texts_round_trip_binary_values() -> None:
    values = ["a", None, "\udcff\udc80é", ""]
    assert texts(text_array(values)) == values


SCHEMA = TableSchema("shop", "orders", (
    ColumnDef("id", "bigint", unsigned=True, nullable=False),
    ColumnDef("region", "varchar", length=10, charset="utf8mb4", collation="utf8mb4_general_ci", nullable=False),
    ColumnDef("amount", "decimal", precision=10, scale=2),
    ColumnDef("at", "timestamp", fsp=3),
    ColumnDef("note", "text", charset="utf8mb4", collation="utf8mb4_general_ci"),
), primary_key=("id", "region"))


def test_chunk_table_and_keys_and_ipc() -> None:
    rng = random.Random(7)
    rows = [(str(i), f"r{i % 3}", f"{rng.randrange(-10**6, 10**6) / 100:.2f}",
             None if i % 5 == 0 else f"2024-01-0{1 + i % 9} 10:00:00.{i % 1000:03d}", "n" * (i % 4))
            for i in range(50)]
    columns = mirror_columns_for_schema(SCHEMA, "mysql")
    builders = column_builders(SCHEMA, columns, "mysql")
    values = [text_array([r[c] for r in rows]) for c in range(5)]
    table = chunk_table(columns, builders, values)
    assert table.num_rows == 50
    assert table.column("id").to_pylist() == [Decimal(i) for i in range(50)]
    assert table.column("at").to_pylist()[1].isoformat() == "2024-01-02T10:00:00.001000+00:00"
    assert table.column("at").null_count == 10
    assert key_values(SCHEMA, ("id", "region"), "mysql", values)[:2] == [(0, "r0"), (1, "r1")]
    empty = chunk_table(columns, builders, [text_array([]) for _ in range(5)])
    assert empty.num_rows == 0 and empty.schema == table.schema


def test_column_counts_must_agree() -> None:
    with pytest.raises(SchemaError, match="mirror columns"):
        column_builders(SCHEMA, mirror_columns_for_schema(SCHEMA)[:2], None)


@settings(max_examples=examples(200), deadline=None)
@example(keys=[1, -(2**63)], sort=False, lower=None, upper=None, data_type="int", unsigned=False)  # a wrapped diff
@given(st.lists(st.integers(min_value=-(2**63), max_value=2**64 - 1), max_size=30), st.booleans(),
       st.one_of(st.none(), st.integers(-50, 50)), st.one_of(st.none(), st.integers(-50, 50)),
       st.sampled_from(["int", "bigint", "varchar"]), st.booleans())
def test_integer_keys_in_order_agrees_with_reconcile_keys(keys: list[int], sort: bool, lower: int | None,
                                                         upper: int | None, data_type: str, unsigned: bool) -> None:
    """Where the column-wise check says the rows are in order, reconcile_keys (no changes in the window)
    finds nothing to do; where reconcile_keys refuses the rows, the column-wise check says no."""
    from sluice.binlog.position import Checkpoint
    from sluice.cdc.table_read.chunks import Chunk
    from sluice.cdc.table_read.reconcile import key_order, reconcile_keys

    if sort:
        keys = sorted(set(keys))
    key_column = ColumnDef("id", data_type, unsigned=unsigned, nullable=False)
    schema = TableSchema("db", "t", (ColumnDef("v", "int"), key_column), ("id",))
    values = [text_array(["1"] * len(keys)), text_array([str(k) for k in keys])]
    bound = str if data_type == "varchar" else int  # a bound holds the key's decoded value
    chunk = Chunk("db", "t", 0, ("id",), None if lower is None else (bound(lower),),
                  None if upper is None else (bound(upper),))
    fast = integer_keys_in_order(schema, ("id",), chunk.lower, chunk.upper, values)
    mark = Checkpoint("binlog.000001", 4)
    try:
        slow = reconcile_keys(chunk, mark, mark, key_values(schema, ("id",), None, values), [],
                              key_order(schema, ("id",)))
    except SchemaError:
        assert not fast
    else:
        assert slow == (None, [])
    if fast:
        assert data_type != "varchar" and all(a < b for a, b in itertools.pairwise(keys))
