"""The replication stream: register as a replica, ask for the binlog, hand out raw events with positions.

``ReplicationStream`` owns one replication connection. It negotiates checksums
(``@master_binlog_checksum``), the heartbeat period (``heartbeat_period``: a few of them fit in the
connection's deadline, so that silence that long means a dead path) and, on MariaDB, the replica
capability, sends
COM_REGISTER_SLAVE and then COM_BINLOG_DUMP (file + position, or MariaDB's
``@slave_connect_state`` GTID start) or COM_BINLOG_DUMP_GTID (a MySQL GTID set), and yields each
event's bytes with the binlog file and the offset the event starts at; ``chunks`` hands on the
ordinary events already received as one block each, the way a binlog file holds them.

Offsets are counted from the bytes of the stream, not taken from the header's ``log_pos``
(MariaDB 11.4+ writes 0 there inside transactions, ``binlog_legacy_event_pos=OFF``). Events the
server makes up for the replica do not advance the count: the fake ROTATE that names the file, a
re-sent FORMAT_DESCRIPTION, heartbeats, and every event flagged ``LOG_EVENT_ARTIFICIAL_F``, such as
the GTID_LIST MariaDB sends after a GTID start (``fake_gtid_list_event`` in sql/sql_repl.cc: with
``binlog_gtid_index=ON`` 11.x seeks into the file and announces that position, then sends the
file's GTID state as a made-up event whose ``log_pos`` is that position). When a header carries a
non-zero ``log_pos`` that is ahead of the count, the server skipped events (MariaDB does that when
starting from a GTID) and the count moves forward to it; one behind the count means the count
went wrong, and the stream stops with a ``ProtocolError`` rather than hand out wrong positions.

Every connection reads the server's identity first (``server_identity``). A start at a file and
offset that belong to another server (``StreamConfig.source``) goes on at the start's GTID set
instead, and ``moved_from`` says so; without a GTID set it stops with ``SourceChangedError``: a file
and offset are never read on a server they were not written on. A dump the server refuses because
the start is gone becomes ``BinlogPurgedError`` when the start was purged (``sluice.io.purged``).

Decoding is not done here: the caller feeds the bytes to ``sluice.binlog.parser.EventParser``.
"""

from __future__ import annotations

import logging
import random
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from sluice.binlog.constants import ChecksumAlgorithm, EventType
from sluice.binlog.decoders.control import rotate_target
from sluice.binlog.framing import stream_events
from sluice.binlog.header import HEADER, HEADER_LEN
from sluice.binlog.position import SourceIdentity
from sluice.dsn import ConnectionConfig
from sluice.errors import ConfigError, ProtocolError, SourceChangedError, server_error
from sluice.io.connection import Connection
from sluice.io.gtid_check import check_gtid_start
from sluice.io.purged import refused
from sluice.wire import commands
from sluice.wire.constants import BINLOG_DUMP_NON_BLOCK, BINLOG_SEND_ANNOTATE_ROWS_EVENT, BINLOG_THROUGH_GTID

log = logging.getLogger(__name__)

_SIZE = struct.Struct("<I").unpack_from
_LOG_POS_MASK = 0xFFFFFFFF  # log_pos is 32 bits: it wraps in a file past 4 GiB

LOG_EVENT_ARTIFICIAL_F = 0x20  # sql/log_event.h: made up by the server, not in any binlog file
MARIA_SLAVE_CAPABILITY_MINE = 4  # MariaDB sql/log_event.h: GTID, annotate rows, binlog checkpoint


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """Where to start and how to follow the binlog."""

    connection: ConnectionConfig
    file: str | None = None  # start file; None with no gtid = the earliest binlog on the server
    pos: int = 4
    gtid: str | None = None  # MySQL GTID set (already executed) or MariaDB GTID position
    until_end: bool = False  # BINLOG_DUMP_NON_BLOCK: stop at the current end of the binlog
    heartbeat_period: float = 5.0  # seconds; 0 disables heartbeats
    server_id: int = 0  # 0 = pick a random replica id
    #: The server ``file`` belongs to, when known. When the server reached is another, the stream
    #: starts at ``gtid`` (``SourceChangedError`` without one): a file and offset mean nothing there.
    source: SourceIdentity | None = None


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One event as received: bytes (header .. checksum) and where it starts."""

    file: str
    pos: int
    data: memoryview


@dataclass(frozen=True, slots=True)
class RawBlock:
    """Whole ordinary events back to back, as a binlog file holds them, the first at ``pos``."""

    file: str
    pos: int
    data: bytes


@dataclass(frozen=True, slots=True)
class BinlogStatus:
    """Current end of the server's binlog and its executed GTIDs."""

    file: str
    pos: int
    gtid_executed: str


