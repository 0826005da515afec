"""Watermark reconciliation without a server: the DBLog truth table, key moves, collation order, and
random histories whose reconciled chunks must equal the table at each chunk's high watermark."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.binlog.position import Checkpoint
from sluice.cdc.records import RowChange
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.table_read.chunks import Chunk, ChunkRead
from sluice.cdc.table_read.reconcile import (
    after_high,
    collation_weight,
    key_order,
    reconcile,
    split_key_move,
)
from sluice.errors import SchemaError
from tests.conftest import examples

pytestmark = pytest.mark.unit

FILE = "binlog.000001"
TABLE = TableSchema("d", "t", (ColumnDef("id", "int", nullable=False), ColumnDef("v", "int")), primary_key=("id",))
ORDER = key_order(TABLE, ("id",))
CHUNK = Chunk("d", "t", 1, ("id",), (10,), (20,))


def pos(i: int) -> int:
    """Offset of the i-th change; the boundary before it is ``pos(i) - 5``."""
    return 1000 + 10 * i


def change(i: int, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None,
           table: str = "t") -> RowChange:
    return RowChange(op, "d", table, before, after, ("id",), FILE, pos(i), 0, None, 0)


def ins(i: int, k: int, v: int) -> RowChange:
    return change(i, "insert", None, {"id": k, "v": v})


def upd(i: int, k: int, v0: int, k2: int, v: int) -> RowChange:
    return change(i, "update", {"id": k, "v": v0}, {"id": k2, "v": v})


def dele(i: int, k: int, v: int) -> RowChange:
    return change(i, "delete", {"id": k, "v": v}, None)


def read(rows: list[tuple[int, int]], low: int = 0, high: int = 100, chunk: Chunk = CHUNK) -> ChunkRead:
    return ChunkRead(chunk, Checkpoint(FILE, pos(low) - 5), Checkpoint(FILE, pos(high) - 5),
                     [{"id": k, "v": v} for k, v in rows])


def ids(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(r["id"], r["v"]) for r in rows]


@pytest.mark.parametrize(("select", "changes", "expected"), [
    # insert inside: SELECT missed it / saw it
    ([(11, 1)], [ins(1, 12, 2)], [(11, 1), (12, 2)]),
    ([(11, 1), (12, 2)], [ins(1, 12, 2)], [(11, 1), (12, 2)]),
    # update inside: SELECT saw the old / the new value
    ([(11, 1)], [upd(1, 11, 1, 11, 5)], [(11, 5)]),
    ([(11, 5)], [upd(1, 11, 1, 11, 5)], [(11, 5)]),
    # delete inside: SELECT saw the row / did not
    ([(11, 1)], [dele(1, 11, 1)], []),
    ([], [dele(1, 11, 1)], []),
    # insert, update, delete of keys outside the chunk change nothing
    ([(11, 1)], [ins(1, 25, 1), upd(2, 5, 1, 6, 2), dele(3, 30, 1)], [(11, 1)]),
    # a key moved into the chunk (SELECT before / after) and out of it (SELECT before / after)
    ([(11, 1)], [upd(1, 5, 7, 15, 7)], [(11, 1), (15, 7)]),
    ([(11, 1), (15, 7)], [upd(1, 5, 7, 15, 7)], [(11, 1), (15, 7)]),
    ([(11, 1), (15, 7)], [upd(1, 15, 7, 25, 7)], [(11, 1)]),
    ([(11, 1)], [upd(1, 15, 7, 25, 7)], [(11, 1)]),
    # several changes of one key: the last wins, also delete then re-insert
    ([(11, 1)], [upd(1, 11, 1, 11, 2), dele(2, 11, 2), ins(3, 11, 9)], [(11, 9)]),
    ([], [ins(1, 19, 1), dele(2, 19, 1)], []),
    # other tables and changes outside the window are ignored
    ([(11, 1)], [change(1, "insert", None, {"id": 12, "v": 0}, table="u"), ins(200, 13, 0)], [(11, 1)]),
])
def test_truth_table(select, changes, expected) -> None:
    assert ids(reconcile(read(select), changes, ORDER)) == expected


def test_bounds_are_half_open() -> None:
    out = reconcile(read([]), [ins(1, 10, 0), ins(2, 20, 0), ins(3, 9, 0), ins(4, 19, 0)], ORDER)
    assert ids(out) == [(10, 0), (19, 0)]


def test_a_select_row_outside_the_chunk_or_out_of_order_fails_loudly() -> None:
    with pytest.raises(SchemaError, match="outside the chunk"):
        reconcile(read([(25, 1)]), [], ORDER)
    with pytest.raises(SchemaError, match="out of order"):
        reconcile(read([(12, 1), (11, 1)]), [], ORDER)


def test_images_without_all_columns_are_refused() -> None:
    partial = change(1, "update", {"id": 11}, {"id": 11})
    with pytest.raises(SchemaError, match="binlog_row_image=FULL"):
        reconcile(read([(11, 1)]), [partial], ORDER)


def test_after_high_and_key_moves() -> None:
    r = read([], low=0, high=5)
    assert not after_high(r, ins(4, 11, 0), ORDER)  # before high, in the chunk: contained
    assert after_high(r, ins(5, 11, 0), ORDER)  # at/after high
    assert after_high(r, ins(4, 30, 0), ORDER)  # another chunk's key
    assert after_high(r, change(4, "insert", None, {"id": 11, "v": 0}, table="u"), ORDER)
    moved = upd(4, 5, 0, 15, 0)
    out, into = split_key_move(moved, ORDER)
    assert (out.op, out.before, out.after, into.op, into.before) == ("delete", moved.before, None, "insert", None)
    assert not after_high(r, into, ORDER) and after_high(r, out, ORDER)
    assert split_key_move(upd(4, 11, 0, 11, 1), ORDER) == (upd(4, 11, 0, 11, 1),)


def test_case_insensitive_collation_rule() -> None:
    w = collation_weight("utf8mb4_general_ci")
    assert w("abc") == w("ABC") == w("\u00c1bc") == w("abc  ")
    assert w("a") < w("B") < w("c") and w("Z") < w("_")  # general_ci weighs upper-case letters
    u = collation_weight("utf8mb4_0900_ai_ci")
    assert u("\u00e9t\u00e9") == u("ETE") and u("a ") != u("a")  # NO PAD
    assert collation_weight("utf8mb4_0900_as_ci")("\u00e9") != collation_weight("utf8mb4_0900_as_ci")("e")
    assert collation_weight("utf8mb4_bin")("a") != collation_weight("utf8mb4_bin")("A")
    schema = TableSchema("d", "s", (ColumnDef("k", "varchar", nullable=False, charset="utf8mb4",
                                              collation="utf8mb4_general_ci"), ColumnDef("v", "int")))
    order = key_order(schema, ("k",))
    assert pickle.loads(pickle.dumps(order)).of({"k": "X"}) == order.of({"k": "x"})
    chunk = Chunk("d", "s", 0, ("k",), ("b",), ("m",))
    r = ChunkRead(chunk, Checkpoint(FILE, 4), Checkpoint(FILE, 5000),
                  [{"k": "B", "v": 1}, {"k": "\u00e9t\u00e9", "v": 2}])
    # 'b' is the same key as 'B' (updated in case only); 'M' is outside [b, m); 'Apple' moves to 'kiwi'
    changes = [
        change(1, "update", {"k": "B", "v": 1}, {"k": "b", "v": 3}, table="s"),
        change(2, "insert", None, {"k": "M", "v": 4}, table="s"),
        change(3, "update", {"k": "Apple", "v": 0}, {"k": "kiwi", "v": 5}, table="s"),
    ]
    assert reconcile(r, changes, order) == [{"k": "b", "v": 3}, {"k": "\u00e9t\u00e9", "v": 2},
                                            {"k": "kiwi", "v": 5}]


# ------------------------------------------------------------------------------------- random histories
KEYS = st.integers(0, 12)
OPS = st.lists(st.tuples(st.sampled_from(["insert", "update", "delete"]), KEYS, KEYS, st.integers(0, 99)),
               max_size=40)
CHUNKS = [Chunk("d", "t", 0, ("id",), None, (4,)), Chunk("d", "t", 1, ("id",), (4,), (9,)),
          Chunk("d", "t", 2, ("id",), (9,), None)]


def _history(ops: list[tuple[str, int, int, int]]) -> tuple[list[RowChange], list[dict[int, int]]]:
    """Valid changes from random ops, and the table's state after each prefix of them."""
    state: dict[int, int] = {}
    changes: list[RowChange] = []
    states = [dict(state)]
    for op, k, k2, v in ops:
        i = len(changes)
        if op == "insert" and k not in state:
            c = ins(i, k, v)
            state[k] = v
        elif op == "update" and k in state and (k2 == k or k2 not in state):
            c = upd(i, k, state.pop(k), k2, v)
            state[k2] = v
        elif op == "delete" and k in state:
            c = dele(i, k, state.pop(k))
        else:
            continue
        changes.append(c)
        states.append(dict(state))
    return changes, states


