"""What a decoder may ask of the parser that runs it: the narrow interface decoders are given.

Decoders are functions ``(header, body, ctx) -> event``. They see the event body and this much of
the reading state, no more: the post-header lengths and the FORMAT_DESCRIPTION of the stream, the
table maps of the current transaction and their row plans, the parser for an embedded event, and
a counter of rows events skipped because their table is not captured. ``EventParser`` implements
it; a test or another reader can hand a decoder any object that does.
"""

from __future__ import annotations

from typing import Any, Protocol

from sluice.binlog.events import Event, FormatDescriptionEvent, TableMapEvent
from sluice.binlog.header import EventHeader

__all__ = ["DecodeContext", "TableEntry"]


class TableEntry(Protocol):
    """A TABLE_MAP of the current transaction and its row plan (None: not built yet; False: the
    table is not captured)."""

    table_map: TableMapEvent
    plan: Any


class DecodeContext(Protocol):
    """The reading state a decoder may use."""

    @property
    def fde(self) -> FormatDescriptionEvent | None:
        """The stream's FORMAT_DESCRIPTION_EVENT, once one was read."""

    def post_header_len(self, type_code: int, default: int) -> int:
        """The post-header length the FORMAT_DESCRIPTION gives this event type, or ``default``."""

    def on_table_map(self, header: EventHeader, body: bytes | memoryview) -> TableMapEvent:
        """Decode a TABLE_MAP body (cached by its bytes) and make it current for its table id."""

    def table_entry(self, table_id: int, header: EventHeader) -> TableEntry:
        """The current TABLE_MAP of ``table_id``; a typed error when the transaction has none."""

    def plan_of(self, entry: TableEntry) -> Any:
        """Build (once) the row plan of a TABLE_MAP entry."""

    def skip_rows(self) -> None:
        """Count a rows event of a table that is not captured (its rows are not decoded)."""

    def parse_inner(self, data: bytes | memoryview) -> Event:
        """Decode a whole event embedded in this one (TRANSACTION_PAYLOAD)."""