def heartbeat_period(config: StreamConfig) -> float:
    """The heartbeat period to ask the server for, in seconds: ``config.heartbeat_period``, but at
    most a quarter of the connection's deadline, so that an idle stream that is alive is never
    silent that long; 0 (none) only when neither asks for one."""
    deadline = config.connection.deadline
    if deadline is None:
        return config.heartbeat_period
    quarter = deadline / 4
    return min(config.heartbeat_period, quarter) if config.heartbeat_period > 0 else quarter


def server_binlog_status(conn: Connection) -> BinlogStatus:
    """``SHOW BINARY LOG STATUS`` (MySQL 8.2+) or ``SHOW MASTER STATUS`` (MariaDB, older MySQL)."""
    if conn.is_mariadb or conn.server_version_tuple < (8, 2, 0):
        result = conn.query("SHOW MASTER STATUS")
    else:
        result = conn.query("SHOW BINARY LOG STATUS")
    if not result.rows:
        raise ConfigError(
            f"the server at {conn.config.redacted()} has no binary log: start it with --log-bin "
            "(and binlog_format=ROW)"
        )
    row = dict(zip(result.columns, result.rows[0], strict=True))
    if conn.is_mariadb:
        gtid = conn.query("SELECT @@GLOBAL.gtid_binlog_pos").rows[0][0] or ""
    else:
        gtid = row.get("Executed_Gtid_Set") or ""
    return BinlogStatus(str(row["File"]), int(row["Position"] or 4), gtid.replace("\n", ""))


def server_identity(conn: Connection) -> SourceIdentity:
    """Which server this is: MySQL ``server_uuid``; MariaDB ``server_id`` and the GTID domains of
    ``gtid_binlog_state``."""
    if conn.is_mariadb:
        server_id, state = conn.query("SELECT @@GLOBAL.server_id, @@GLOBAL.gtid_binlog_state").rows[0]
        domains = sorted({int(g.split("-")[0]) for g in str(state or "").replace("\n", "").split(",") if g.strip()})
        return SourceIdentity("mariadb", str(server_id), tuple(domains))
    return SourceIdentity("mysql", str(conn.query("SELECT @@GLOBAL.server_uuid").rows[0][0]))


def server_binlog_files(conn: Connection) -> list[tuple[str, int]]:
    """The binlog files still on the server, oldest first, with their sizes."""
    result = conn.query("SHOW BINARY LOGS")
    return [(str(r[0]), int(r[1] or 0)) for r in result.rows]


