"""Where events stand in a transaction, for the assembler (``transactions``): the events that open
one without a GTID event, those only a transaction holds, the stream's control events, and the DDL
statement that opens a transaction of its own rows.
"""

from __future__ import annotations

from sluice.binlog.events import (
    AnnotateRowsEvent,
    IntvarEvent,
    MariadbGtidListEvent,
    PreviousGtidsEvent,
    RandEvent,
    RowsEvent,
    RowsQueryEvent,
    SkippedRowsEvent,
    TableMapEvent,
    UserVarEvent,
    XaPrepareEvent,
    XidEvent,
)

__all__ = ["CONTROL", "STATEMENT_PREFIX", "TRANSACTION_ONLY", "starts_transaction"]

#: Events that precede a statement inside its transaction; without a GTID event they open it.
STATEMENT_PREFIX = frozenset({IntvarEvent, RandEvent, UserVarEvent, RowsQueryEvent, AnnotateRowsEvent})
#: Events only a transaction holds: one of them with no transaction open means a lost start.
TRANSACTION_ONLY = frozenset({RowsEvent, TableMapEvent, SkippedRowsEvent, XidEvent, XaPrepareEvent})
#: The stream's GTID-set events: inside a transaction they are not part of it.
CONTROL = frozenset({PreviousGtidsEvent, MariadbGtidListEvent})


def starts_transaction(sql: str) -> bool:
    """Whether a statement is MySQL 8.0.21+'s ``CREATE TABLE ... SELECT`` that ends in ``START
    TRANSACTION``: its rows and XID follow as one transaction."""
    tail = sql.rstrip().rstrip(";").rstrip()
    return tail[-17:].upper() == "START TRANSACTION" and tail.lstrip()[:6].upper() == "CREATE"
