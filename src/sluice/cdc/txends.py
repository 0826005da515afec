"""How a transaction of the binlog begins and ends: the half of ``TransactionAssembler`` that opens
a transaction at its first event and, at its last, emits it, drops it or holds it.

A commit emits the transaction with the boundaries before and after it, unless it was read before
(its end passed already, or its GTID executed: counted in ``skipped``); a rollback consumes its
GTID and emits nothing; an XA prepare holds the prepared part in ``StreamPoint`` until ``XA COMMIT``
emits it as kind ``xa_commit`` or ``XA ROLLBACK`` drops it. Which event is which is the assembler's
(``sluice.cdc.transactions``).
"""

from __future__ import annotations

import logging

from sluice.binlog.events import QueryEvent
from sluice.binlog.gtid import Gtid, MariadbGtid
from sluice.cdc.stream_point import StreamPoint
from sluice.cdc.txstate import OpenTransaction, PreparedXa, Transaction
from sluice.errors import DataLossError

__all__ = ["TransactionEnds"]

log = logging.getLogger(__name__)


class TransactionEnds:
    """Opening, committing, rolling back and resolving a transaction (module docstring)."""

    _at: StreamPoint
    _tx: OpenTransaction | None
    skipped: int

    def _open(
        self, file: str, pos: int, state: int, gtid: str | None, gtid_obj: Gtid | MariadbGtid | None,
        commit_us: int | None = None, xa: bytes | None = None,
    ) -> OpenTransaction:
        if file != self._at.file or pos != self._at.pos:
            self._at.move(file, pos)
        tx = self._tx = OpenTransaction(file, pos, self._at.boundary, state, gtid, gtid_obj, commit_us, xa)
        return tx

    def _commit(self, tx: OpenTransaction, file: str, end: int, ts: int, kind: str) -> Transaction | None:
        self._tx = None
        fresh = not self._at.passed(file, end)
        fresh = self._at.executed(tx.gtid_obj) and fresh
        self._at.move(file, end)
        if not fresh:
            self.skipped += 1
            log.debug("skipping transaction %s at %s:%d: executed before the start", tx.gtid, tx.file, tx.pos)
            return None
        return Transaction(tx.start, self._at.boundary, tx.gtid, kind, tuple(tx.events), ts, tx.commit_us)

    def _rolled_back(self, tx: OpenTransaction, file: str, end: int) -> None:
        """ROLLBACK: the binlog consumed the GTID, the changes did not happen."""
        self._tx = None
        self._at.executed(tx.gtid_obj)
        self._at.move(file, end)

    def _prepare(self, tx: OpenTransaction, key: bytes, file: str, end: int) -> None:
        self._tx = None
        self._at.executed(tx.gtid_obj)
        self._at.prepare(key, PreparedXa(tx.file, tx.pos, tx.gtid_obj, tuple(tx.events), tx.gtid))
        self._at.move(file, end)

    def _resolve(
        self, tx: OpenTransaction, key: bytes, commit: bool, file: str, pos: int, end: int, event: QueryEvent
    ) -> Transaction | None:
        self._tx = None
        fresh = not self._at.passed(file, end)
        fresh = self._at.executed(tx.gtid_obj) and fresh
        prepared = self._at.resolve(key)
        self._at.move(file, end)
        if not fresh:
            self.skipped += 1
            return None
        if not commit:
            return None
        if prepared is None:
            raise DataLossError(
                f"{event.sql!r} at {file}:{pos} commits an XA transaction whose prepared part (its rows) was "
                f"not read since the start {tx.start}: it was prepared before that. Start from a checkpoint "
                "before its XA PREPARE (or take a new snapshot after it commits)"
            )
        return Transaction(
            tx.start, self._at.boundary, tx.gtid, "xa_commit", prepared.events, event.header.timestamp, tx.commit_us,
            prepared.gtid,
        )