class ReplicationStream:
    """Iterate the raw binlog events of a server from a start position.

    Use as a context manager or call ``close()``; iterating opens the connection.
    """

    def __init__(self, config: StreamConfig) -> None:
        self.config = config
        self._conn: Connection | None = None
        self.checksum: str = "NONE"
        self.file: str = config.file or ""
        self.next_pos: int = config.pos
        self.server_id = config.server_id or random.randint(1 << 20, (1 << 31) - 1)
        self.is_mariadb = False
        self.server_version: tuple[int, ...] = ()
        self.source: SourceIdentity | None = None  # the server reached, once connected
        self.moved_from: SourceIdentity | None = None  # config.source when the server reached is another

    @property
    def checksum_algorithm(self) -> ChecksumAlgorithm:
        """The negotiated checksum, for ``ParserConfig.initial_checksum``."""
        return ChecksumAlgorithm.OFF if self.checksum == "NONE" else ChecksumAlgorithm.CRC32

    def __enter__(self) -> ReplicationStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the server connection, if one is open."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __iter__(self) -> Iterator[RawEvent]:
        """Every event on its own (the blocks of ``chunks`` split up)."""
        size = _SIZE
        for chunk in self.chunks():
            if type(chunk) is RawEvent:
                yield chunk
                continue
            data, file, base = memoryview(chunk.data), chunk.file, chunk.pos
            at, n = 0, len(data)
            while at < n:
                (length,) = size(data, at + 9)
                yield RawEvent(file, base + at, data[at : at + length])
                at += length

    def chunks(self) -> Iterator[RawEvent | RawBlock]:
        """The events as they come: blocks of ordinary events back to back (as a binlog file holds
        them, copied out of the packets already received in one call), and on their own the events
        that need a look of their own (ROTATE, FORMAT_DESCRIPTION, heartbeats, events the server made
        up, a position the server skipped to)."""
        conn = self._open()
        read = conn.read_payload
        consume = conn.consume_packets
        header = HEADER.unpack_from
        rotate = EventType.ROTATE_EVENT
        fde = EventType.FORMAT_DESCRIPTION_EVENT
        heartbeats = (EventType.HEARTBEAT_LOG_EVENT, EventType.HEARTBEAT_LOG_EVENT_V2)
        take = self._take_block
        while True:
            pos = self.next_pos
            _, _, block, self.next_pos = consume(take)
            if block:
                yield RawBlock(self.file, pos, block)
                continue
            payload = read()
            status = payload[0]
            if status == 0x00:
                pass
            elif status == 0xFE and len(payload) < 9:
                return  # EOF: the end of the binlog was reached with BINLOG_DUMP_NON_BLOCK
            elif status == 0xFF:  # a start the server no longer has is named (sluice.io.purged)
                at_start = self.file == (self.config.file or "") and self.next_pos == self.config.pos
                raise refused(_err_packet(payload), self.config.connection, self.file, self.next_pos,
                              self.config.gtid if at_start else None)
            else:
                raise ProtocolError(
                    f"expected an OK-prefixed binlog event from {conn.config.redacted()}, "
                    f"found a packet starting with 0x{status:02x}"
                )
            data = memoryview(payload)[1:]
            if len(data) < HEADER_LEN:
                raise ProtocolError(f"binlog event of {len(data)} bytes is shorter than its {HEADER_LEN}-byte header")
            _ts, type_code, _sid, size, log_pos, flags = header(data, 0)
            if type_code == rotate and (flags & LOG_EVENT_ARTIFICIAL_F or _ts == 0):
                self._apply_rotate(data)
                yield RawEvent(self.file, self.next_pos, data)
                continue
            if (type_code in heartbeats or flags & LOG_EVENT_ARTIFICIAL_F
                    or (type_code == fde and self.next_pos != 4)):
                yield RawEvent(self.file, self.next_pos, data)
                continue
            if log_pos and log_pos != (self.next_pos + size) & _LOG_POS_MASK:
                self._skip_to(log_pos - size, type_code)
            pos = self.next_pos
            self.next_pos = pos + size
            if type_code == rotate:
                yield RawEvent(self.file, pos, data)
                self._apply_rotate(data)
                continue
            yield RawEvent(self.file, pos, data)

    def _take_block(self, buf: bytearray, pos: int, end: int, seq: int) -> tuple[int, int, bytes, int]:
        return stream_events(buf, pos, end, seq, self.next_pos)

    def _skip_to(self, start: int, type_code: int) -> None:
        """Move the count forward to an event the header says starts at ``start``."""
        if start > self.next_pos:
            log.debug("server skipped bytes %d..%d of %s", self.next_pos, start, self.file)
            self.next_pos = start
            return
        if self.next_pos > _LOG_POS_MASK:
            return  # past 4 GiB log_pos wraps: the count is the only position there is
        raise ProtocolError(
            f"the server sent an event (type {type_code}) that its header says starts at "
            f"{self.file}:{start}, but sluice counted {self.next_pos}: the stream's positions cannot "
            "be trusted; report this with the server version and the start position"
        )

    def _apply_rotate(self, data: memoryview) -> None:
        """Switch to the file a ROTATE names (the stream's position follows it before decoding)."""
        end = len(data) - (4 if self.checksum != "NONE" else 0)
        try:
            self.file, self.next_pos = rotate_target(data[HEADER_LEN:end])
        except (ValueError, struct.error) as exc:
            raise ProtocolError(f"the server sent a ROTATE event sluice cannot read ({exc}) at {self.file}:"
                                f"{self.next_pos}") from exc

    # -- connection set-up -------------------------------------------------------------------------

    def _open(self) -> Connection:
        if self._conn is not None:
            return self._conn
        cfg = self.config
        conn = Connection.open(cfg.connection)
        self._conn = conn
        self.is_mariadb = conn.is_mariadb
        self.server_version = conn.server_version_tuple
        try:
            self.source = server_identity(conn)
            self._negotiate(conn)
            self._register(conn)
            self._dump(conn)
        except BaseException:
            self.close()
            raise
        return conn

    def _negotiate(self, conn: Connection) -> None:
        checksum = conn.query("SELECT @@GLOBAL.binlog_checksum").rows[0][0] or "NONE"
        self.checksum = checksum.upper()
        conn.execute(f"SET @master_binlog_checksum = '{self.checksum}'")
        period = heartbeat_period(self.config)
        if period > 0:
            nanos = int(period * 1_000_000_000)
            conn.execute(f"SET @master_heartbeat_period = {nanos}")
        if conn.is_mariadb:
            conn.execute(f"SET @mariadb_slave_capability = {MARIA_SLAVE_CAPABILITY_MINE}")

    def _register(self, conn: Connection) -> None:
        payload = commands.com_register_slave(server_id=self.server_id, host="", user="", password="", port=0)
        conn.send_command(payload)
        reply = conn.read_payload()
        if reply[:1] == b"\xff":
            raise _err_packet(reply)

    def _dump(self, conn: Connection) -> None:
        cfg = self.config
        flags = BINLOG_DUMP_NON_BLOCK if cfg.until_end else 0
        if conn.is_mariadb:
            flags |= BINLOG_SEND_ANNOTATE_ROWS_EVENT  # else MariaDB leaves them out, a gap in the offsets
        by_gtid = bool(cfg.gtid) and self._moved(cfg)
        if cfg.gtid and (cfg.file is None or by_gtid):
            check_gtid_start(conn, cfg.gtid, str(self.source))
        if cfg.gtid is not None and (cfg.file is None or by_gtid) and conn.is_mariadb:
            position = cfg.gtid.replace("'", "")
            conn.execute(f"SET @slave_connect_state = '{position}'")
            conn.execute("SET @slave_gtid_strict_mode = 0")
            conn.execute("SET @slave_gtid_ignore_duplicates = 0")
            self.file, self.next_pos = "", 4
            conn.send_command(commands.com_binlog_dump(4, flags, self.server_id, ""))
            return
        if cfg.gtid is not None and (cfg.file is None or by_gtid):
            from sluice.binlog.gtid import MysqlGtidSet

            gtid_set = MysqlGtidSet.parse(cfg.gtid)
            self.file, self.next_pos = "", 4
            conn.send_command(
                commands.com_binlog_dump_gtid(
                    flags | BINLOG_THROUGH_GTID, self.server_id, "", 4, gtid_set.encode()
                )
            )
            return
        if cfg.file is None:
            files = server_binlog_files(conn)
            if not files:
                raise ConfigError("the server lists no binary logs: is log_bin on?")
            self.file, self.next_pos = files[0][0], 4
            log.info("no start position given: streaming from the earliest binlog %s", self.file)
        else:
            if self._moved(cfg):
                raise self._changed_error(cfg)
            self.file, self.next_pos = cfg.file, cfg.pos
        conn.send_command(commands.com_binlog_dump(self.next_pos, flags, self.server_id, self.file))

    def _moved(self, cfg: StreamConfig) -> bool:
        """Whether the server reached is another than the one ``cfg.file`` belongs to."""
        if cfg.source is None or self.source is None or cfg.file is None or cfg.source.same_server(self.source):
            return False
        self.moved_from = cfg.source
        return True

    def _changed_error(self, cfg: StreamConfig) -> SourceChangedError:
        return SourceChangedError(
            f"the server at {cfg.connection.redacted()} is another server ({self.source}) than the one whose "
            f"binlog position {cfg.file}:{cfg.pos} sluice holds ({cfg.source}), and the server wrote no GTIDs "
            "there, so nothing says where to go on: its binlog files are other files. Take a new snapshot "
            "(sluice snapshot, or a new lake), or give --from FILE:POS on the new server where the stream "
            "should go on")


def _err_packet(payload: bytes) -> Exception:
    from sluice.wire.responses import parse_err

    err = parse_err(payload)
    return server_error(err.errno, err.sqlstate, err.message)


__all__ = [
    "BinlogStatus",
    "RawBlock",
    "RawEvent",
    "ReplicationStream",
    "StreamConfig",
    "heartbeat_period",
    "server_binlog_files",
    "server_binlog_status",
    "server_identity",
]