def _rows(state: dict[int, int], chunk: Chunk) -> list[tuple[int, int]]:
    return sorted((k, v) for k, v in state.items() if ORDER.contains(chunk, (k,)))


@settings(max_examples=examples(300), deadline=None)
@given(OPS, st.data())
def test_random_histories_reconcile_to_the_state_at_high_and_stream_to_the_end(ops, data) -> None:
    changes, states = _history(ops)
    n = len(changes)
    reads = []
    for chunk in CHUNKS:
        low = data.draw(st.integers(0, n))
        high = data.draw(st.integers(low, n))
        seen = data.draw(st.integers(low, high))  # the SELECT ran after `seen` changes
        r = ChunkRead(chunk, Checkpoint(FILE, pos(low) - 5), Checkpoint(FILE, pos(high) - 5),
                      [{"id": k, "v": v} for k, v in _rows(states[seen], chunk)])
        reconciled = reconcile(r, changes, ORDER)
        assert ids(reconciled) == _rows(states[high], chunk)
        reads.append((r, reconciled))
    mirror = {row["id"]: row["v"] for _r, rows in reads for row in rows}
    for c in changes:
        for part in split_key_move(c, ORDER):
            image = part.after if part.after is not None else part.before
            assert image is not None
            owner = next(r for r, _rows in reads if ORDER.contains(r.chunk, ORDER.of(image)))
            if not after_high(owner, part, ORDER):
                continue
            if part.before is not None:
                mirror.pop(part.before["id"], None)
            if part.after is not None:
                mirror[part.after["id"]] = part.after["v"]
    assert mirror == states[n]
