"""Whether a server can go on from a GTID set: it holds every transaction of the set, and its binlog
still holds every transaction it executed after it.

A stream that goes on by GTID on a server (a failover, a restart at a checkpoint's GTIDs) must find
there what it has taken and what comes after. ``check_gtid_start`` compares before the dump asks:

- MySQL: the set must be within ``gtid_executed`` (else a replica was promoted before it had applied
  them: those transactions are in the lake and not on the server), and ``gtid_purged`` must be
  within the set (else the server's binlog no longer holds transactions the stream has not read:
  purged, or applied with ``log_replica_updates`` OFF, which writes them to no binlog).
- MariaDB: for each GTID of the position, ``gtid_binlog_state`` must have logged its domain and
  server up to its sequence number. The domain's number alone says too little: a replica that ran
  with ``log_slave_updates`` OFF and was promoted logs its own transactions on from the numbers it
  applied, past the position, with none of the old primary's in its binlog.

Either way ``SourceBehindError`` names the transactions and the remedy (``BinlogPurgedError`` for
purged ones, whose remedy is a new snapshot); nothing is read.
"""

from __future__ import annotations

from sluice.binlog.gtid import MariadbGtid, MariadbGtidPosition, MysqlGtidSet
from sluice.errors import BinlogPurgedError, SourceBehindError
from sluice.io.connection import Connection

__all__ = ["check_gtid_start"]

_REMEDY = ("Promote or point sluice at a server that has them (or let this one catch up), or take a new "
           "snapshot of the captured tables (sluice snapshot) and go on from there")


def check_gtid_start(conn: Connection, gtids: str, server: str) -> None:
    """Raise ``SourceBehindError`` when the server of ``conn`` (named ``server``) cannot go on from
    ``gtids`` exactly (module docstring)."""
    if conn.is_mariadb:
        _check_mariadb(conn, MariadbGtidPosition.parse(gtids), server)
        return
    held = MysqlGtidSet.parse(gtids)
    executed_text, purged_text = conn.query("SELECT @@GLOBAL.gtid_executed, @@GLOBAL.gtid_purged").rows[0]
    executed = MysqlGtidSet.parse(str(executed_text or "").replace("\n", ""))
    purged = MysqlGtidSet.parse(str(purged_text or "").replace("\n", ""))
    lacking = held.subtract(executed)
    if lacking:
        raise SourceBehindError(
            f"the server at {conn.config.redacted()} ({server}) lacks transactions the stream has already taken: "
            f"{lacking} are not in its gtid_executed (a replica promoted before it had applied them?). Going on "
            f"there would leave them in the lake and not on the server. {_REMEDY}")
    gone = purged.subtract(held)
    if gone:
        raise BinlogPurgedError(
            f"the binlog of the server at {conn.config.redacted()} ({server}) no longer holds transactions the "
            f"stream has not read yet: {gone} are in its gtid_purged (binlogs purged, or the transactions applied "
            f"with log_replica_updates OFF, which writes them to no binlog)", gtids=str(gone))


def _check_mariadb(conn: Connection, held: MariadbGtidPosition, server: str) -> None:
    state = str(conn.query("SELECT @@GLOBAL.gtid_binlog_state").rows[0][0] or "").replace("\n", "")
    reached: dict[tuple[int, int], int] = {}  # (domain, server_id) -> the last sequence number logged
    for text in filter(None, (t.strip() for t in state.split(","))):
        gtid = MariadbGtid.parse(text)
        key = (gtid.domain, gtid.server_id)
        reached[key] = max(reached.get(key, 0), gtid.seq)
    lacking = [str(g) for g in held if reached.get((g.domain, g.server_id), 0) < g.seq]
    if lacking:
        raise SourceBehindError(
            f"the binlog of the server at {conn.config.redacted()} ({server}) lacks transactions the stream has "
            f"already taken: {','.join(lacking)} (its gtid_binlog_state is {state or 'empty'}; a replica promoted "
            f"before it had applied them, or one running with log_slave_updates OFF). {_REMEDY}")
