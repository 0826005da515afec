"""Transaction assembly: decoded binlog events in, committed transactions with their checkpoints out.

``TransactionAssembler`` follows one binlog stream in order and returns a ``Transaction`` for
every transaction the binlog commits: MySQL ``GTID``/``ANONYMOUS_GTID`` then ``BEGIN`` ... ``XID``
(or ``COMMIT``), a single statement after a GTID (DDL), ``BEGIN`` without a GTID when GTIDs are
off, MariaDB's GTID event that opens the transaction itself (``FL_STANDALONE``: one statement),
the inner events of a MySQL ``TRANSACTION_PAYLOAD``, and XA. A transaction that ends in
``ROLLBACK`` is dropped; one cut short (a ``FORMAT_DESCRIPTION``, ``STOP`` or ``ROTATE`` inside
it, or ``cut_off()`` when the input ends or the connection breaks) is dropped as well and the
boundary stays at its start. ``boundary`` is always a transaction boundary, with the executed
GTID set there (MySQL ``MysqlGtidSet``, grown by every GTID the binlog consumes, rolled-back
ones included, seeded by ``PREVIOUS_GTIDS`` when the start did not name one; MariaDB
``MariadbGtidPosition``, seeded by ``GTID_LIST``). Events outside transactions move it to their
end; events the server makes up for a replica (flagged ``LOG_EVENT_ARTIFICIAL_F``, a
``FORMAT_DESCRIPTION`` re-sent anywhere but at offset 4, heartbeats) do not, and a ``ROTATE``
moves it to the file and position it names. XA: the
prepared part (``XA START`` ... ``XA END``, ``XA_PREPARE``, or MariaDB's GTID with
``FL_PREPARED_XA``) is held in memory, not emitted; a later ``XA COMMIT`` emits its events as
kind ``xa_commit``, ``XA ROLLBACK`` drops them, a one-phase ``XA_PREPARE`` commits at once.
Prepared XA state is not written anywhere: while an XA is prepared, every checkpoint this
module hands out (``boundary``, ``Transaction.start``/``end``) stays at the start of the oldest
prepared XA (that binlog file must stay on the server), so a resume reads its prepared part
again. What was emitted after that point is recognised and skipped (counted in ``skipped``): by
the same assembler after a reconnect, by position; by a new one, through the checkpoint's GTIDs
(MySQL: the executed set without the prepared parts' GTIDs, a transaction whose GTID is in it
is skipped; MariaDB: the full position, a transaction at or below its domain's GTID from the
same server is skipped, so resume such a checkpoint by file and position). With GTIDs off a new
process cannot recognise them: transactions committed while an XA was prepared may come again.
An ``XA COMMIT`` of an XA prepared before the start (rows sluice never saw) raises
``DataLossError``.
"""

from __future__ import annotations

import logging
from typing import Any

from sluice.binlog.events import (
    FL_COMPLETED_XA,
    FL_DDL,
    FL_PREPARED_XA,
    Event,
    FormatDescriptionEvent,
    GtidEvent,
    HeartbeatEvent,
    MariadbGtidEvent,
    MariadbGtidListEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RotateEvent,
    RowsEvent,
    SkippedRowsEvent,
    StopEvent,
    TableMapEvent,
    TransactionPayloadEvent,
    XaPrepareEvent,
    XidEvent,
)
from sluice.binlog.gtid import Gtid, MariadbGtid
from sluice.binlog.position import Checkpoint, SourceIdentity
from sluice.binlog.statements import classify, parse_xid, xid_key
from sluice.cdc.stream_point import StreamPoint
from sluice.cdc.txends import TransactionEnds
from sluice.cdc.txevents import CONTROL, STATEMENT_PREFIX, TRANSACTION_ONLY, starts_transaction
from sluice.cdc.txstate import AWAIT, BODY, SINGLE, Located, OpenTransaction, Transaction
from sluice.errors import ProtocolError

__all__ = ["Transaction", "TransactionAssembler", "xid_key"]

log = logging.getLogger(__name__)


