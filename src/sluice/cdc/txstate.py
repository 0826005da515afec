"""A transaction as the assembler sees it: the committed ``Transaction`` it hands out, and the
open (``OpenTransaction``) and prepared XA (``PreparedXa``) ones it holds while reading (``transactions``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sluice.binlog.gtid import Gtid, MariadbGtid
from sluice.binlog.position import Checkpoint

__all__ = ["AWAIT", "BODY", "SINGLE", "Located", "OpenTransaction", "PreparedXa", "Transaction"]

Located = tuple[str, int, Any]

# State of an open transaction.
AWAIT = 0  # opened by a GTID (or a statement prefix): the first statement decides how it ends
BODY = 1  # inside BEGIN ... XID/COMMIT/ROLLBACK (or XA START ... XA_PREPARE)
SINGLE = 2  # MariaDB FL_STANDALONE: ends with its first statement



@dataclass(frozen=True, slots=True)
class Transaction:
    """One committed transaction, in binlog order, with the checkpoints around it.

    ``kind`` is "ddl" for a schema statement (a single statement after its GTID, MariaDB
    ``FL_DDL``, MySQL ``CREATE ... START TRANSACTION`` of CREATE TABLE ... SELECT), "xa_commit" /
    "xa_one_phase" for XA, else "dml". ``events`` starts with the GTID event when there is one.
    """

    start: Checkpoint  # boundary just before its first event: resume here to receive it again
    end: Checkpoint  # boundary just after its last event, GTID set including it
    gtid: str | None  # "uuid:n" / "uuid:tag:n" / "domain-server-seq"; None with GTIDs off
    kind: str  # "dml" | "ddl" | "xa_commit" | "xa_one_phase"
    events: tuple[Located, ...]  # (file, pos, event); for "xa_commit" the events of the prepared part
    ts: int  # header timestamp of the committing event, seconds
    commit_us: int | None  # MySQL immediate_commit_timestamp (microseconds) when present
    prepared_gtid: str | None = None  # "xa_commit": the GTID of the XA PREPARE that logged the rows

    @property
    def rows_gtid(self) -> str | None:
        """The GTID of the transaction whose events hold the rows: for XA the prepare's, not the commit's."""
        return self.prepared_gtid if self.kind == "xa_commit" else self.gtid



class OpenTransaction:
    """The transaction being read."""

    __slots__ = ("commit_us", "events", "file", "gtid", "gtid_obj", "kind", "pos", "start", "state", "xa")

    def __init__(
        self, file: str, pos: int, start: Checkpoint, state: int, gtid: str | None,
        gtid_obj: Gtid | MariadbGtid | None, commit_us: int | None = None, xa: bytes | None = None,
    ) -> None:
        self.file = file
        self.pos = pos
        self.start = start
        self.state = state
        self.gtid = gtid
        self.gtid_obj = gtid_obj
        self.commit_us = commit_us
        self.xa = xa  # MariaDB FL_PREPARED_XA / FL_COMPLETED_XA xid, MySQL XA START xid
        self.kind = "dml"
        self.events: list[Located] = []

    @property
    def rows_gtid(self) -> str | None:
        """The GTID its rows' changes carry: its own (an XA's prepared part is read as its own transaction)."""
        return self.gtid


@dataclass(frozen=True, slots=True)
class PreparedXa:
    """The prepared part of an XA transaction, waiting for XA COMMIT or XA ROLLBACK."""

    file: str
    pos: int
    gtid_obj: Gtid | MariadbGtid | None
    events: tuple[Located, ...]
    gtid: str | None = None
