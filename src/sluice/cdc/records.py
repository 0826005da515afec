"""Row changes: the change record of DESIGN.md built from decoded rows events.

``RowChangeBuilder`` follows a stream of decoded events (from a file or a server), remembers the
current GTID and turns every row of a WRITE/UPDATE/DELETE rows event into a ``RowChange`` with
``(file, pos, row)``. Events inside a TRANSACTION_PAYLOAD have no offset of their own: they get
the payload event's offset, and ``row`` counts on across the inner rows events.

Column names come from the TABLE_MAP's optional metadata (``binlog_row_metadata=FULL``) or from
the names a schema source supplies; when neither knows them, ``SchemaError`` says so rather than
inventing names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sluice.binlog.events import GtidEvent, MariadbGtidEvent, RowsEvent, TransactionPayloadEvent
from sluice.binlog.rowplan import ABSENT
from sluice.binlog.values.json_binary import JsonDiffs
from sluice.errors import SchemaError

# Supplies the column names of (schema, table) when the binlog does not carry them.
NameSource = Callable[[Any], tuple[str, ...] | None]
# Resolves a TABLE_MAP at (file, pos) to (column names, primary key) — the schema tracker's job.
Resolver = Callable[[Any, str, int], tuple[tuple[str, ...], tuple[str, ...]]]

_OPS = {"write": "insert", "update": "update", "delete": "delete"}


@dataclass(frozen=True, slots=True)
class RowChange:
    """One changed row, in the shape of the JSON-lines contract."""

    op: str
    db: str
    table: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    pk: tuple[str, ...]
    file: str
    pos: int
    row: int
    gtid: str | None
    ts: int
    json_diffs: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "op": self.op,
            "db": self.db,
            "table": self.table,
            "before": self.before,
            "after": self.after,
            "pk": list(self.pk),
            "file": self.file,
            "pos": self.pos,
            "row": self.row,
            "gtid": self.gtid,
            "ts": self.ts,
        }
        if self.json_diffs:
            out["json_diffs"] = self.json_diffs
        return out


def _image(names: tuple[str, ...], values: tuple[Any, ...]) -> dict[str, Any]:
    return {name: value for name, value in zip(names, values, strict=True) if value is not ABSENT}


class RowChangeBuilder:
    """Turn decoded events into row changes; keeps the GTID of the current transaction."""

    def __init__(
        self,
        names: NameSource | None = None,
        *,
        resolve: Resolver | None = None,
        ops: frozenset[str] | None = None,
    ) -> None:
        self._names = names
        self._resolve = resolve
        self._kinds = None if ops is None else frozenset(k for k, op in _OPS.items() if op in ops)
        self.kinds = self._kinds  # rows-event kinds kept (write/update/delete); None = all
        self.gtid: str | None = None
        self._names_cache: dict[bytes, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def feed(self, event: Any, file: str, pos: int) -> Iterator[RowChange]:
        """Row changes of one decoded event (none for non-row events)."""
        if not isinstance(event, RowsEvent):
            if isinstance(event, (GtidEvent, MariadbGtidEvent)):
                self.gtid = event.gtid
            elif isinstance(event, TransactionPayloadEvent):
                # Inner events share the payload's offset; ``row`` counts on across them.
                row = 0
                for sub in event.events:
                    for change in self.feed(sub, file, pos):
                        yield _renumber(change, row)
                        row += 1
            return
        kind, rows = event.kind, event.rows
        if self._kinds is not None and kind not in self._kinds:
            return
        table = event.table
        names, pk = self._columns(table, file, pos) if self._resolve is None else self._resolve(table, file, pos)
        op = _OPS[kind]
        db, name, gtid, ts = table.schema, table.table, self.gtid, event.header.timestamp
        if kind == "write":
            for i, values in enumerate(rows):
                yield RowChange(op, db, name, None, _image(names, values), pk, file, pos, i, gtid, ts)
        elif kind == "delete":
            for i, values in enumerate(rows):
                yield RowChange(op, db, name, _image(names, values), None, pk, file, pos, i, gtid, ts)
        else:
            for i, (before, after) in enumerate(rows):
                after_image = _image(names, after)
                diffs = _split_diffs(after_image)
                yield RowChange(
                    op, db, name, _image(names, before), after_image, pk, file, pos, i, gtid, ts, diffs
                )

    def changes(self, events: Iterable[tuple[str, int, Any]]) -> Iterator[RowChange]:
        for file, pos, event in events:
            yield from self.feed(event, file, pos)

    def _columns(self, table: Any, file: str, pos: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        key = table.raw
        cached = self._names_cache.get(key)
        if cached is not None:
            return cached
        names: tuple[str, ...] | None = None
        if all(c.name is not None for c in table.columns) and table.columns:
            names = tuple(c.name for c in table.columns)
        elif self._names is not None:
            names = self._names(table)
        if names is None or len(names) != table.column_count:
            raise SchemaError(
                f"the binlog does not name the columns of {table.schema}.{table.table} (at {file}:{pos}): "
                "the server writes column names only with binlog_row_metadata=FULL. Set "
                "binlog_row_metadata=FULL on the server, or give sluice the table's CREATE TABLE "
                "(its DDL in the same binlog files, or a live server to read the schema from)"
            )
        pk = tuple(names[i] for i, _prefix in (table.primary_key or ()))
        self._names_cache[key] = (names, pk)
        return names, pk


def _renumber(change: RowChange, row: int) -> RowChange:
    if change.row == row:
        return change
    from dataclasses import replace

    return replace(change, row=row)


def _split_diffs(after: dict[str, Any]) -> dict[str, Any] | None:
    """Move partial-JSON diffs out of the after image into ``json_diffs``."""
    diffs = None
    for name, value in after.items():
        if isinstance(value, JsonDiffs):
            if diffs is None:
                diffs = {}
            diffs[name] = value
    if diffs:
        for name in diffs:
            del after[name]
    return diffs
