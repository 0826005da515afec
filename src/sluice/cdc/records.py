"""Row changes: the change record of DESIGN.md built from decoded rows events.

``RowChangeBuilder`` follows a stream of decoded events (from a file or a server), remembers the
current GTID and turns every row of a WRITE/UPDATE/DELETE rows event into a ``RowChange`` with
``(file, pos, row)``. Events inside a TRANSACTION_PAYLOAD have no offset of their own: they get
the payload event's offset, and ``row`` counts on across the inner rows events.

A MariaDB system-versioned table's rows are told apart by their row end (``versioned_op``): the
server writes an old version of a row as a WRITE of a history row, and a DELETE as an UPDATE that
ends the row's period, so the op of such a row is decided row by row (``VERSIONED_OPS``).

Column names come from the TABLE_MAP's optional metadata (``binlog_row_metadata=FULL``) or from
the names a schema source supplies; when neither knows them, ``SchemaError`` says so rather than
inventing names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sluice.binlog.constants import ColumnType
from sluice.binlog.events import Event, GtidEvent, MariadbGtidEvent, RowsEvent, TableMapEvent, TransactionPayloadEvent
from sluice.binlog.header import frozen_builder
from sluice.binlog.rowplan import ABSENT
from sluice.binlog.values.json_binary import JsonDiffs
from sluice.errors import SchemaError

# Supplies the column names of (schema, table) when the binlog does not carry them.
NameSource = Callable[[TableMapEvent], tuple[str, ...] | None]
# Resolves a TABLE_MAP at (file, pos) to (column names, primary key) — the schema tracker's job.
Resolver = Callable[[TableMapEvent, str, int], tuple[tuple[str, ...], tuple[str, ...]]]

#: The change record's ``op`` of each rows-event kind.
OP_OF_KIND = {"write": "insert", "update": "update", "delete": "delete"}
#: The ops of a system-versioned table's rows (``versioned_op``), beside ``OP_OF_KIND``'s.
VERSIONED_OPS = ("history", "delete_history")
#: Every op a row change may have.
ROW_OPS = ("insert", "update", "delete", *VERSIONED_OPS)
#: The rows-event kinds that give each op in a system-versioned table.
_VERSIONED_KINDS = {"insert": ("write",), "history": ("write",), "update": ("update",),
                    "delete": ("update", "delete"), "delete_history": ("delete",)}
# A current row's row end: the largest value of its type. TIMESTAMP(6): the end of the server's
# TIMESTAMP range, 2038-01-19 03:14:07.999999 UTC (signed 32-bit seconds), 2106-02-07
# 06:28:15.999999 UTC from MariaDB 11.5 on (unsigned); BIGINT UNSIGNED (transaction-precise
# history, a transaction id): 2**64 - 1.
_CURRENT_END: dict[int, frozenset[Any]] = {
    ColumnType.TIMESTAMP2: frozenset({"2038-01-19T03:14:07.999999Z", "2106-02-07T06:28:15.999999Z"}),
    ColumnType.LONGLONG: frozenset({(1 << 64) - 1}),
}


def current_ends(table: TableMapEvent, row_end: int) -> frozenset[Any]:
    """The values of the row end column (at ``row_end``) that say a row is current, by its type;
    ``SchemaError`` for a type no period column has (the tracked schema is not the table's)."""
    ends = _CURRENT_END.get(table.column_types[row_end])
    if ends is None:
        raise SchemaError(
            f"the row end column (column {row_end + 1}) of the system-versioned table {table.schema}.{table.table} "
            f"has binlog type {table.column_types[row_end]}, not TIMESTAMP(6) or BIGINT UNSIGNED: the tracked "
            "schema does not match the binlog; re-read the table's schema"
        )
    return ends


def versioned_op(kind: str, before: tuple[Any, ...] | None, after: tuple[Any, ...] | None, row_end: int,
                 current: frozenset[Any]) -> str:
    """The op of one row of a system-versioned table: a WRITE of a current row is an ``insert``, of
    a history row (an update's old version) ``history``; an UPDATE whose new row is current an
    ``update``, one that ends the row (a DELETE) ``delete``; a DELETE of a current row ``delete``,
    of a history row (``DELETE HISTORY``) ``delete_history``."""
    if kind == "write":
        return "insert" if after is not None and after[row_end] in current else "history"
    if kind == "update":
        return "update" if after is not None and after[row_end] in current else "delete"
    return "delete" if before is not None and before[row_end] in current else "delete_history"


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
        """The change as the JSON-lines record's fields (``sluice dump`` / ``tail`` print it)."""
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


_build_change = frozen_builder(RowChange)
_ABSENT = ABSENT


def _present(names: tuple[str, ...], present: int) -> tuple[str, ...] | None:
    """The names of the columns in an image's bitmap; None when every column is in it."""
    n = len(names)
    if present & ((1 << n) - 1) == (1 << n) - 1:
        return None
    return tuple(names[i] for i in range(n) if present >> i & 1)


def _image(names: tuple[str, ...], values: tuple[Any, ...]) -> dict[str, Any]:
    return {name: value for name, value in zip(names, values, strict=True) if value is not _ABSENT}


class RowChangeBuilder:
    """Turn decoded events into row changes; keeps the GTID of the current transaction."""

    def __init__(
        self,
        names: NameSource | None = None,
        *,
        resolve: Resolver | None = None,
        ops: frozenset[str] | None = None,
        row_end: Callable[[TableMapEvent, str, int], int | None] | None = None,
        columns: Any = None,
    ) -> None:
        self._names = names
        self.columns = columns  # ColumnRules (sluice.cdc.column_rules): columns kept out or hashed
        self._resolve = resolve
        self._row_end = row_end
        self._ops = ops
        self._kinds = None if ops is None else frozenset(k for k, op in OP_OF_KIND.items() if op in ops)
        self.kinds = self._kinds  # rows-event kinds kept (write/update/delete) of other tables; None = all
        self.versioned_kinds = None if ops is None else frozenset(
            k for op in ops for k in _VERSIONED_KINDS.get(op, ()))
        self.gtid: str | None = None
        self._names_cache: dict[bytes, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def feed(self, event: Event, file: str, pos: int) -> Iterator[RowChange]:
        """Row changes of one decoded event (none for non-row events), their excluded columns left
        out and hashed ones hashed (``columns``)."""
        changes = self._feed(event, file, pos)
        rules = self.columns
        return changes if rules is None else (rules.mask(c) for c in changes)

    def record_path(self, table: TableMapEvent, file: str, pos: int) -> bool:
        """Whether a table's rows must be made into records before anything is written of them: a
        system-versioned table's (ops decided row by row) and a table with columns kept out or hashed."""
        if self.versioned(table, file, pos):
            return True
        rules = self.columns
        return rules is not None and rules.touches(table.schema, table.table, self.columns_of(table, file, pos)[0])

    def _feed(self, event: Event, file: str, pos: int) -> Iterator[RowChange]:
        if not isinstance(event, RowsEvent):
            if isinstance(event, (GtidEvent, MariadbGtidEvent)):
                self.gtid = event.gtid
            elif isinstance(event, TransactionPayloadEvent):
                # Inner events share the payload's offset; ``row`` counts on across them.
                row = 0
                for sub in event.events:
                    for change in self._feed(sub, file, pos):
                        yield _renumber(change, row)
                        row += 1
            return
        kind, rows = event.kind, event.rows
        table = event.table
        end = None if self._row_end is None else self._row_end(table, file, pos)
        if end is not None:
            yield from self._versioned(event, file, pos, end)
            return
        if self._kinds is not None and kind not in self._kinds:
            return
        names, pk = self.columns_of(table, file, pos)
        op = OP_OF_KIND[kind]
        db, name, gtid, ts = table.schema, table.table, self.gtid, event.header.timestamp
        make = _build_change
        if kind != "update":
            # Only columns in the image's bitmap are in the dict, and never an ABSENT value: with
            # every column present (full row images, the default) the dict is names zipped with
            # values, checked for ABSENT (a C-level scan, cheaper than testing value by value).
            cols = _present(names, event.columns_present)
            for i, values in enumerate(rows):
                if cols is None and _ABSENT not in values:
                    image = dict(zip(names, values, strict=True))
                else:
                    image = _image(names, values)
                if kind == "write":
                    yield make(op, db, name, None, image, pk, file, pos, i, gtid, ts, None)
                else:
                    yield make(op, db, name, image, None, pk, file, pos, i, gtid, ts, None)
            return
        full_before = _present(names, event.columns_present) is None
        present_after = event.columns_present_after
        full_after = _present(names, event.columns_present if present_after is None else present_after) is None
        for i, (before, after) in enumerate(rows):
            if full_before and _ABSENT not in before:
                before_image = dict(zip(names, before, strict=True))
            else:
                before_image = _image(names, before)
            if full_after and _ABSENT not in after:
                after_image = dict(zip(names, after, strict=True))
            else:
                after_image = _image(names, after)
            diffs = _split_diffs(after_image)
            yield make(op, db, name, before_image, after_image, pk, file, pos, i, gtid, ts, diffs)

    def versioned(self, table: TableMapEvent, file: str, pos: int) -> bool:
        """Whether the table of a TABLE_MAP is system-versioned: its rows' ops are decided row by row."""
        return self._row_end is not None and self._row_end(table, file, pos) is not None

    def _versioned(self, event: RowsEvent, file: str, pos: int, end: int) -> Iterator[RowChange]:
        """The row changes of a system-versioned table's rows event, each with its ``versioned_op``."""
        kind, table = event.kind, event.table
        if self.versioned_kinds is not None and kind not in self.versioned_kinds:
            return
        names, pk = self.columns_of(table, file, pos)
        current = current_ends(table, end)
        db, name, gtid, ts, ops = table.schema, table.table, self.gtid, event.header.timestamp, self._ops
        for i, row in enumerate(event.rows):
            before, after = row if kind == "update" else (None, row) if kind == "write" else (row, None)
            op = versioned_op(kind, before, after, end, current)
            if ops is not None and op not in ops:
                continue
            yield _build_change(op, db, name, None if before is None else _image(names, before),
                                None if after is None else _image(names, after), pk, file, pos, i, gtid, ts, None)

    def columns_of(self, table: TableMapEvent, file: str, pos: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The column names and primary key of the table of a TABLE_MAP, for rows at ``file:pos``."""
        names, pk = self._columns(table, file, pos) if self._resolve is None else self._resolve(table, file, pos)
        if len(names) != table.column_count:
            raise SchemaError(
                f"{table.schema}.{table.table} has {table.column_count} columns in its TABLE_MAP at {file}:{pos} "
                f"but {len(names)} column names are known ({', '.join(names)}); the schema history does not "
                "match the binlog: start from a binlog position whose schema is known"
            )
        return names, pk

    def changes(self, events: Iterable[tuple[str, int, Event]]) -> Iterator[RowChange]:
        """Row changes of ``(file, pos, event)`` triples, in order."""
        for file, pos, event in events:
            yield from self.feed(event, file, pos)

    def _columns(self, table: TableMapEvent, file: str, pos: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        key = table.raw
        cached = self._names_cache.get(key)
        if cached is not None:
            return cached
        names: tuple[str, ...] | None = None
        given = tuple(c.name for c in table.columns if c.name is not None)
        if given and len(given) == len(table.columns):
            names = given
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
