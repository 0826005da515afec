"""A failover in the middle of ``sluice run``'s initial snapshot.

A primary and its replica (``tests.integration.failover.pair``: GTIDs, ``log_replica_updates`` ON),
``f.t`` large enough for many chunks of 200 rows, read one chunk at a time. ``sluice run`` follows
the primary through an address that moves (``tests.tcp_proxy``); a writer inserts and updates rows
in the middle of the table once the snapshot's start is recorded. With some chunks done, the primary
is killed, the replica promoted and the address moved: the remaining chunks are read on the new
server, and the stream goes on there by GTID; rows of chunks the old primary read change on the
new one, whose binlog positions sort before the old one's (its files are fewer). The chunks'
watermarks name both servers, each with its GTID set, and the end is exact: the mirror equals
SELECT on the new primary and every change since the snapshot's start is in the change log once
(matched by GTID).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_identity
from sluice.sandbox.replication import promote, wait_caught_up
from tests.conftest import TWO_FLAVORS
from tests.integration.exactly_once import changes_in_log, exactly_once, wait_for
from tests.integration.failover import Writer, pair
from tests.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS = 12_000  # 60 chunks of 200 rows


def _state(lake: Path) -> dict[str, Any]:
    try:
        return json.loads((lake / "_sluice" / "snapshot.json").read_text())
    except (OSError, ValueError):
        return {}


def _chunks_done(lake: Path) -> int:
    return sum(len(t.get("done", {})) for t in _state(lake).get("tables", {}).values())


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_a_failover_in_the_middle_of_the_snapshot_is_exactly_once(flavor, sandbox_factory, tmp_path):
    primary, replica = pair(flavor, sandbox_factory)
    servers = {_server(primary), _server(replica)}
    for _ in range(3):  # the primary's binlog files run ahead of the replica's (FLUSH is not replicated):
        primary.sql("FLUSH BINARY LOGS")  # the new primary's positions sort before the old one's
    for first in range(4, ROWS + 1, 2000):
        primary.sql("INSERT INTO f.t VALUES " + ",".join(f"({i}, {i})" for i in range(first, min(first + 2000,
                                                                                                  ROWS + 1))))
    lake = tmp_path / "lake"
    with TcpProxy(primary.host, primary.port) as proxy:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sluice.cli", "run", "--source", proxy.dsn(primary.dsn("repl")), "--lake",
             str(lake), "--tables", r"f\..*", "--trigger", "1s", "--chunk-rows", "200",
             "--snapshot-connections", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        writer = None
        try:
            wait_for(lambda: bool(_state(lake).get("start")), proc, timeout=300, every=0.1)
            writer = Writer(primary, first=ROWS + 1)  # after the start: each of its changes is streamed
            wait_for(lambda: _chunks_done(lake) >= 3, proc, timeout=300, every=0.1)
            writer.pause()  # fail_over's steps, with the snapshot checked unfinished as the primary dies
            wait_caught_up(replica, primary)
            assert not _state(lake).get("complete"), "the snapshot ended before the failover"
            primary.stop()
            promote(replica)
            proxy.move_to(replica.host, replica.port)
            writer.resume(replica)
            replica.sql("UPDATE f.t SET v = v + 1000 WHERE id BETWEEN 100 AND 199")  # in chunks the old one read
            writer.until(30)
            written = writer.stop()
            wait_for(lambda: changes_in_log(lake, "f") == written, proc, timeout=300)
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 0, stderr[-4000:]
        finally:
            if writer is not None:
                writer.stop()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    state = _state(lake)
    highs = [d["high"] for t in state["tables"].values() for d in t["done"].values()]
    assert {h["source"]["server"] for h in highs} == servers  # chunks read on each of them
    assert all(h["gtid_set"] for h in highs)
    start = state["start"]["gtid_set"]
    assert exactly_once(replica, lake, "f", start, across_servers=True, after_gtids=True) == 2 * written + 100


def _server(server) -> str:
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        return server_identity(conn).server
