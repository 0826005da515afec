"""Failover of the source: a replica promoted in place of its primary, read on by GTID.

Two real servers of one flavor: a primary and its replica, as the sandbox makes them
(``tests.integration.failover.pair``: MySQL GTID auto-position, MariaDB ``MASTER_USE_GTID=slave_pos``,
``log_replica_updates`` ON). A stream follows the primary, the primary goes away, the replica is
promoted and written to, and the stream (``follow``, and ``sluice tail --checkpoint --output``) goes on
from the primary's checkpoint on the new server:
every change once, by GTID, never by the old file and offset (the two servers' binlog files have the
same names and other contents). A promoted replica that lacks transactions the stream has taken stops
it with ``SourceBehindError``, as does one that ran with ``log_replica_updates`` OFF (its binlog
lacks what it applied), and without GTIDs another server at the address stops it with
``SourceChangedError``.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, ChangeCapture
from sluice.cdc.follow import FollowConfig, follow
from sluice.dsn import parse_dsn
from sluice.errors import SourceBehindError, SourceChangedError
from sluice.io.connection import Connection
from sluice.io.replication import server_identity
from sluice.sandbox.replication import ReplicationOptions, promote, wait_caught_up
from tests.conftest import TWO_FLAVORS
from tests.integration.failover import first_binlog, insert, pair

pytestmark = pytest.mark.slow


def _rows(server, start: Checkpoint) -> tuple[list[int], Checkpoint]:
    """The ids inserted into f.t from ``start`` to the server's end, and the boundary reached."""
    capture = ChangeCapture(CaptureConfig(table_filter=lambda d, t: (d, t) == ("f", "t")), start)
    ids: list[int] = []
    for committed in follow(FollowConfig(parse_dsn(server.dsn("repl")), until_end=True, retries=0), capture):
        ids += [next(iter(r.after.values())) for r in committed.records if r.op == "insert"]
    return ids, capture.boundary


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_a_promoted_replica_is_read_on_by_gtid_with_every_change_once(flavor, sandbox_factory, caplog):
    primary, replica = pair(flavor, sandbox_factory)
    seen, at = _rows(primary, first_binlog(primary))
    assert seen == [1, 2, 3] and at.gtid_set and at.source == server_identity_of(primary)
    insert(primary, range(4, 7))  # written after the stream's checkpoint, replicated before the failover
    wait_caught_up(replica, primary)
    primary.stop()
    promote(replica)
    insert(replica, range(7, 9))
    with caplog.at_level(logging.WARNING, logger="sluice.cdc.follow"):
        after, moved = _rows(replica, at)
    assert after == [4, 5, 6, 7, 8]
    assert moved.source == server_identity_of(replica) and moved.source != at.source
    said = [r.getMessage() for r in caplog.records if "source changed" in r.getMessage()]
    assert len(said) == 1 and str(at.source) in said[0] and str(moved.source) in said[0]
    again, _ = _rows(replica, moved)  # and from the new server's own checkpoint: nothing twice
    assert again == []


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_a_promoted_replica_that_lacks_what_was_taken_is_a_typed_error(flavor, sandbox_factory):
    primary, replica = pair(flavor, sandbox_factory)
    replica.sql("STOP REPLICA")  # it lags from here on
    insert(primary, range(4, 7))
    seen, at = _rows(primary, first_binlog(primary))
    assert seen == [1, 2, 3, 4, 5, 6]
    primary.stop()
    promote(replica)  # promoted without the last three transactions
    with pytest.raises(SourceBehindError) as info:
        _rows(replica, at)
    message = str(info.value)
    assert "lacks transactions" in message and "snapshot" in message
    with Connection.open(parse_dsn(replica.dsn("root"))) as conn:
        if flavor == "mysql":
            lacking = conn.query("SELECT GTID_SUBTRACT(%s, @@GLOBAL.gtid_executed)".replace(
                "%s", repr(at.gtid_set))).rows[0][0]
            assert lacking and str(lacking).replace("\n", "") in message
        else:
            assert at.gtid_set in message  # the one domain's last GTID the replica never had


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_a_promoted_replica_that_ran_without_log_replica_updates_is_a_typed_error(flavor, sandbox_factory):
    """It applied every transaction, but wrote none of them to its binlog: the stream cannot read
    there the ones it has not taken yet."""
    primary, replica = pair(flavor, sandbox_factory, ReplicationOptions(log_replica_updates=False))
    seen, at = _rows(primary, first_binlog(primary))
    assert seen == [1, 2, 3]
    insert(primary, range(4, 7))  # applied by the replica, in no binlog of it
    wait_caught_up(replica, primary)
    assert replica.sql("SELECT COUNT(*) FROM f.t") == "6"
    primary.stop()
    promote(replica)
    insert(replica, range(7, 9))
    with pytest.raises(SourceBehindError) as info:
        _rows(replica, at)
    message = str(info.value)
    assert "snapshot" in message
    if flavor == "mysql":  # in its gtid_executed, and so in gtid_purged: in no binlog of the server
        assert "no longer holds transactions" in message and "log_replica_updates OFF" in message
    else:  # its binlog never reached the domain's position the stream holds
        assert "lacks transactions" in message and at.gtid_set in message


def server_identity_of(server):
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        return server_identity(conn)


@pytest.mark.mysql
def test_another_server_without_gtids_is_a_typed_error_naming_both(sandbox_factory):
    off = {"gtid-mode": "OFF", "enforce-gtid-consistency": "OFF", "binlog-row-metadata": "FULL"}
    first = sandbox_factory("mysql", settings=off)
    second = sandbox_factory("mysql", settings={**off, "server-id": "2"})
    for server in (first, second):
        server.sql("CREATE DATABASE f; CREATE TABLE f.t (id INT PRIMARY KEY, v INT)")
        insert(server, range(1, 3))
    seen, at = _rows(first, first_binlog(first))
    assert seen == [1, 2] and at.gtid_set is None and at.source is not None
    with pytest.raises(SourceChangedError) as info:
        _rows(second, at)
    message = str(info.value)
    assert str(at.source) in message and str(server_identity_of(second)) in message
    assert "snapshot" in message and "--from FILE:POS" in message


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_tail_checkpoint_output_goes_on_across_a_failover_exactly_once(flavor, sandbox_factory, tmp_path):
    primary, replica = pair(flavor, sandbox_factory)
    state, out = tmp_path / "state", tmp_path / "changes.jsonl"

    def tail(server) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--checkpoint", str(state),
             "--output", str(out), "--until-end", "--tables", r"f\.t", "--from", first_binlog(server).file],
            capture_output=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr.decode()

    tail(primary)
    kept = json.loads((state / "checkpoint.json").read_text())["checkpoint"]
    assert kept["gtid_set"] and kept["source"]["server"]  # the checkpoint names its GTIDs and its server
    insert(primary, range(4, 7))
    wait_caught_up(replica, primary)
    primary.stop()
    promote(replica)
    insert(replica, range(7, 9))
    done = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", replica.dsn("repl"), "--checkpoint", str(state),
         "--output", str(out), "--until-end", "--tables", r"f\.t"],
        capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()
    ids = [json.loads(line)["after"]["id"] for line in out.read_text().splitlines()]
    assert ids == list(range(1, 9))
