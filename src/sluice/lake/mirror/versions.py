"""The versions of one table's rows in a micro-batch, for its history (SCD type 2): what the batch
adds to ``LAKE/<db>/<table>__history`` and which versions it closes.

A version is a row as one change left it, with ``__start_at`` / ``__end_at`` (the commit times of
the change that made it and of the one that replaced it, UTC) and ``__start_seq`` / ``__end_seq``
(the same changes' ``seq`` in the change log, ``sluice.lake.changelog.sequence``: total and
monotonic, so it orders versions committed in the same second, across binlog rotation and
failover). The current version of a key has ``__end_at`` and ``__end_seq`` NULL.

``versions`` walks the batch's changes of one table in change-log order and keeps every one (no
fold): an insert opens a version; an update closes the key's version and opens the next; an update
that changes the primary key closes the old key's version and opens the new key's; a delete closes
the version. Each key's first change in the batch also closes the version the history held open
before the batch (a ``close`` row of the MERGE source: key, ``__end_at``, ``__end_seq``); a
version opened and closed inside the batch is written closed. ``resync`` compares the history's
current versions with the mirror's rows and returns the changes that make them equal (a DDL that
rewrote the mirror, a table read again, the snapshot's rows of a history that starts now).

Values are the mirror's (``MirrorColumn.convert``'s, or read from a Delta table). No I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa

from sluice.cdc.records import VERSIONED_OPS, RowChange
from sluice.errors import SchemaError
from sluice.lake.types.mirror_columns import MirrorColumn, column_array

__all__ = [
    "CLOSE", "END_AT", "END_SEQ", "START_AT", "START_SEQ", "VERSION_COLUMNS", "Change", "converted", "history_schema",
    "resync", "versions",
]

START_AT: Final = "__start_at"  # commit time of the change that made the version (UTC)
END_AT: Final = "__end_at"  # commit time of the change that replaced it; NULL: the current version
START_SEQ: Final = "__start_seq"  # the change log's seq of that change (NULL: a row the history started with)
END_SEQ: Final = "__end_seq"
CLOSE: Final = "_sluice_close"  # the MERGE source's column: close the key's current version (else a new version)
_TS: Final = pa.timestamp("us", tz="UTC")
#: The history's own columns, after the table's.
VERSION_COLUMNS: Final = (pa.field(START_AT, _TS), pa.field(END_AT, _TS), pa.field(START_SEQ, pa.int64()),
                          pa.field(END_SEQ, pa.int64()))


@dataclass(frozen=True, slots=True)
class Change:
    """One row change in the mirror's values: ``before`` / ``after`` by column name (None for an
    insert's before and a delete's after), its commit time ``at_us`` (µs) and change-log ``seq``
    (None: a change no change-log row records, ``resync``'s), and where it is, for errors."""

    op: str  # insert | update | delete
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    at_us: int
    seq: int | None
    where: str = ""


def converted(columns: Sequence[MirrorColumn], change: RowChange, at_us: int, seq: int | None) -> Change | None:
    """``change`` (decoded images) in the mirror's values; None for a system-versioned table's
    history ops, which leave the current rows as they are."""
    if change.op in VERSIONED_OPS:
        return None
    where = f"{change.db}.{change.table} at {change.file}:{change.pos} row {change.row}"
    if change.json_diffs:
        raise SchemaError(f"{where}: a partial JSON update (binlog_row_value_options=PARTIAL_JSON) cannot make a "
                          "history version without the document it changes; turn PARTIAL_JSON off on the source "
                          "or leave the table out of --history")
    return Change(change.op, _image(columns, change.before), _image(columns, change.after), at_us, seq, where)


def _image(columns: Sequence[MirrorColumn], image: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if image is None:
        return None
    out = {}
    for c in columns:
        if c.name in image:
            v = image[c.name]
            out[c.name] = None if v is None else c.convert(v)
    return out


def history_schema(columns: Sequence[MirrorColumn]) -> pa.Schema:
    """The history table's schema: the table's columns, then ``VERSION_COLUMNS``."""
    return pa.schema([pa.field(c.name, c.arrow_type) for c in columns] + list(VERSION_COLUMNS))


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def versions(columns: Sequence[MirrorColumn], primary_key: Sequence[str], changes: Iterable[Change]) -> pa.Table:
    """The MERGE source of a batch's changes of one table, in change-log order (module docstring):
    the ``close`` rows first (one per key the batch touches), then every version it makes, in order.
    ``SchemaError`` for a change whose image lacks a column no earlier version of the batch gives."""
    names = [c.name for c in columns]
    for name in names:
        if name in (START_AT, END_AT, START_SEQ, END_SEQ) or name == CLOSE:
            raise SchemaError(f"column {name!r} has the name of a column the history keeps for itself; "
                              "leave the table out of --history")
    layout = set(names)
    touched: set[tuple[Any, ...]] = set()
    closes: list[tuple[tuple[Any, ...], int, int | None]] = []
    rows: list[dict[str, Any]] = []
    current: dict[tuple[Any, ...], int] = {}  # key -> index in rows of its version opened in the batch

    def key_of(image: Mapping[str, Any] | None, c: Change) -> tuple[Any, ...]:
        key = tuple(_hashable((image or {}).get(k)) for k in primary_key)
        if any(v is None for v in key):
            raise SchemaError(f"{c.where}: the row change carries no value for the primary key "
                              f"({', '.join(primary_key)}); the history cannot place it")
        return key

    def close(key: tuple[Any, ...], c: Change) -> dict[str, Any] | None:
        if key not in touched:
            touched.add(key)
            closes.append((key, c.at_us, c.seq))
        i = current.pop(key, None)
        if i is None:
            return None
        rows[i][END_AT], rows[i][END_SEQ] = c.at_us, c.seq
        return rows[i]

    def open_(key: tuple[Any, ...], image: Mapping[str, Any], c: Change) -> None:
        missing = layout - image.keys()
        if missing:
            raise SchemaError(
                f"{c.where}: the row image lacks column(s) {', '.join(sorted(missing))} (binlog_row_image=MINIMAL "
                "or NOBLOB?) and no earlier version in the batch holds them; a history needs full row images: "
                "set binlog_row_image=FULL on the source or leave the table out of --history")
        rows.append({**{n: image[n] for n in names}, START_AT: c.at_us, START_SEQ: c.seq, END_AT: None,
                     END_SEQ: None})
        current[key] = len(rows) - 1

    for c in changes:
        if c.op == "insert":
            key = key_of(c.after, c)
            close(key, c)
            open_(key, c.after or {}, c)
        elif c.op == "delete":
            close(key_of(c.before, c), c)
        elif c.op == "update":
            old = key_of(c.before, c)
            new = key_of({**(c.before or {}), **(c.after or {})}, c)
            base = close(old, c)
            if new != old:
                close(new, c)
            image = {**(base or {}), **(c.before or {}), **(c.after or {})}
            open_(new, {n: image[n] for n in names if n in image}, c)
        else:
            raise SchemaError(f"{c.where}: unknown row change op {c.op!r}")
    return _table(columns, primary_key, closes, rows)


def _table(columns: Sequence[MirrorColumn], primary_key: Sequence[str],
           closes: list[tuple[tuple[Any, ...], int, int | None]], rows: list[dict[str, Any]]) -> pa.Table:
    pk_index = {k: j for j, k in enumerate(primary_key)}
    arrays = []
    for col in columns:
        j = pk_index.get(col.name)
        head = [key[j] for key, _, _ in closes] if j is not None else [None] * len(closes)
        arrays.append(column_array(col, [*head, *(r[col.name] for r in rows)]))
    n = len(closes)
    arrays.append(pa.array([None] * n + [r[START_AT] for r in rows], pa.int64()).cast(_TS))
    arrays.append(pa.array([at for _, at, _ in closes] + [r[END_AT] for r in rows], pa.int64()).cast(_TS))
    arrays.append(pa.array([None] * n + [r[START_SEQ] for r in rows], pa.int64()))
    arrays.append(pa.array([seq for _, _, seq in closes] + [r[END_SEQ] for r in rows], pa.int64()))
    arrays.append(pa.array([True] * n + [False] * len(rows), pa.bool_()))
    schema = history_schema(columns).append(pa.field(CLOSE, pa.bool_()))
    return pa.Table.from_arrays(arrays, schema=schema)


def resync(columns: Sequence[MirrorColumn], primary_key: Sequence[str], mirror: pa.Table, current: pa.Table | None,
           at_us: int, seq: int | None, where: str) -> list[Change]:
    """The changes that turn the history's current versions ``current`` (None: no history yet) into
    the mirror's rows ``mirror``, at ``(at_us, seq)``: an insert for a key only the mirror has, a
    delete for one only the history has, an update for a key whose values differ (a column the
    mirror lacks counts as NULL there). Keys in the mirror's order, then the history's."""
    names = [c.name for c in columns]
    mine = {_key(r, primary_key): r for r in _rows(mirror, names)}
    theirs: dict[tuple[Any, ...], dict[str, Any]] = {}
    if current is not None:
        theirs = {_key(r, primary_key): r for r in current.to_pylist()}
    out: list[Change] = []
    for key, row in mine.items():
        old = theirs.get(key)
        if old is None:
            out.append(Change("insert", None, row, at_us, seq, where))
        elif any(old.get(n) != row.get(n) for n in names) or any(
                old[n] is not None for n in old if n not in row and not n.startswith("__")):
            out.append(Change("update", {k: old.get(k) for k in names}, row, at_us, seq, where))
    out += [Change("delete", {k: old.get(k) for k in names}, None, at_us, seq, where)
            for key, old in theirs.items() if key not in mine]
    return out


def _rows(table: pa.Table, names: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of ``table`` with the columns ``names`` (one it lacks is NULL)."""
    have = [n for n in names if n in table.column_names]
    rows = table.select(have).to_pylist()
    if len(have) < len(names):
        for r in rows:
            for n in names:
                r.setdefault(n, None)
    return rows


def _key(row: Mapping[str, Any], primary_key: Sequence[str]) -> tuple[Any, ...]:
    return tuple(_hashable(row.get(k)) for k in primary_key)
