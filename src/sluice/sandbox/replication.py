"""Replication between sandbox servers: one made the replica of another, waited on, and promoted.

``start_replica(primary)`` starts a new sandbox of the primary's flavor and makes it follow the
primary (``replicate``): over TLS with the primary's CA, as the ``repl`` user, from the primary's
first transaction. ``ReplicationOptions`` says how:

- ``gtids`` (default on): MySQL runs the replica with ``gtid_mode=ON`` and ``SOURCE_AUTO_POSITION=1``;
  MariaDB (whose binlog always carries GTIDs) replicates with ``MASTER_USE_GTID=slave_pos``. Off:
  the replica follows the primary's first binlog file from offset 4 (MySQL also needs the primary
  to run with ``gtid_mode=OFF``; a mismatch is a ``SandboxError`` naming the remedy).
- ``log_replica_updates`` (default on): what the replica applies goes to its own binlog
  (MySQL ``log_replica_updates``, MariaDB ``log_slave_updates``), so that it can become a source.
- ``read_only`` (default on): the replica refuses writes (MySQL ``super_read_only``, which covers
  root too; MariaDB ``read_only``) until it is promoted.

Its ``server_id`` is its port, unique among the sandboxes of a host. ``wait_caught_up`` waits until
the replica has applied everything the primary has written; ``promote`` makes it a primary as a
failover does: the receiver stops, what it received is applied, replication stops and is
forgotten (``RESET REPLICA ALL``), and the server takes writes. Each takes a ``Sandbox`` or a
``Peer``: a running sandbox as replication needs it, made from a ``Sandbox`` or from a ``sluice
sandbox`` state file (``sluice.sandbox.state``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sluice.sandbox.accounts import PASSWORDS
from sluice.sandbox.process import SandboxError

if TYPE_CHECKING:
    from sluice.sandbox.server import Sandbox

__all__ = ["Peer", "ReplicationOptions", "promote", "replica_settings", "replicate", "replication_status",
           "start_replica", "wait_caught_up"]

CATCH_UP_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True)
class ReplicationOptions:
    """How a replica follows its primary (module docstring)."""

    gtids: bool = True
    log_replica_updates: bool = True
    read_only: bool = True


@dataclass(frozen=True, slots=True)
class Peer:
    """A running sandbox server as replication needs it: where it listens, its CA, and SQL as root
    (``sql(statement, columns=False)``, the rows of ``ServerClients.sql``)."""

    flavor: str
    host: str
    port: int
    ca_path: Path
    sql: Callable[..., str]

    @classmethod
    def of(cls, box: Sandbox) -> Peer:
        """The peer of a ``Sandbox`` this process runs."""
        return cls(box.flavor, box.host, box.port, box.ca_path, box.sql)

    @property
    def is_mariadb(self) -> bool:
        """True for the MariaDB flavors."""
        return self.flavor != "mysql"

    def binlog_end(self) -> tuple[str, int]:
        """The file and offset the server's binlog ends at now."""
        row = self.sql("SHOW MASTER STATUS" if self.is_mariadb else "SHOW BINARY LOG STATUS")
        if not row:
            raise SandboxError(f"the {self.flavor} sandbox on port {self.port} has no binary log")
        file, pos = row.splitlines()[0].split("\t")[:2]
        return file, int(pos)


def _peer(server: Sandbox | Peer) -> Peer:
    return server if isinstance(server, Peer) else Peer.of(server)


def replica_settings(flavor: str, options: ReplicationOptions) -> dict[str, str]:
    """The server options a replica of ``flavor`` starts with."""
    on = {True: "ON", False: "OFF"}
    if flavor == "mysql":
        return {"gtid-mode": on[options.gtids], "enforce-gtid-consistency": on[options.gtids],
                "log-replica-updates": on[options.log_replica_updates]}
    return {"log-slave-updates": on[options.log_replica_updates]}


def start_replica(primary: Sandbox | Peer, options: ReplicationOptions | None = None, *, port: int | None = None,
                  settings: Mapping[str, str] | None = None, workdir: Path | None = None,
                  detached: bool = False) -> Sandbox:
    """Start a sandbox of ``primary``'s flavor that replicates it, caught up when this returns.

    ``settings`` are server options after (so overriding) the replica's; ``port``, ``workdir``
    and ``detached`` are ``Sandbox.start``'s.
    """
    from sluice.sandbox.server import Sandbox

    source = _peer(primary)
    options = options or ReplicationOptions()
    given = dict(settings or {})
    flavor = source.flavor
    replica = Sandbox.start(flavor, port=port, settings={**replica_settings(flavor, options), **given},  # type: ignore[arg-type]
                            workdir=workdir, detached=detached)
    try:
        if not {"server-id", "server_id"} & given.keys():
            replica.sql(f"SET GLOBAL server_id = {replica.port}")
            replica.settings["server-id"] = str(replica.port)  # and so after a restart
        replicate(replica, source, options)
    except BaseException:
        replica.stop()
        raise
    return replica


def replicate(replica: Sandbox | Peer, primary: Sandbox | Peer, options: ReplicationOptions,
              *, timeout: float = CATCH_UP_TIMEOUT) -> None:
    """Make ``replica`` follow ``primary`` from its first transaction; returns once it has applied
    everything the primary had written, read-only if ``options`` say so."""
    replica, primary = _peer(replica), _peer(primary)
    if replica.flavor != primary.flavor:
        raise SandboxError(f"a {replica.flavor} sandbox cannot replicate a {primary.flavor} one")
    if not primary.is_mariadb:
        mode = primary.sql("SELECT @@GLOBAL.gtid_mode")
        if (mode == "ON") != options.gtids:
            remedy = ("start the replica without GTIDs (--gtids off)" if mode != "ON" else
                      "give the primary --set gtid-mode=OFF --set enforce-gtid-consistency=OFF")
            raise SandboxError(f"the primary on port {primary.port} runs with gtid_mode={mode}, and a replica "
                               f"{'with' if options.gtids else 'without'} GTIDs cannot follow it: {remedy}")
    where = _source_clause(replica, primary, options)
    replica.sql(f"{where}; START REPLICA")
    wait_caught_up(replica, primary, timeout=timeout)
    if options.read_only:
        replica.sql("SET GLOBAL read_only = ON" if replica.is_mariadb else "SET GLOBAL super_read_only = ON")


