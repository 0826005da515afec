"""What the failover tests share: a primary with a table ``f.t`` and its replica, made by the
sandbox (``sluice.sandbox.replication``), and the writes and positions they use."""

from __future__ import annotations

from sluice.binlog.position import Checkpoint
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_files
from sluice.sandbox.replication import ReplicationOptions

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
