"""The capture's view of its tables: the column facts each TABLE_MAP's rows are decoded with, and
the DDL met on the way, as ``ChangeCapture`` asks for them.

``CapturedTables`` stands between a capture and its ``SchemaTracker``. A TABLE_MAP's column facts
(``resolve``) are cached per map bytes and tracker version, since the same map repeats in every
transaction; the row plan the parser compiles (``plan``), the names and key the row-change builder
writes (``names``) and a system-versioned table's row end (``row_end``) all come from them.
``layouts`` keeps, per table, the TABLE_MAP and facts its rows were last decoded with: those of a
transaction's tables as it comes out (DDL is a transaction of its own). A QUERY event's DDL is
replayed on the tracker the moment it is decoded (``on_query``), so the rows after it are decoded
with the new layout; its outcome waits for the transaction's records (``ddl_at``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sluice.binlog.events import TableMapEvent
from sluice.binlog.rowplan import plan_for
from sluice.cdc.schema import ResolvedTable, SchemaTracker, SessionCharsets, is_ddl

if TYPE_CHECKING:
    from sluice.cdc.schema.ddl import DdlOutcome
    from sluice.cdc.transactions import TransactionAssembler

__all__ = ["CapturedTables"]

_MAX_CACHED = 4096


class CapturedTables:
    """The column facts of a capture's TABLE_MAPs and the DDL it met (module docstring)."""

    def __init__(self, tracker: SchemaTracker) -> None:
        self.tracker = tracker
        self._resolved: dict[tuple[bytes, int], ResolvedTable] = {}
        #: The TABLE_MAP and column facts each table's rows were last decoded with, by (db, table).
        self.layouts: dict[tuple[str, str], tuple[TableMapEvent, ResolvedTable]] = {}
        self._ddl: dict[tuple[str, int], DdlOutcome] = {}
        self._file, self._pos = "", 0  # the event being decoded: where the tracker's corrections say they are

    def at(self, file: str, pos: int) -> None:
        """The capture decodes the event at ``(file, pos)`` next."""
        self._file, self._pos = file, pos

    def resolve(self, table_map: TableMapEvent) -> ResolvedTable:
        """The column facts for a TABLE_MAP's rows, cached per map bytes and schema-tracker version."""
        key = (table_map.raw, self.tracker.version)
        hit = self._resolved.get(key)
        if hit is None:
            if len(self._resolved) > _MAX_CACHED:
                self._resolved.clear()
            hit = self.tracker.resolve(table_map, self._file, self._pos)
            # The tracker may record a correction (FULL metadata wins), which bumps its version.
            self._resolved[(table_map.raw, self.tracker.version)] = hit
        self.layouts[(table_map.schema, table_map.table)] = (table_map, hit)
        return hit

    def plan(self, table_map: TableMapEvent) -> Any:
        """The compiled row plan of a TABLE_MAP's rows."""
        return plan_for(table_map, self.resolve(table_map).columns)

    def names(self, table_map: Any, file: str, pos: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The column names and primary key the row changes of a TABLE_MAP's rows carry."""
        resolved = self.resolve(table_map)
        return resolved.names, resolved.primary_key

    def row_end(self, table_map: Any, file: str, pos: int) -> int | None:
        """A system-versioned table's row end column, None for other tables."""
        return self.resolve(table_map).row_end

    def on_query(self, event: Any, file: str, pos: int, stream: TransactionAssembler) -> None:
        """Replay a QUERY event's DDL on the tracker now, with the GTID of its transaction and the
        boundary that transaction starts at (``stream``'s); its outcome waits for ``ddl_at``."""
        sql = event.sql
        if not is_ddl(sql):
            return
        outcome = self.tracker.on_query(sql, event.schema, file, pos, stream.open_gtid, SessionCharsets.of(event),
                                        stream.boundary)
        if outcome is not None:
            self._ddl[(file, pos)] = outcome

    def ddl_at(self, file: str, pos: int) -> DdlOutcome | None:
        """The outcome of the DDL replayed at ``(file, pos)``, handed over once."""
        return self._ddl.pop((file, pos), None)

    def forget_ddl(self) -> None:
        """A new connection: DDL outcomes of a transaction cut off by the break are dropped."""
        self._ddl.clear()
