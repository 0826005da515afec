"""A silent network path: connections that stop carrying bytes, with no FIN and no RST.

``sluice run`` reaches the server through a proxy (``tests.tcp_proxy``) that silences chosen
connections at chosen moments, while new connections work: the planner's replication read, the
tasks' reads, the SQL of positions, schema and snapshot chunks (one run a flavor silences every
connection of these kinds that a stream from a position makes, one every kind a snapshot makes),
or every connection open at a moment of a running pipeline. With ``--stall-timeout`` short, each
stall must be noticed and its connection made again, and the lake must end exact: every change in
the change log once, every mirror equal to SELECT.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.integration.exactly_once import changes_in_log, exactly_once, wait_for
from tests.tcp_proxy import TcpProxy, binlog_dump, query

pytestmark = pytest.mark.spark

STALL = 3  # --stall-timeout, seconds: short, to keep the tests fast


@pytest.fixture(params=["mysql", "mariadb"])
def server(request):
    return request.getfixturevalue(f"{request.param}_server")


def _args(proxy: TcpProxy, server, lake: Path, db: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "sluice.cli", "run", "--source", proxy.dsn(server.dsn("repl")), "--lake",
            str(lake), "--tables", rf"{db}\..*", "--stall-timeout", str(STALL), *extra]


def _workload(server, db: str, rows: int) -> None:
    server.sql(f"CREATE TABLE IF NOT EXISTS {db}.t (id INT PRIMARY KEY, v INT, note VARCHAR(40))")
    for low in range(0, rows, 500):
        server.sql(f"INSERT INTO {db}.t VALUES " + ",".join(f"({i}, {i}, 'row {i}')"
                                                            for i in range(low + 1, low + 501)))
    server.sql(f"UPDATE {db}.t SET v = v + 1 WHERE id % 3 = 0; DELETE FROM {db}.t WHERE id % 7 = 0")


def _chunk_read(db: str):
    """A snapshot task's SELECT of a chunk of ``db``.t (not the driver's planning: MIN/MAX, OFFSET)."""
    table = query(f"from `{db}`.`t`")
    return lambda payload: table(payload) and b"MIN(" not in payload and b"OFFSET" not in payload


# Two runs a flavor, each setting every trap it names at once: what goes silent, and how many
# connections (the trap's predicate, built for the test's database).
RUNS = {
    # From a position, no snapshot. The first replication read is the planner's (latestOffset reads
    # before any task runs); the next are its own made again, or the tasks'.
    "streaming": {
        "the planner's and the tasks' reads": (lambda _db: binlog_dump, 4),
        "a query of positions": (lambda _db: query("status"), 2),
        "a query of the schema": (lambda _db: query("information_schema"), 2),
    },
    "snapshot": {
        "a snapshot chunk's query": (_chunk_read, 2),
        "a query planning the snapshot": (lambda _db: query("min("), 1),
    },
}


@pytest.mark.mysql
@pytest.mark.mariadb
@pytest.mark.parametrize("run", list(RUNS))
def test_connections_that_go_silent_are_made_again(server, tmp_path, run):
    """One ``sluice run --trigger once`` through the proxy with every trap of ``RUNS[run]`` set:
    each must catch its connections (a trap that caught fewer silenced nothing of that kind), and
    the lake must end exact."""
    db = f"sp_{uuid.uuid4().hex[:8]}"
    server.sql(f"CREATE DATABASE {db}")
    start = ":".join(server.sql("SHOW MASTER STATUS" if "MariaDB" in server.sql("SELECT VERSION()")
                                else "SHOW BINARY LOG STATUS").split("\t")[:2])
    _workload(server, db, 2000)
    lake = tmp_path / "lake"
    snapshot = run == "snapshot"
    with TcpProxy(server.host, server.port) as proxy:
        traps = {what: (proxy.trap(predicate(db), times), times) for what, (predicate, times) in RUNS[run].items()}
        how = ["--snapshot", "initial"] if snapshot else ["--snapshot", "never", "--from", start]
        began = time.monotonic()
        try:
            done = subprocess.run(_args(proxy, server, lake, db, "--trigger", "once", *how), capture_output=True,
                                  text=True, timeout=600)
            took = time.monotonic() - began
            assert done.returncode == 0, done.stderr[-4000:]
            for what, (trap, times) in traps.items():
                assert trap.sprung == times, f"{what}: {trap.sprung} of {times} connections went silent: {trap.caught}"
            # Each silent connection costs its deadline and a backoff; one that nothing noticed would
            # hold the run for good (the proxy never closes it).
            assert took < 240, took
            exactly_once(server, lake, db, None if snapshot else start)
        finally:
            proxy.reset()  # the server's side of a silenced connection may hold a lock on the table
            server.sql(f"DROP DATABASE {db}")


@pytest.mark.mysql
@pytest.mark.mariadb
def test_every_open_connection_goes_silent_at_moments_of_a_running_pipeline(server, tmp_path):
    """A writer runs; ``sluice run --trigger 1s`` follows through the proxy, which silences every
    connection open at three random moments (each the first moment after a random wait when one
    is). Once the writer stops, the lake catches up and holds every change once."""
    db = f"sp_{uuid.uuid4().hex[:8]}"
    server.sql(f"CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT, note VARCHAR(40))")
    start = ":".join(server.sql("SHOW MASTER STATUS" if "MariaDB" in server.sql("SELECT VERSION()")
                                else "SHOW BINARY LOG STATUS").split("\t")[:2])
    lake = tmp_path / "lake"
    stop = threading.Event()
    written = [0]

    def writer() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            server.sql(f"INSERT INTO {db}.t VALUES ({i}, {i}, 'w');"
                       f"UPDATE {db}.t SET v = v + 1 WHERE id = {i // 2 + 1}")
            written[0] = i
            time.sleep(0.02)

    rng = random.Random(45)
    with TcpProxy(server.host, server.port) as proxy:
        proc = subprocess.Popen(_args(proxy, server, lake, db, "--trigger", "1s", "--snapshot", "never", "--from",
                                      start), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        silenced = 0
        try:
            for _ in range(3):
                time.sleep(rng.uniform(4.0, 10.0))
                wait_for(lambda: proxy.live() > 0, proc, timeout=60, every=0.005)
                silenced += proxy.blackhole()
            stop.set()
            thread.join(30)
            wait_for(lambda: changes_in_log(lake, db) == written[0], proc, timeout=180)
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 0, stderr[-4000:]
            assert silenced >= 3, silenced
            assert exactly_once(server, lake, db, start) == 2 * written[0]
        finally:
            stop.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proxy.reset()  # the server's side of a silenced connection may hold a lock on the table
            server.sql(f"DROP DATABASE {db}")


@pytest.mark.mariadb
def test_the_lag_grows_while_a_batch_is_stalled(mariadb_server, tmp_path):
    """A writer runs and a replication read goes silent mid-run (``--stall-timeout 12``): while the
    batch waits, ``sluice_lag_seconds`` grows past anything a flowing pipeline shows, instead of
    repeating the last batch's figure; once the read is made again it falls back, and the lake
    ends exact."""
    import socket
    import urllib.request

    server = mariadb_server
    db = f"sp_{uuid.uuid4().hex[:8]}"
    server.sql(f"CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT, note VARCHAR(40))")
    start = ":".join(server.sql("SHOW MASTER STATUS").split("\t")[:2])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def lag() -> float | None:
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        except OSError:
            return None
        values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("sluice_lag_seconds{")]
        return values[0] if values else None

    stop = threading.Event()
    written = [0]

    def writer() -> None:
        while not stop.is_set():
            written[0] += 1
            server.sql(f"INSERT INTO {db}.t VALUES ({written[0]}, 1, 'w')")
            time.sleep(0.1)

    lake = tmp_path / "lake"
    with TcpProxy(server.host, server.port) as proxy:
        args = [sys.executable, "-m", "sluice.cli", "run", "--source", proxy.dsn(server.dsn("repl")), "--lake",
                str(lake), "--tables", rf"{db}\..*", "--stall-timeout", "12", "--trigger", "1s", "--snapshot",
                "never", "--from", start, "--metrics-port", str(port), "--metrics-host", "127.0.0.1"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        try:
            wait_for(lambda: (lag() or 99) < 5, proc, timeout=180)  # flowing: batches commit
            proxy.trap(binlog_dump, 1)  # the next replication read goes silent
            seen: list[float] = []
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (seen and max(seen) > 8 and seen[-1] < 5):
                value = lag()
                if value is not None:
                    seen.append(value)
                time.sleep(0.5)
            assert proxy.trapped == 1
            assert max(seen) > 8, f"the lag did not grow while the batch was stalled: {seen}"
            assert seen[-1] < 5, f"the lag did not fall back once the read was made again: {seen}"
            stop.set()
            thread.join(30)
            wait_for(lambda: changes_in_log(lake, db) == written[0], proc, timeout=180)
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 0, stderr[-4000:]
            assert exactly_once(server, lake, db, start) == written[0]
        finally:
            stop.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proxy.reset()
            server.sql(f"DROP DATABASE {db}")
