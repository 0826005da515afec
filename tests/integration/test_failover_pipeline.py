"""``sluice run`` across a failover: the primary dies, its replica is promoted, the pipeline goes on.

A primary and its replica as the sandbox makes them (``tests.integration.failover.pair``: GTIDs,
``log_replica_updates`` ON). A writer commits transactions of two changes each to the primary;
``sluice run --trigger 1s`` follows; then the writer pauses, the replica catches up, the primary is
killed, the replica is promoted, and the writer goes on against it. The pipeline reaches the new
server in one of three ways:

- through an address that moves (a TCP proxy, ``tests.tcp_proxy``, re-pointed as a VIP or a DNS name
  is), while it runs;
- by the user, who stops it and starts it again with the new server's DSN;
- through the moving address, killed with SIGKILL while the primary is gone and again just after the
  switch, and started again each time.

Each ends with the mirror equal to SELECT on the new primary, every change in the change log once
(matched by GTID: the two servers' binlog files and offsets differ), and ``source changed`` said
once.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sluice.sandbox.replication import promote, wait_caught_up
from tests.conftest import TWO_FLAVORS
from tests.integration.exactly_once import changes_in_log, exactly_once, wait_for
from tests.integration.failover import Writer, fail_over, first_binlog, pair
from tests.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SAID = "source changed: server"


def _run(dsn: str, lake: Path, start: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sluice.cli", "run", "--source", dsn, "--lake", str(lake), "--tables", r"f\..*",
         "--trigger", "1s", "--snapshot", "never", "--from", start],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stop(proc: subprocess.Popen[str]) -> str:
    """Ctrl-C a ``sluice run``; its stderr, once it ended well."""
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-4000:]
    return stderr


def _kill(proc: subprocess.Popen[str]) -> str:
    """SIGKILL a ``sluice run`` (its Spark JVM runs in a session of its own and dies with it); its
    stderr."""
    proc.kill()
    _, stderr = proc.communicate(timeout=120)
    return stderr


def _caught_up(proc: subprocess.Popen[str], lake: Path, writer: Writer) -> int:
    """Stop the writer and wait until the lake holds every insert; the transactions written."""
    written = writer.stop()
    wait_for(lambda: changes_in_log(lake, "f") == written + 3, proc, timeout=300)
    return written


def _check(replica, lake: Path, written: int, *stderrs: str) -> None:
    said = [line for text in stderrs for line in text.splitlines() if SAID in line]
    assert len(said) == 1, said
    start = first_binlog(replica)
    assert exactly_once(replica, lake, "f", f"{start.file}:{start.pos}", across_servers=True) == 3 + 2 * written


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_a_failover_through_a_moving_address_while_sluice_run_runs(flavor, sandbox_factory, tmp_path):
    primary, replica = pair(flavor, sandbox_factory)
    start = first_binlog(primary)
    lake = tmp_path / "lake"
    with TcpProxy(primary.host, primary.port) as proxy:
        proc = _run(proxy.dsn(primary.dsn("repl")), lake, f"{start.file}:{start.pos}")
        writer = Writer(primary)
        try:
            wait_for(lambda: changes_in_log(lake, "f") > 3, proc, timeout=300)  # batches commit
            writer.until(20)
            fail_over(primary, replica, writer, proxy)
            writer.until(40)
            written = _caught_up(proc, lake, writer)
            stderr = _stop(proc)
        finally:
            writer.stop()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    _check(replica, lake, written, stderr)


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_a_failover_with_the_new_servers_dsn_given_at_restart(flavor, sandbox_factory, tmp_path):
    primary, replica = pair(flavor, sandbox_factory)
    start = first_binlog(primary)
    lake = tmp_path / "lake"
    at = f"{start.file}:{start.pos}"
    proc = _run(primary.dsn("repl"), lake, at)
    writer = Writer(primary)
    try:
        wait_for(lambda: changes_in_log(lake, "f") > 3, proc, timeout=300)
        writer.until(20)
        before = _stop(proc)  # the user stops it, fails over, and starts it with the new DSN
        fail_over(primary, replica, writer)
        proc = _run(replica.dsn("repl"), lake, at)  # the same command, the new server's DSN
        writer.until(40)
        written = _caught_up(proc, lake, writer)
        after = _stop(proc)
    finally:
        writer.stop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _check(replica, lake, written, before, after)


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_kill_9_of_sluice_run_during_a_failover_is_exactly_once(flavor, sandbox_factory, tmp_path):
    rng = random.Random(45)
    primary, replica = pair(flavor, sandbox_factory)
    start = first_binlog(primary)
    lake = tmp_path / "lake"
    at = f"{start.file}:{start.pos}"
    stderrs: list[str] = []
    with TcpProxy(primary.host, primary.port) as proxy:
        dsn = proxy.dsn(primary.dsn("repl"))
        proc = _run(dsn, lake, at)
        writer = Writer(primary)
        try:
            wait_for(lambda: changes_in_log(lake, "f") > 3, proc, timeout=300)
            writer.until(20)
            writer.pause()
            wait_caught_up(replica, primary)
            primary.stop()
            time.sleep(rng.uniform(1.0, 4.0))  # the pipeline finds its source gone and tries again
            stderrs.append(_kill(proc))
            promote(replica)
            proxy.move_to(replica.host, replica.port)
            writer.resume(replica)
            proc = _run(dsn, lake, at)
            writer.until(10)
            time.sleep(rng.uniform(0.0, 3.0))  # about the first batch read on the new server
            stderrs.append(_kill(proc))
            proc = _run(dsn, lake, at)
            writer.until(20)
            written = _caught_up(proc, lake, writer)
            stderrs.append(_stop(proc))
        finally:
            writer.stop()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    _check(replica, lake, written, *stderrs)
