"""Whether a stream's start is still on the server, and when not, what is gone.

A binlog position outlives its binlog: ``binlog_expire_logs_seconds`` (``expire_logs_days`` on
MariaDB) or ``PURGE BINARY LOGS`` removes the oldest files while a pipeline is stopped, and the
start it keeps then names a file the server no longer has, or GTIDs it no longer holds.
``purged_start`` compares a start with what the server still has and returns the
``BinlogPurgedError`` that names what is missing (None when nothing is):

- a start at a file and offset: its file must not be older than the oldest file ``SHOW BINARY LOGS``
  lists (``binlog_file_key`` order). When it is, the error names the file, and with GTIDs also the
  transactions gone with it: MySQL ``gtid_purged`` minus the start's set; MariaDB, per domain, the
  sequence numbers up to the oldest file's GTID_LIST (the binlog state at its start) that the start's
  position had not reached.
- a start by GTID set (another server after a failover): MySQL ``gtid_purged`` must lie within the
  set (``sluice.io.gtid_check`` asks before the dump); MariaDB, the oldest file's GTID_LIST.

``ReplicationStream`` asks only once the server refused a dump with ``BinlogUnavailableError``
(``refused``), so a normal start costs nothing; the pipeline asks before its query starts, to stop (or snapshot again)
before Spark runs. A file newer than the newest one, or an offset past a file's end, is not a purge:
those stay ``BinlogUnavailableError``.
"""

from __future__ import annotations

from sluice.binlog.events import MariadbGtidListEvent
from sluice.binlog.gtid import MariadbGtidPosition, MysqlGtidSet
from sluice.binlog.parser import EventParser, ParserConfig
from sluice.binlog.position import binlog_file_key
from sluice.dsn import ConnectionConfig
from sluice.errors import BinlogPurgedError, BinlogUnavailableError, SluiceError
from sluice.io.connection import Connection

__all__ = ["missing_mariadb", "oldest_gtid_list", "purged_start", "refused"]


def purged_start(conn: Connection, file: str | None, pos: int, gtids: str | None, *,
                 by_gtid: bool) -> BinlogPurgedError | None:
    """The error naming what of the start (``file``:``pos`` with the executed ``gtids``, or the GTID
    set alone when ``by_gtid``) the server of ``conn`` no longer has; None when it has it all."""
    files = [str(row[0]) for row in conn.query("SHOW BINARY LOGS").rows]
    if not files:
        return None
    oldest = files[0]
    where = conn.config.redacted()
    if not by_gtid and file:
        base, number = binlog_file_key(file)
        first_base, first_number = binlog_file_key(oldest)
        if base != first_base or number >= first_number:
            return None
        missing = _missing_gtids(conn, oldest, gtids) if gtids else ""
        also = f", with the transactions {missing}" if missing else ""
        return BinlogPurgedError(
            f"the stream's start {file}:{pos} is no longer on the server at {where}: its binlog {file} was "
            f"purged{also}, and the oldest binlog the server has is {oldest} (binlog_expire_logs_seconds / "
            "expire_logs_days, or PURGE BINARY LOGS)", file=file, gtids=missing or None)
    if not gtids:
        return None
    missing = _missing_gtids(conn, oldest, gtids)
    if not missing:
        return None
    return BinlogPurgedError(
        f"the server at {where} no longer has the transactions {missing} that come after the stream's GTID "
        f"position {gtids}: binlogs purged (binlog_expire_logs_seconds / expire_logs_days, or PURGE BINARY "
        f"LOGS), or applied with log_replica_updates OFF; its oldest binlog is {oldest}", gtids=missing)


def refused(error: Exception, connection: ConnectionConfig, file: str, pos: int, gtids: str | None) -> Exception:
    """What to raise for the ERR a dump from ``file``:``pos`` (``file`` "": by the GTID set ``gtids``)
    ended with: the ``BinlogPurgedError`` naming what is gone when the server no longer has the
    start (asked on a connection of its own), else ``error`` itself."""
    if not isinstance(error, BinlogUnavailableError):
        return error
    try:
        with Connection.open(connection) as conn:
            purged = purged_start(conn, file or None, pos, gtids, by_gtid=not file)
    except SluiceError:  # the server's own refusal says more than a look that failed
        return error
    return error if purged is None else purged


def _missing_gtids(conn: Connection, oldest: str, gtids: str) -> str:
    """The transactions after the executed ``gtids`` that the server's binlog no longer holds."""
    if conn.is_mariadb:
        before = oldest_gtid_list(conn, oldest)
        return "" if before is None else missing_mariadb(MariadbGtidPosition.parse(gtids), before)
    purged = str(conn.query("SELECT @@GLOBAL.gtid_purged").rows[0][0] or "").replace("\n", "")
    return str(MysqlGtidSet.parse(purged).subtract(MysqlGtidSet.parse(gtids)))


def missing_mariadb(held: MariadbGtidPosition, before: MariadbGtidPosition) -> str:
    """Per GTID domain, the transactions after ``held`` up to ``before`` (the binlog state at the
    oldest file's start), as ``domain-server-first..seq`` texts joined by commas; "" when none."""
    gone = []
    for last in before:
        had = held.get(last.domain)
        reached = had.seq if had is not None else 0
        if reached < last.seq:
            first = f"{last.domain}-{last.server_id}-{reached + 1}"
            gone.append(first if reached + 1 == last.seq else f"{first}..{last.seq}")
    return ",".join(gone)


def oldest_gtid_list(conn: Connection, file: str) -> MariadbGtidPosition | None:
    """MariaDB: the GTID_LIST at the start of ``file`` (the binlog state before it, the last GTID of
    each domain), read over a replication connection of its own; None when the file has none."""
    from sluice.io.replication import ReplicationStream, StreamConfig

    parser: EventParser | None = None
    with ReplicationStream(StreamConfig(conn.config, file=file, pos=4, until_end=True,
                                        heartbeat_period=0)) as stream:
        for seen, raw in enumerate(stream):
            if parser is None:
                parser = EventParser(ParserConfig(table_filter=lambda _d, _t: False,
                                                  initial_checksum=stream.checksum_algorithm))
            event = parser.parse(raw.data, file=raw.file, offset=raw.pos)
            if isinstance(event, MariadbGtidListEvent):
                before = MariadbGtidPosition()
                for gtid in event.gtids:  # one per domain and server: the domain's is the highest
                    before = before.union(MariadbGtidPosition((gtid,)))
                return before
            if seen > 4:  # the list follows the FORMAT_DESCRIPTION at a file's start, or is not there
                return None
    return None
    return None
