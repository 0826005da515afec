"""GTID sets: text form, algebra (checked against a plain set model), binary form; MariaDB positions."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.binlog.gtid import (
    Gtid,
    GtidSyntaxError,
    MariadbGtid,
    MariadbGtidPosition,
    MysqlGtidSet,
)

pytestmark = pytest.mark.unit

A = uuid.UUID("3d687a2c-b38e-11ed-91ef-3f952e283fc3")
B = uuid.UUID("00000000-0000-0000-0000-0000000000ff")


def test_parse_and_canonical_format() -> None:
    s = MysqlGtidSet.parse(f" {str(A).upper()}:7:1-5:6 ,\n{B}:Tag_1:3-4:1-2:x:9")
    assert str(s) == f"{B}:tag_1:1-4:x:9,{A}:1-7"
    assert MysqlGtidSet.parse(str(s)) == s
    assert str(MysqlGtidSet.parse("")) == "" and not MysqlGtidSet.parse("")


@pytest.mark.parametrize("bad", ["nope", f"{A}", f"{A}:0", f"{A}:5-3", f"{A}:1-x", "zz:1", f"{A}:9tag:1"])
def test_parse_errors(bad: str) -> None:
    with pytest.raises(GtidSyntaxError):
        MysqlGtidSet.parse(bad)


def test_add_contains_union_subtract() -> None:
    s = MysqlGtidSet.parse(f"{A}:1-3")
    s.add(Gtid(A, 4))
    s.add(Gtid(A, 10))
    s.add(Gtid(A, 2))
    s.add(Gtid(B, 1, "Batch"))
    assert str(s) == f"{B}:batch:1,{A}:1-4:10"
    assert Gtid(A, 4) in s and Gtid(A, 5) not in s and Gtid(B, 1, "batch") in s and Gtid(B, 1) not in s
    u = s | MysqlGtidSet.parse(f"{A}:5-9")
    assert str(u) == f"{B}:batch:1,{A}:1-10"
    assert str(u - MysqlGtidSet.parse(f"{A}:2-3:7,{B}:batch:1")) == f"{A}:1:4-6:8-10"
    assert MysqlGtidSet.parse(f"{A}:2").issubset(u)
    assert Gtid.parse(f"{A}:t:5") == Gtid(A, 5, "t") and str(Gtid(A, 5)) == f"{A}:5"


def test_encode_untagged_layout() -> None:
    enc = MysqlGtidSet.parse(f"{A}:1-5:7").encode()
    # n_sids u64, uuid, n_intervals u64, then [start, end) pairs of u64
    assert enc == (
        (1).to_bytes(8, "little")
        + A.bytes
        + (2).to_bytes(8, "little")
        + (1).to_bytes(8, "little")
        + (6).to_bytes(8, "little")
        + (7).to_bytes(8, "little")
        + (8).to_bytes(8, "little")
    )
    assert MysqlGtidSet.decode(enc) == MysqlGtidSet.parse(f"{A}:1-5:7")


def test_encode_tagged_layout() -> None:
    s = MysqlGtidSet.parse(f"{A}:1:ab:2")
    enc = s.encode()
    head = int.from_bytes(enc[:8], "little")
    assert head >> 56 == 1 and head & 0xFF == 1 and (head >> 8) & ((1 << 48) - 1) == 2
    assert enc[8:24] == A.bytes and enc[24] == 0  # untagged entry: tag length 0 (varlen)
    assert MysqlGtidSet.decode(enc) == s


def test_decode_rejects_garbage() -> None:
    enc = MysqlGtidSet.parse(f"{A}:1-5").encode()
    for bad in (enc[:-1], enc + b"\x00", enc[:24] + (99).to_bytes(8, "little")):
        with pytest.raises((ValueError, Exception)):
            MysqlGtidSet.decode(bad)


uuids = st.sampled_from([A, B])
tags = st.sampled_from([None, "a", "zz"])
gtids = st.builds(Gtid, uuids, st.integers(1, 60), tags)
gtid_lists = st.lists(gtids, max_size=40)


def build(items: list[Gtid]) -> MysqlGtidSet:
    s = MysqlGtidSet()
    for g in items:
        s.add(g)
    return s


@given(gtid_lists, gtid_lists)
def test_algebra_matches_set_model(xs: list[Gtid], ys: list[Gtid]) -> None:
    a, b = build(xs), build(ys)
    assert set(a) == set(xs) and set(b) == set(ys)
    assert set(a | b) == set(xs) | set(ys)
    assert set(a - b) == set(xs) - set(ys)
    assert all((g in a) == (g in set(xs)) for g in ys)
    assert MysqlGtidSet.parse(str(a)) == a
    assert MysqlGtidSet.decode(a.encode()) == a
    assert (a - b).issubset(a) and a.issubset(a | b)


def test_mariadb_gtid_and_position() -> None:
    pos = MariadbGtidPosition.parse("1-2-5, 0-1-100")
    assert str(pos) == "0-1-100,1-2-5" and len(pos) == 2
    pos.advance(MariadbGtid(0, 3, 101))
    pos.advance(MariadbGtid(4, 1, 1))
    assert str(pos) == "0-3-101,1-2-5,4-1-1" and pos.get(1) == MariadbGtid(1, 2, 5)
    assert (
        MariadbGtidPosition.parse(str(pos)) == pos and MariadbGtidPosition.parse("") == MariadbGtidPosition()
    )
    assert str(MariadbGtid.parse("0-1-18446744073709551615")) == "0-1-18446744073709551615"
    for bad in ("0-1", "a-b-c", "0-1-2,0-3-4", "0-4294967296-1"):
        with pytest.raises(GtidSyntaxError):
            MariadbGtidPosition.parse(bad)
