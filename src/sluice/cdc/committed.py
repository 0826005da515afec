"""What the change capture hands out: committed transactions and the records inside them.

``CommittedTransaction`` carries a ``Transaction`` with its change records (``RowChange`` and, if
asked, ``DdlRecord``), or only their count, or their JSON lines, or change-log rows, as the
capture's ``CaptureOutput`` says.
``CountedRows`` and ``WrittenLines`` stand in a transaction's events for runs of rows events the
compiled core counted or wrote as lines, ``HeldRows`` for the change-log rows of an open
transaction's events that the capture handed out as a part before its commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sluice.binlog.position import Checkpoint
from sluice.cdc.records import RowChange
from sluice.cdc.transactions import Transaction

__all__ = ["CommittedTransaction", "CountedRows", "DdlRecord", "HeldRows", "WrittenLines"]


@dataclass(frozen=True, slots=True)
class DdlRecord:
    """A schema change, in the shape of the JSON-lines contract (``op`` is ``ddl``)."""

    db: str
    sql: str
    kind: str
    tables: tuple[tuple[str, str], ...]
    understood: bool
    file: str
    pos: int
    gtid: str | None
    ts: int
    op: str = "ddl"
    default_db: str = ""  # the session's database when the statement ran (the QUERY event's schema)

    def as_dict(self) -> dict[str, Any]:
        """The record as its JSON line's object (``understood`` only when False)."""
        out: dict[str, Any] = {
            "op": "ddl",
            "db": self.db,
            "sql": self.sql,
            "kind": self.kind,
            "tables": [f"{db}.{table}" for db, table in self.tables],
            "file": self.file,
            "pos": self.pos,
            "gtid": self.gtid,
            "ts": self.ts,
        }
        if not self.understood:
            out["understood"] = False
        return out


@dataclass(frozen=True, slots=True)
class CountedRows:
    """Rows of a run of rows events the compiled core counted without keeping them
    (``CaptureOutput.COUNTS`` and ``DECODED_COUNTS``), per rows-event kind."""

    write: int
    update: int
    delete: int

    def total(self, kinds: frozenset[str] | None) -> int:
        """Rows of the given rows-event kinds (``write`` / ``update`` / ``delete``); None counts all."""
        if kinds is None:
            return self.write + self.update + self.delete
        return sum(n for kind, n in (("write", self.write), ("update", self.update), ("delete", self.delete))
                   if kind in kinds)


@dataclass(frozen=True, slots=True)
class WrittenLines:
    """The JSON lines the compiled core wrote for a run of rows events (``CaptureOutput.LINES``)."""

    data: bytes
    rows: int


@dataclass(frozen=True, slots=True)
class HeldRows:
    """A part of an open transaction's change-log rows, handed out before its commit
    (``CaptureConfig.hold_columns``): what the hand-out returned and its number of row changes."""

    part: Any
    rows: int


@dataclass(frozen=True, slots=True)
class CommittedTransaction:
    """A committed transaction and its change records (row changes and, if asked, DDL)."""

    transaction: Transaction
    records: list[RowChange | DdlRecord] = field(default_factory=list)
    counted: int | None = None  # counted or written as lines: the number of row changes, records stay empty
    #: ``CaptureOutput.LINES``: the records' JSON lines, UTF-8, newline-ended, in chunks: a list, or for a
    #: transaction held while open the ``cdc.held.HeldLines`` that reads them back (close it after).
    lines: Any = None
    columns: Any = None  # ``CaptureOutput.COLUMNS``: the records as the core's ``ChangeRows`` (cdc.change_rows)
    #: ``COLUMNS`` with ``hold_columns``: the parts handed out while the transaction was open, in order,
    #: before the rows of ``columns``
    held: tuple[Any, ...] = ()

    @property
    def row_count(self) -> int:
        """Number of row changes, counted or kept (DDL records not included)."""
        return self.counted if self.counted is not None else sum(1 for r in self.records if r.op != "ddl")

    @property
    def start(self) -> Checkpoint:
        """The boundary just before the transaction: resume here to receive it again."""
        return self.transaction.start

    @property
    def end(self) -> Checkpoint:
        """The boundary just after the transaction, its GTID included: resume here to go past it."""
        return self.transaction.end
