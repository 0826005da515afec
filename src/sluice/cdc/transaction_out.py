"""What a capture makes of its transactions, as ``CaptureConfig.output`` asks: ``RowChange`` and
``DdlRecord`` records, counts, JSON lines or change-log columns (``CaptureOutput``).

``TransactionOutput`` turns a committed transaction into its ``CommittedTransaction``
(``committed``), and moves an open transaction's output out of the way while it is still read
(``grew``): its JSON lines into a bounded buffer past ``HOLD_AFTER`` bytes of binlog (``cdc.held``),
or its change-log rows handed out every ``part_bytes`` (``CaptureConfig.hold_columns``). The
record-by-record work is ``sluice.cdc.capture_out``'s; this class holds the state it needs between
events (the builder, the part handed out last).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sluice.binlog.events import QueryEvent, RowsEvent, TransactionPayloadEvent
from sluice.cdc import capture_out as out
from sluice.cdc.capture_config import COLUMN_OUTPUTS, COUNTING_OUTPUTS, CaptureConfig, CaptureOutput
from sluice.cdc.captured_tables import CapturedTables
from sluice.cdc.committed import CommittedTransaction, DdlRecord
from sluice.cdc.held import HOLD_AFTER, MemoryBuffer
from sluice.cdc.records import RowChange, RowChangeBuilder
from sluice.cdc.transactions import Transaction
from sluice.cdc.txstate import OpenTransaction

if TYPE_CHECKING:
    from sluice.cdc.schema.ddl import DdlOutcome

__all__ = ["TransactionOutput"]


class TransactionOutput:
    """The output side of one ``ChangeCapture``: ``core`` is the compiled core, None without it."""

    def __init__(self, config: CaptureConfig, builder: RowChangeBuilder, tables: CapturedTables, core: Any) -> None:
        self.config = config
        self.builder = builder
        self.tables = tables
        self.core = core
        output = config.output
        self.counting = output in COUNTING_OUTPUTS
        self.lines = output is CaptureOutput.LINES
        self.columns = core is not None and output in COLUMN_OUTPUTS
        self.typed = output is CaptureOutput.TYPED_COLUMNS
        self._hold_after = min(HOLD_AFTER, config.memory // 4) if self.lines else None
        self._part_after = config.part_bytes if self.columns and config.hold_columns else None
        self._parted: tuple[Any, int] = (None, 0)  # (the open transaction's start, where its last part ended)
        #: whether an open transaction's output moves while it is read (``grew`` has work to do)
        self.grows = self._hold_after is not None or self._part_after is not None

    def restart(self) -> None:
        """A new connection: the transaction whose parts were handed out was cut off."""
        self._parted = (None, 0)

    def grew(self, tx: OpenTransaction | None, pos: int) -> None:
        """The open transaction ``tx`` was read up to ``pos``: hold its lines or hand out a part, when
        it is past the size for that."""
        if tx is None:
            return
        if self._hold_after is not None:
            self._hold(tx, pos, self._hold_after)
        elif self._part_after is not None:
            self._hold_part(tx, pos, self._part_after)

    def committed(self, tx: Transaction) -> CommittedTransaction:
        """What the capture gives out for the committed transaction ``tx``."""
        if self.counting:
            return CommittedTransaction(tx, [], out.count_rows(self.builder, tx.events))
        self.builder.gtid = tx.rows_gtid
        if self.lines:
            lines, count = out.transaction_lines(tx, self.builder, self.event_records, self._rows_jsonl())
            return CommittedTransaction(tx, [], count, lines)
        if self.columns:
            rows, count, held = out.transaction_columns(tx, self.builder, self.event_records, self.core,
                                                        typed=self.typed)
            return CommittedTransaction(tx, [], count, columns=rows, held=held)
        return CommittedTransaction(tx, [r for file, pos, event in tx.events
                                         for r in self.event_records(tx, file, pos, event)])

    def event_records(self, tx: Transaction, file: str, pos: int, event: Any) -> Iterator[RowChange | DdlRecord]:
        """The records of one event of ``tx``: its row changes, or the DDL record of a captured DDL."""
        kind = type(event)
        if kind is RowsEvent or kind is TransactionPayloadEvent:
            yield from self.builder.feed(event, file, pos)
        elif kind is QueryEvent:
            outcome = self.tables.ddl_at(file, pos)
            if outcome is not None and self.config.ddl and self._captured(outcome):
                yield DdlRecord(
                    db=outcome.db or event.schema,
                    sql=event.sql,
                    kind=outcome.kind,
                    tables=outcome.tables,
                    understood=outcome.understood,
                    file=file,
                    pos=pos,
                    gtid=tx.rows_gtid,
                    ts=event.header.timestamp,
                    default_db=event.schema,
                )

    def _rows_jsonl(self) -> Any:
        return None if self.core is None else self.core.rows_jsonl

    def _hold(self, tx: OpenTransaction, pos: int, after: int) -> None:
        """``LINES``: an open transaction past ``after`` bytes of binlog moves its lines into its
        bounded buffer (``cdc.held``) as they come."""
        if pos - tx.pos < after:
            return
        make, memory = self.config.spill or MemoryBuffer, self.config.memory
        out.hold_lines(tx, self.builder, self.event_records, self._rows_jsonl(), lambda: make(memory))

    def _hold_part(self, tx: OpenTransaction, pos: int, after: int) -> None:
        """``COLUMNS`` with ``hold_columns``: hand out an open transaction's rows each ``part_bytes``."""
        hand_out = self.config.hold_columns
        if hand_out is None:
            return
        at = (tx.file, tx.pos)
        if pos - (self._parted[1] if self._parted[0] == at else tx.pos) < after:
            return
        self._parted = (at, pos)
        out.hold_columns(tx, self.builder, self.event_records, self.core, hand_out, typed=self.typed)

    def _captured(self, outcome: DdlOutcome) -> bool:
        keep = self.config.table_filter
        if keep is None or not outcome.tables:
            return True
        return any(keep(db, table) for db, table in outcome.tables)
