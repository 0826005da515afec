"""Snapshot chunk planning without a server: keys, integer ranges, sampled boundaries, SQL, JSON, progress."""

from __future__ import annotations

import json
import pickle
from decimal import Decimal

import pytest

from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.table_read.chunks import (
    CHUNK_BYTES,
    DEFAULT_CHUNK_ROWS,
    Chunk,
    boundary_chunks,
    choose_key,
    chunk_predicate,
    chunk_rows_for,
    integer_chunks,
    sql_literal,
)
from sluice.errors import ConfigError, SchemaError

pytestmark = pytest.mark.unit

ID = ColumnDef("id", "bigint", nullable=False)
NAME = ColumnDef("name", "varchar", nullable=False, length=20, charset="utf8mb4", collation="utf8mb4_general_ci")
NOTE = ColumnDef("note", "varchar", length=20, charset="utf8mb4", collation="utf8mb4_general_ci")
DOC = ColumnDef("doc", "json", nullable=False)


def test_choose_key_prefers_primary_then_not_null_unique() -> None:
    t = TableSchema("d", "t", (ID, NAME, NOTE), primary_key=("id",))
    assert choose_key(t, [("name",)]) == ("id",)
    no_pk = TableSchema("d", "t", (ID, NAME, NOTE))
    assert choose_key(no_pk, [("note",), ("NAME", "id")]) == ("name", "id")  # nullable unique skipped
    assert choose_key(no_pk, [("note",)]) == ()
    assert choose_key(TableSchema("d", "t", (DOC, NOTE), primary_key=("doc",))) == ()  # JSON is no key type


def test_integer_chunks_cover_the_range_evenly_and_are_open_at_both_ends() -> None:
    chunks = integer_chunks("d", "t", "id", 1, 1000, rows=1000, chunk_rows=250)
    assert [(c.lower, c.upper) for c in chunks] == [
        (None, (251,)), ((251,), (501,)), ((501,), (751,)), ((751,), None)]
    assert [c.index for c in chunks] == [0, 1, 2, 3]
    # a bad estimate never yields more chunks than keys
    assert len(integer_chunks("d", "t", "id", 5, 7, rows=10**9, chunk_rows=1)) == 3
    assert [(c.lower, c.upper) for c in integer_chunks("d", "t", "id", None, None, 0)] == [(None, None)]
    assert len(integer_chunks("d", "t", "id", 3, 3, rows=1, chunk_rows=1)) == 1
    with pytest.raises(ConfigError, match="at least 1 row"):
        integer_chunks("d", "t", "id", 1, 2, rows=2, chunk_rows=0)


def test_boundary_chunks_from_samples() -> None:
    chunks = boundary_chunks("d", "t", ("a", "b"), [("k", 3), ("p", 1)])
    assert [(c.lower, c.upper) for c in chunks] == [(None, ("k", 3)), (("k", 3), ("p", 1)), (("p", 1), None)]
    assert boundary_chunks("d", "t", ("a",), []) == [Chunk("d", "t", 0, ("a",), None, None)]
    with pytest.raises(SchemaError, match="has 1 values"):
        boundary_chunks("d", "t", ("a", "b"), [("k",)])


def test_predicates_compare_in_sql_with_the_column_collation() -> None:
    t = TableSchema("d", "t", (ID, NAME), primary_key=("name", "id"))
    chunk = Chunk("d", "t", 1, ("name", "id"), ("Ab", 3), ("z\u00e9", 9))
    assert chunk_predicate(t, chunk) == (
        "(`name`, `id`) >= (_utf8mb4 X'4162' COLLATE utf8mb4_general_ci, 3) AND "
        "(`name`, `id`) < (_utf8mb4 X'7ac3a9' COLLATE utf8mb4_general_ci, 9)")
    assert chunk_predicate(t, Chunk("d", "t", 0, ("id",), None, (5,))) == "`id` < 5"
    assert chunk_predicate(t, Chunk("d", "t", 0, ("id",), None, None)) == "TRUE"
    latin = ColumnDef("l", "char", charset="latin1", collation="latin1_swedish_ci")
    assert sql_literal(latin, "a") == "CONVERT(_utf8mb4 X'61' USING latin1) COLLATE latin1_swedish_ci"
    assert sql_literal(ColumnDef("d", "decimal", precision=5, scale=2), Decimal("-1.50")) == "-1.50"
    assert sql_literal(ColumnDef("b", "varbinary", charset="binary"), b"\x00'") == "X'0027'"
    assert sql_literal(ColumnDef("t", "datetime"), "2024-01-02 03:04:05") == "'2024-01-02 03:04:05'"
    with pytest.raises(SchemaError):
        sql_literal(ColumnDef("t", "date"), "1'; DROP")


def test_chunks_pickle_and_round_trip_through_json() -> None:
    chunk = Chunk("d", "t", 2, ("a", "b", "c"), (1, Decimal("2.50"), b"\xff"), ("x", Decimal("0"), b""))
    assert pickle.loads(pickle.dumps(chunk)) == chunk
    assert Chunk.from_json(json.loads(json.dumps(chunk.to_json()))) == chunk
    assert Chunk.from_json(Chunk("d", "t", 0, ("a",), None, None).to_json()).lower is None
    with pytest.raises(ConfigError, match="damaged"):
        Chunk.from_json({"db": "d", "table": "t", "index": 0, "key": ["a"], "lower": [{"x": 1}], "upper": None})
    with pytest.raises(ConfigError):
        Chunk.from_json([1, 2])


def test_default_chunks_hold_chunk_bytes_of_the_average_row() -> None:
    assert chunk_rows_for(228) == CHUNK_BYTES // 228  # a sysbench row: about 294,000 rows
    assert chunk_rows_for(0) == DEFAULT_CHUNK_ROWS  # no statistics yet (a new or empty table)
    assert chunk_rows_for(1) == 1_000_000  # tiny rows: at most a million per chunk
    assert chunk_rows_for(10 << 20) == 1_000  # rows of megabytes: at least a thousand per chunk
    # Merged into a mirror with rows, a chunk's rows reach the driver as objects: no more than before.
    assert chunk_rows_for(228, merged=True) == DEFAULT_CHUNK_ROWS
    assert chunk_rows_for(10 << 20, merged=True) == 1_000
