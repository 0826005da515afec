"""Checkpoints and binlog position ordering (no server)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.binlog.position import (
    Checkpoint,
    SourceIdentity,
    binlog_file_key,
    furthest,
    gtid_covers,
    position_key,
    start_checkpoint,
)
from sluice.errors import ConfigError

pytestmark = pytest.mark.unit

MYSQL_SET = "3d687a2c-b38e-11ed-91ef-3f952e283fc3:1-5:7,3d687a2c-b38e-11ed-91ef-3f952e283fc3:tag:1-3"


def test_json_document_and_text() -> None:
    cp = Checkpoint("mysql-bin.000003", 1234, MYSQL_SET)
    assert cp.to_json() == {"file": "mysql-bin.000003", "pos": 1234, "gtid_set": MYSQL_SET}
    assert str(cp) == f"mysql-bin.000003:1234 gtid={MYSQL_SET}"
    assert str(Checkpoint("binlog.000001", 4)) == "binlog.000001:4"
    assert str(Checkpoint("binlog.000001", 4, "")) == "binlog.000001:4 gtid="
    assert Checkpoint.from_json({"file": "binlog.000001", "pos": 4}) == Checkpoint("binlog.000001", 4, None)
    assert Checkpoint.from_json(json.loads(json.dumps(cp.to_json()))) == cp


@pytest.mark.parametrize(
    "doc",
    [
        [],
        "binlog.000001:4",
        {"pos": 4},
        {"file": 7, "pos": 4},
        {"file": "b.000001", "pos": "4"},
        {"file": "b.000001", "pos": -1},
        {"file": "b.000001", "pos": True},
        {"file": "b.000001", "pos": 4.0},
        {"file": "b.000001", "pos": 4, "gtid_set": 5},
        {"file": "b.000001", "pos": 4, "gtid": "0-1-2", "gtid_set": "0-1-2"},
        {"file": "b.000001", "pos": 4, "gtid": 5},
        {"file": "b.000001", "pos": 4, "source": "3d687a2c"},
        {"file": "b.000001", "pos": 4, "source": {"flavor": "oracle", "server": "x"}},
        {"file": "b.000001", "pos": 4, "source": {"flavor": "mariadb", "server": "1", "domains": ["0"]}},
    ],
)
def test_bad_documents_are_config_errors(doc: object) -> None:
    with pytest.raises(ConfigError) as info:
        Checkpoint.from_json(doc)  # type: ignore[arg-type]
    assert "checkpoint" in str(info.value)


UUID_A = "3d687a2c-b38e-11ed-91ef-3f952e283fc3"
UUID_B = "8a94f357-aab4-11df-86ab-c80aa9429562"
sources = st.one_of(
    st.none(),
    st.builds(SourceIdentity, st.just("mysql"), st.sampled_from([UUID_A, UUID_B])),
    st.builds(SourceIdentity, st.just("mariadb"), st.integers(1, 2**32 - 1).map(str),
              st.lists(st.integers(0, 2**32 - 1), max_size=3).map(tuple)),
)
checkpoints = st.builds(Checkpoint, st.text(max_size=20), st.integers(0, 2**64),
                        st.one_of(st.none(), st.sampled_from([MYSQL_SET, "0-1-100,1-2-7", ""])), sources)


@given(checkpoints)
def test_one_json_form_round_trips_with_its_source(cp: Checkpoint) -> None:
    back = Checkpoint.from_json(json.loads(json.dumps(cp.to_json())))
    assert back == cp and back.source == cp.source
    started = start_checkpoint(cp.to_text(), "--from")
    assert started == cp and started.source == cp.source


def test_older_documents_still_load() -> None:
    # before the source was recorded: no "source" field, and the older {file, pos, gtid} form
    assert Checkpoint.from_json({"file": "binlog.000002", "pos": 9, "gtid_set": "0-1-5"}).source is None
    assert Checkpoint.from_json({"file": "binlog.000002", "pos": 9, "gtid": ""}) == Checkpoint("binlog.000002", 9)
    old = {"file": "b.000002", "pos": 9, "gtid": MYSQL_SET}
    assert Checkpoint.from_json(old) == Checkpoint("b.000002", 9, MYSQL_SET)
    # without a source, the document is what it always was: an old reader of it sees no new field
    assert Checkpoint("b.000001", 4, "0-1-2").to_json() == {"file": "b.000001", "pos": 4, "gtid_set": "0-1-2"}


def test_the_source_is_not_part_of_the_place() -> None:
    a, b = SourceIdentity("mysql", UUID_A), SourceIdentity("mysql", UUID_B)
    assert Checkpoint("b.000001", 4, None, a) == Checkpoint("b.000001", 4, None, b)
    assert not a.same_server(b) and a.same_server(SourceIdentity("mysql", UUID_A))
    maria = SourceIdentity("mariadb", "1", (0,))
    assert maria.same_server(SourceIdentity("mariadb", "1", (0, 5)))  # a new domain is the same server
    assert str(maria) == "server_id 1 (GTID domains 0)" and str(a) == UUID_A
    assert Checkpoint("b.000001", 4).on(a).source == a


def test_a_bad_start_text_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="--from is not a checkpoint's JSON document"):
        start_checkpoint('{"file": "b.000001"', "--from")


def test_furthest_is_by_gtids_across_servers_and_by_position_on_one() -> None:
    a, b = SourceIdentity("mysql", UUID_A), SourceIdentity("mysql", UUID_B)
    early = Checkpoint("binlog.000009", 900, f"{UUID_A}:1-10", a)
    late = Checkpoint("binlog.000001", 200, f"{UUID_A}:1-12,{UUID_B}:1", b)  # the new primary's binlog
    assert furthest([late, early]) is late and furthest([early, late]) is late
    assert gtid_covers(late.gtid_set or "", early.gtid_set or "") and not gtid_covers("0-1-5", "0-1-6")
    plain = [Checkpoint("binlog.000002", 4), Checkpoint("binlog.000001", 900)]
    assert furthest(plain) == Checkpoint("binlog.000002", 4)


def test_checkpoint_is_a_frozen_value() -> None:
    cp = Checkpoint("b.000001", 4)
    with pytest.raises(AttributeError):
        cp.pos = 5  # type: ignore[misc]
    assert cp == Checkpoint("b.000001", 4) and hash(cp) == hash(Checkpoint("b.000001", 4))


def test_binlog_file_key_orders_numbers_not_text() -> None:
    names = ["mysql-bin.1000000", "mysql-bin.000010", "mysql-bin.999999", "mysql-bin.000009", "mysql-bin.000001"]
    assert sorted(names, key=binlog_file_key) == [
        "mysql-bin.000001", "mysql-bin.000009", "mysql-bin.000010", "mysql-bin.999999", "mysql-bin.1000000",
    ]
    assert binlog_file_key("mysql-bin.000010") == ("mysql-bin", 10)
    assert binlog_file_key("my.host-bin.000002") == ("my.host-bin", 2)
    assert binlog_file_key("") == ("", -1)
    assert binlog_file_key("binlog") < binlog_file_key("binlog.000001")
    assert binlog_file_key("binlog.٣") == ("binlog.٣", -1)  # only ASCII digits number a file


def test_position_key() -> None:
    assert position_key("binlog.000010", 4) > position_key("binlog.000009", 123456)
    assert position_key("binlog.000009", 200) > position_key("binlog.000009", 199)
    assert position_key("binlog.000009", 200) == ("binlog", 9, 200)


gtid_texts = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.sampled_from(["", MYSQL_SET, "0-1-100,1-2-7"]),
)
checkpoints = st.builds(Checkpoint, st.text(max_size=30), st.integers(0, 2**64), gtid_texts)


@given(checkpoints)
def test_json_round_trip(cp: Checkpoint) -> None:
    assert Checkpoint.from_json(json.loads(json.dumps(cp.to_json()))) == cp


bases = st.sampled_from(["binlog", "mysql-bin", "host.example-relay-bin"])
numbers = st.integers(0, 10**8)


@given(bases, numbers, numbers)
def test_binlog_file_key_matches_the_numbers(base: str, a: int, b: int) -> None:
    fa, fb = f"{base}.{a:06d}", f"{base}.{b:06d}"
    assert (binlog_file_key(fa) < binlog_file_key(fb)) == (a < b)
    assert (binlog_file_key(fa) == binlog_file_key(fb)) == (a == b)
    assert binlog_file_key(fa) == (base, a)