class TransactionAssembler(TransactionEnds):
    """Follow one binlog stream from ``start`` (a transaction boundary) and return committed
    transactions as their committing events arrive."""

    def __init__(self, start: Checkpoint) -> None:
        self._at = StreamPoint(start)  # where the stream stands between transactions
        self._tx: OpenTransaction | None = None
        self.skipped = 0  # committed transactions read again (before the start or a reconnect): not emitted

    # -- public state --------------------------------------------------------------------------
    @property
    def boundary(self) -> Checkpoint:
        """The last transaction boundary: a resume that starts here loses nothing."""
        return self._at.boundary

    @property
    def source(self) -> SourceIdentity | None:
        """The server the positions are read on (stamped on every boundary)."""
        return self._at.source

    def read_on(self, source: SourceIdentity | None, *, moved: bool) -> None:
        """The stream is read on ``source`` now (``StreamPoint.read_on``)."""
        self._at.read_on(source, moved=moved)

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (begun, not yet committed or cut off)."""
        return self._tx is not None

    def prepared_xids(self) -> tuple[bytes, ...]:
        """``xid_key`` of every XA transaction prepared and not yet committed or rolled back."""
        return tuple(self._at.prepared)

    def open_events(self) -> list[Located] | None:
        """The events list of the open transaction (None outside one), for a reader that adds
        its TABLE_MAP and rows events itself; it calls ``took_rows`` when it added any."""
        tx = self._tx
        return None if tx is None else tx.events

    @property
    def open_gtid(self) -> str | None:
        """The GTID of the open transaction (None outside one or with GTIDs off)."""
        tx = self._tx
        return None if tx is None else tx.gtid

    @property
    def open_transaction(self) -> OpenTransaction | None:
        """The open transaction (None outside one), for a reader that holds its events elsewhere."""
        return self._tx

    def took_rows(self) -> None:
        """Rows events were added to the open transaction through ``open_events``."""
        tx = self._tx
        if tx is not None and tx.state == AWAIT:
            tx.state = BODY

    def cut_off(self) -> None:
        """The input ended or the connection broke: drop the open transaction, if any."""
        tx = self._tx
        if tx is not None:
            log.debug("transaction at %s:%d cut off after %d events", tx.file, tx.pos, len(tx.events))
            self._tx = None

    # -- feeding -------------------------------------------------------------------------------
    def feed(self, file: str, pos: int, next_pos: int, event: Event) -> Transaction | None:
        """Take the event at ``file:pos`` (ending at ``next_pos``); return the transaction it commits."""
        tx = self._tx
        if tx is None:
            return self._outside(file, pos, next_pos, event)
        t = type(event)
        if t is RowsEvent or t is TableMapEvent or t is SkippedRowsEvent:
            tx.events.append((file, pos, event))
            if tx.state == AWAIT:
                tx.state = BODY
            return None
        if type(event) is TransactionPayloadEvent:
            tx.events.append((file, pos, event))
            return self._payload(tx, file, pos, next_pos, event)
        return self._inside(tx, file, pos, next_pos, event, True)

    def _outside(self, file: str, pos: int, next_pos: int, event: Any) -> Transaction | None:
        t = type(event)
        if t is GtidEvent:
            mysql_gtid = Gtid(event.sid, event.gno, event.tag) if event.gno else None
            self._open(file, pos, AWAIT, event.gtid, mysql_gtid, event.immediate_commit_timestamp)
        elif t is MariadbGtidEvent:
            xa = None
            if event.flags & (FL_PREPARED_XA | FL_COMPLETED_XA) and event.xa_gtrid is not None:
                xa = xid_key(event.xa_format_id or 0, event.xa_gtrid, event.xa_bqual or b"")
            maria_gtid = MariadbGtid(event.domain_id, event.header.server_id, event.seq_no)
            opened = self._open(file, pos, SINGLE if event.standalone else BODY, event.gtid, maria_gtid, None, xa)
            if event.flags & FL_DDL:
                opened.kind = "ddl"  # also when not standalone: CREATE ... SELECT is DDL, rows, XID
        elif t is RotateEvent:
            self._at.move(event.next_file, event.position)
            return None
        elif t is HeartbeatEvent:
            return None  # not in the binlog; where it points may be inside a skipped transaction
        elif t is PreviousGtidsEvent:
            self._at.seeded(self._at.gtids.previous(event.gtid_set))
            self._at.move_past(file, pos, next_pos, event)
            return None
        elif t is MariadbGtidListEvent:
            self._at.seeded(self._at.gtids.gtid_list(event.gtids))
            self._at.move_past(file, pos, next_pos, event)
            return None
        elif t is QueryEvent or t is TransactionPayloadEvent or t in STATEMENT_PREFIX:
            # No GTID event (GTIDs off on old servers, or an implicit start): the event opens it.
            self._open(file, pos, AWAIT, None, None)
        elif t in TRANSACTION_ONLY:
            raise ProtocolError(
                f"expected a GTID or BEGIN before the {t.__name__} at {file}:{pos}, found none since the last "
                f"transaction boundary {self._at.file}:{self._at.pos}: the stream did not start at a transaction "
                "boundary "
                "or lost events. Start at a GTID or BEGIN event, the start of a binlog file, or a checkpoint sluice "
                "wrote"
            )
        else:
            # FORMAT_DESCRIPTION, STOP, BINLOG_CHECKPOINT, INCIDENT, unknown events ...
            self._at.move_past(file, pos, next_pos, event)
            return None
        tx = self._tx
        assert tx is not None
        if t is GtidEvent or t is MariadbGtidEvent:
            tx.events.append((file, pos, event))
            return None
        return self.feed(file, pos, next_pos, event)

    def _inside(
        self, tx: OpenTransaction, file: str, pos: int, end: int, event: Any, record: bool
    ) -> Transaction | None:
        """One event inside the open transaction; ``end`` is where the transaction would end with
        it (the payload's end for events inside a TRANSACTION_PAYLOAD); ``record`` adds it to the
        transaction's events (inner payload events are there through their payload)."""
        t = type(event)
        if t is XidEvent:
            if record:
                tx.events.append((file, pos, event))
            return self._commit(tx, file, end, event.header.timestamp, tx.kind)
        if t is QueryEvent:
            return self._query(tx, file, pos, end, event, record)
        if t is XaPrepareEvent:
            if record:
                tx.events.append((file, pos, event))
            if event.one_phase:
                return self._commit(tx, file, end, event.header.timestamp, "xa_one_phase")
            key = xid_key(event.format_id, event.gtrid, event.bqual)
            self._prepare(tx, key, file, end)
            return None
        if t is FormatDescriptionEvent or t is StopEvent or t is RotateEvent:
            log.debug("transaction at %s:%d cut off by %s at %s:%d", tx.file, tx.pos, t.__name__, file, pos)
            self._tx = None
            return None
        if t is GtidEvent or t is MariadbGtidEvent:
            raise ProtocolError(
                f"GTID event at {file}:{pos} inside the transaction that began at {tx.file}:{tx.pos}: the binlog "
                "is cut or out of order there. Check the file (mysqlbinlog / mariadb-binlog) at that offset"
            )
        if t is HeartbeatEvent or t in CONTROL:
            return None
        if record:
            tx.events.append((file, pos, event))
        if tx.state == AWAIT and t in TRANSACTION_ONLY:
            tx.state = BODY
        return None

    def _payload(
        self, tx: OpenTransaction, file: str, pos: int, next_pos: int, event: TransactionPayloadEvent
    ) -> Transaction | None:
        result: Transaction | None = None
        for inner in event.events:
            if self._tx is not tx:
                raise ProtocolError(
                    f"TRANSACTION_PAYLOAD at {file}:{pos} holds events after the end of its transaction "
                    f"({type(inner).__name__}); the payload is malformed"
                )
            t = type(inner)
            if t is RowsEvent or t is TableMapEvent or t is SkippedRowsEvent:
                continue
            result = self._inside(tx, file, pos, next_pos, inner, False)
        return result

    def _query(
        self, tx: OpenTransaction, file: str, pos: int, end: int, event: QueryEvent, record: bool
    ) -> Transaction | None:
        verb, rest = classify(event)
        state = tx.state
        if verb == "commit":
            if record:
                tx.events.append((file, pos, event))
            return self._commit(tx, file, end, event.header.timestamp, tx.kind)
        if verb == "rollback":
            self._rolled_back(tx, file, end)
            return None
        if verb == "xa_commit" or verb == "xa_rollback":
            key = parse_xid(rest) or tx.xa
            if key is None:
                raise ProtocolError(f"cannot read the XA transaction id of {event.sql!r} at {file}:{pos}")
            if record:
                tx.events.append((file, pos, event))
            return self._resolve(tx, key, verb == "xa_commit", file, pos, end, event)
        if record:
            tx.events.append((file, pos, event))
        if verb == "begin":
            tx.state = BODY
            return None
        if verb == "xa_start" or verb == "xa_begin":
            tx.state = BODY
            tx.xa = parse_xid(rest) or tx.xa
            return None
        if verb != "other":
            return None
        if starts_transaction(rest):
            # MySQL 8.0.21+ CREATE TABLE ... SELECT: "CREATE ... START TRANSACTION", rows, XID
            tx.kind = "ddl"
            tx.state = BODY
            return None
        if state == BODY:
            return None
        # The first statement of a transaction without BEGIN: DDL and other single statements.
        return self._commit(tx, file, end, event.header.timestamp, "ddl")