def _source_clause(replica: Peer, primary: Peer, options: ReplicationOptions) -> str:
    password = PASSWORDS["repl"]
    if replica.is_mariadb:
        start = "MASTER_USE_GTID=slave_pos"
        if not options.gtids:
            start = f"MASTER_LOG_FILE='{_first_binlog(primary)}', MASTER_LOG_POS=4, MASTER_USE_GTID=no"
        return (f"CHANGE MASTER TO MASTER_HOST='{primary.host}', MASTER_PORT={primary.port}, MASTER_USER='repl', "
                f"MASTER_PASSWORD='{password}', MASTER_SSL=1, MASTER_SSL_CA='{primary.ca_path}', {start}")
    start = "SOURCE_AUTO_POSITION=1"
    if not options.gtids:
        start = f"SOURCE_AUTO_POSITION=0, SOURCE_LOG_FILE='{_first_binlog(primary)}', SOURCE_LOG_POS=4"
    return (f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='{primary.host}', SOURCE_PORT={primary.port}, "
            f"SOURCE_USER='repl', SOURCE_PASSWORD='{password}', SOURCE_SSL=1, SOURCE_SSL_CA='{primary.ca_path}', "
            f"{start}")


def _first_binlog(primary: Peer) -> str:
    return primary.sql("SHOW BINARY LOGS").splitlines()[0].split("\t")[0]


def replication_status(replica: Sandbox | Peer) -> dict[str, str]:
    """``SHOW REPLICA STATUS`` as a dict, MySQL's names (``Replica_IO_Running``, ``Source_Log_File``)
    for both families; empty when the server replicates nothing."""
    text = _peer(replica).sql("SHOW REPLICA STATUS", columns=True)
    lines = text.splitlines()
    if len(lines) < 2:
        return {}
    row = dict(zip(lines[0].split("\t"), lines[1].split("\t"), strict=False))
    return {k.replace("Slave", "Replica").replace("Master", "Source"): v for k, v in row.items()}


def _broken(status: Mapping[str, str]) -> str | None:
    """What stopped a replica's threads, or None while both run (or the receiver still connects)."""
    for thread, error in (("Replica_IO_Running", "Last_IO_Error"), ("Replica_SQL_Running", "Last_SQL_Error")):
        if status.get(thread) == "No" or status.get(error, "") not in ("", "NULL"):
            return f"{thread} {status.get(thread)}: {status.get(error) or 'stopped'}"
    return None


def wait_caught_up(replica: Sandbox | Peer, primary: Sandbox | Peer, *,
                   timeout: float = CATCH_UP_TIMEOUT) -> None:
    """Wait until ``replica`` has applied everything ``primary``'s binlog holds now; a
    ``SandboxError`` with the replica's own error when it stopped, or after ``timeout`` seconds."""
    replica, primary = _peer(replica), _peer(primary)
    file, pos = primary.binlog_end()
    wait = "MASTER_POS_WAIT" if replica.is_mariadb else "SOURCE_POS_WAIT"
    deadline = time.monotonic() + timeout
    while True:
        if replica.sql(f"SELECT {wait}('{file}', {pos}, 1)") not in ("-1", "NULL"):
            return
        status = replication_status(replica)
        if not status:
            raise SandboxError(f"the {replica.flavor} sandbox on port {replica.port} is not a replica")
        broken = _broken(status)
        if broken is not None or time.monotonic() > deadline:
            raise SandboxError(
                f"the replica on port {replica.port} has not applied the binlog of port {primary.port} up to "
                f"{file}:{pos} ({broken or f'still behind after {timeout:.0f} s'}; it stands at "
                f"{status.get('Relay_Source_Log_File')}:{status.get('Exec_Source_Log_Pos')})")


def promote(replica: Sandbox | Peer, *, timeout: float = CATCH_UP_TIMEOUT) -> None:
    """Make ``replica`` a primary, as a failover does (module docstring)."""
    replica = _peer(replica)
    status = replication_status(replica)
    if not status:
        raise SandboxError(f"the {replica.flavor} sandbox on port {replica.port} is not a replica: "
                           "there is nothing to promote")
    if status.get("Replica_SQL_Running") == "Yes":  # apply what was received before the source is forgotten
        replica.sql("STOP REPLICA IO_THREAD")
        received = replication_status(replica)
        wait = "MASTER_POS_WAIT" if replica.is_mariadb else "SOURCE_POS_WAIT"
        file, pos = received.get("Source_Log_File", ""), received.get("Read_Source_Log_Pos", "0")
        if file and replica.sql(f"SELECT {wait}('{file}', {pos}, {timeout:.0f})") in ("-1", "NULL"):
            raise SandboxError(f"the replica on port {replica.port} did not apply what it received up to "
                               f"{file}:{pos}: {_broken(replication_status(replica)) or 'timed out'}")
    writable = "SET GLOBAL read_only = OFF" if replica.is_mariadb else (
        "SET GLOBAL super_read_only = OFF; SET GLOBAL read_only = OFF")
    replica.sql(f"STOP REPLICA; {writable}; RESET REPLICA ALL")
