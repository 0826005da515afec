"""What the failover tests share: a primary with a table ``f.t`` and its replica, made by the
sandbox (``sluice.sandbox.replication``), the writes and positions they use, a writer that goes on
across the switch (``Writer``) and the switch itself (``fail_over``)."""

from __future__ import annotations

import threading
import time

from sluice.binlog.position import Checkpoint
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_files
from sluice.sandbox.replication import ReplicationOptions, promote, wait_caught_up
from tests.tcp_proxy import TcpProxy

FULL = {"binlog-row-metadata": "FULL"}  # the binlog names the columns: no schema history needed


def pair(flavor: str, sandbox_factory, replication: ReplicationOptions | None = None):
    """A primary with f.t holding 1..3 and its replica, caught up (GTIDs and log_replica_updates ON
    unless ``replication`` says otherwise)."""
    primary = sandbox_factory(flavor, settings=FULL)
    primary.sql("CREATE DATABASE f; CREATE TABLE f.t (id INT PRIMARY KEY, v INT)")
    insert(primary, range(1, 4))
    replica = sandbox_factory(flavor, settings=FULL, replica_of=primary, replication=replication)
    return primary, replica


def insert(server, ids: range) -> None:
    """Insert rows ``(i, i)`` into f.t, one transaction each."""
    server.sql(";".join(f"INSERT INTO f.t VALUES ({i}, {i})" for i in ids))


def first_binlog(server) -> Checkpoint:
    """The start of the oldest binlog file the server still has."""
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        return Checkpoint(server_binlog_files(conn)[0][0], 4)


class Writer:
    """Transactions of an insert (ids from ``first`` on; f.t holds 1..3 from the start) and an update
    into f.t, against whichever server is the primary."""

    def __init__(self, server, first: int = 4) -> None:
        self.first = first  # the id of the first row inserted
        self.written = 0  # transactions committed
        self._lock = threading.Lock()  # held while a transaction is in flight
        self._conn: Connection | None = None
        self._server = server
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="failover-writer")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                if self._conn is None:
                    self._conn = Connection.open(parse_dsn(self._server.dsn("root")))
                i = self.written + self.first
                self._conn.execute("BEGIN")
                self._conn.execute(f"INSERT INTO f.t VALUES ({i}, {i})")
                self._conn.execute(f"UPDATE f.t SET v = v + 1 WHERE id = {i // 2 + 1}")
                self._conn.execute("COMMIT")
                self.written += 1
            time.sleep(0.02)

    def pause(self) -> None:
        """Stop writing once the transaction in flight has committed (until ``resume``)."""
        self._lock.acquire()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def resume(self, server) -> None:
        """Go on writing, to ``server`` from now on."""
        self._server = server
        self._lock.release()

    def until(self, more: int) -> None:
        """Wait until ``more`` transactions more are written."""
        target = self.written + more
        deadline = time.monotonic() + 120
        while self.written < target:
            assert time.monotonic() < deadline and self._thread.is_alive(), "the writer stalled"
            time.sleep(0.05)

    def stop(self) -> int:
        """Stop writing; the number of transactions written."""
        self._stop.set()
        self._thread.join(60)
        if self._conn is not None:
            self._conn.close()
        return self.written


def fail_over(primary, replica, writer: Writer, proxy: TcpProxy | None = None) -> None:
    """Pause the writer, let the replica catch up, kill the primary, promote the replica, move the
    address to it (``proxy``) and write on there."""
    writer.pause()
    wait_caught_up(replica, primary)
    primary.stop()  # its process killed: a crash, not a shutdown
    promote(replica)
    if proxy is not None:
        proxy.move_to(replica.host, replica.port)
    writer.resume(replica)
