"""GTID sets as checkpoints use them: tagged MySQL sets, and the algebra of MariaDB positions (checked
against a per-domain model)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.binlog.gtid import Gtid, MariadbGtid, MariadbGtidPosition, MysqlGtidSet

pytestmark = pytest.mark.unit

A = uuid.UUID("3d687a2c-b38e-11ed-91ef-3f952e283fc3")


def test_tagged_set_text_contains_union_subtract() -> None:
    s = MysqlGtidSet.parse(f"{A}:1-5:Batch:1-3:7")
    assert str(s) == f"{A}:1-5:batch:1-3:7"
    assert MysqlGtidSet.parse(str(s)) == s
    assert Gtid(A, 2, "batch") in s and Gtid(A, 2, "BATCH") in s and Gtid(A, 6) not in s
    assert Gtid(A, 4, "batch") not in s and Gtid(A, 2, "other") not in s
    u = s | MysqlGtidSet.parse(f"{A}:batch:4-6:other:1")
    assert str(u) == f"{A}:1-5:batch:1-7:other:1"
    assert str(u - MysqlGtidSet.parse(f"{A}:3:batch:2")) == f"{A}:1-2:4-5:batch:1:3-7:other:1"
    assert str(u - u) == "" and not (u - u)
    assert s.issubset(u) and not u.issubset(s)


def test_mariadb_position_contains_union_subtract() -> None:
    p = MariadbGtidPosition.parse("0-1-100,1-2-7")
    assert MariadbGtid(0, 1, 100) in p and MariadbGtid(0, 3, 42) in p and MariadbGtid(0, 1, 101) not in p
    assert MariadbGtid(2, 1, 1) not in p and "0-1-5" not in p
    q = MariadbGtidPosition.parse("0-3-101,2-1-4,1-2-5")
    assert str(p | q) == "0-3-101,1-2-7,2-1-4"
    assert str(q | p) == "0-3-101,1-2-7,2-1-4"
    assert str(p - q) == "1-2-7" and str(q - p) == "0-3-101,2-1-4"
    assert (p - p) == MariadbGtidPosition() and p.issubset(p | q) and not q.issubset(p)
    assert str(p) == "0-1-100,1-2-7"  # the operators leave their operands alone


positions = st.dictionaries(
    st.integers(0, 3), st.tuples(st.integers(1, 3), st.integers(0, 50)), max_size=4
).map(lambda d: MariadbGtidPosition(MariadbGtid(dom, srv, seq) for dom, (srv, seq) in d.items()))
gtids = st.builds(MariadbGtid, st.integers(0, 4), st.integers(1, 3), st.integers(0, 60))


def _model(p: MariadbGtidPosition) -> dict[int, int]:
    return {g.domain: g.seq for g in p}


@given(positions, positions, gtids)
def test_mariadb_algebra_matches_a_per_domain_model(p: MariadbGtidPosition, q: MariadbGtidPosition,
                                                    g: MariadbGtid) -> None:
    mp, mq = _model(p), _model(q)
    assert (g in p) == (g.domain in mp and g.seq <= mp[g.domain])
    union = _model(p | q)
    assert union == {d: max(mp.get(d, -1), mq.get(d, -1)) for d in mp.keys() | mq.keys()}
    assert _model(p - q) == {d: s for d, s in mp.items() if not (d in mq and s <= mq[d])}
    assert (p - q).issubset(p) and p.issubset(p | q) and q.issubset(p | q)
    assert MariadbGtidPosition.parse(str(p | q)) == p | q
