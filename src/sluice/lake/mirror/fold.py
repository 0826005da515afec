"""The fold of one table's changes in a micro-batch: the last state of each primary key.

``fold`` walks the batch's row changes in binlog order and keeps one ``Entry`` per key: deleted,
replaced by a whole image, patched by a partial image (a minimal row image carries the changed
columns only), or moved (an update that changed the key: the old key is deleted and the new one
takes the mirror row of the old, patched). ``from_mirror`` then reads from the mirror what the
images do not carry: the rows moved keys patch, and the documents partial JSON updates change.

Partial JSON (MySQL's ``binlog_row_value_options=PARTIAL_JSON``): an update carries a JSON column's
changes (``cdc.json_diffs``) instead of its new document. They are replayed on the document the
batch already holds for the key, else on the update's before image, else, after the fold, on the
mirror's document, so the mirror holds what a full image would have given it.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable

from sluice.cdc.json_diffs import apply_json_diffs
from sluice.cdc.records import VERSIONED_OPS, RowChange
from sluice.errors import DataLossError, SchemaError
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.mirror.merge_source import quote_name as _quote
from sluice.lake.types.images import json_document

__all__ = ["DELETE", "MOVE", "PATCH", "REPLACE", "Entry", "fold", "from_mirror"]

# Fold states of one primary key within a batch.
DELETE, REPLACE, PATCH, MOVE = 0, 1, 2, 3


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


class Entry:
    """The state of one primary key after the batch's changes so far."""

    __slots__ = ("base", "base_row", "image", "mode")

    def __init__(self, mode: int, image: dict[str, Any], base: tuple[Any, ...] | None = None) -> None:
        self.mode = mode
        self.image = image  # decoded values by column name (not converted)
        self.base = base  # MOVE: the key whose mirror row the image patches
        self.base_row: dict[str, Any] | None = None  # MOVE: that row, converted values


def fold(tb: TableBatch, name: str) -> dict[tuple[Any, ...], Entry]:
    """The last state per primary key after the batch's changes, in first-seen key order."""
    layout = frozenset(c.name for c in tb.columns)
    by_name = {c.name: c for c in tb.columns}
    pk = tuple((k, by_name[k].convert) for k in tb.primary_key)
    state: dict[tuple[Any, ...], Entry] = {}

    def slow_key(image: dict[str, Any], fallback: dict[str, Any] | None, change: RowChange) -> tuple[Any, ...]:
        key = []
        for k, convert in pk:
            if k in image:
                v = image[k]
            elif fallback is not None and k in fallback:
                v = fallback[k]
            else:
                raise SchemaError(
                    f"{name}: the row change at {change.file}:{change.pos} row {change.row} carries no value "
                    f"for primary key column {k!r}; the primary key sluice holds for the table is not the "
                    "one the server logs — re-read the table's schema"
                )
            v = _hashable(convert(v))
            if v is None:
                raise SchemaError(
                    f"{name}: primary key column {k!r} of the row change at {change.file}:{change.pos} row "
                    f"{change.row} has no mirror value ({image.get(k, fallback and fallback.get(k))!r}, e.g. a "
                    "zero date); such a row cannot be mirrored — exclude the table from the mirror"
                )
            key.append(v)
        return tuple(key)

    key_of = slow_key
    if len(pk) == 1:  # the common case, once per change: no loop, no error bookkeeping
        ((k1, convert1),) = pk

        def key_of(image: dict[str, Any], fallback: dict[str, Any] | None, change: RowChange) -> tuple[Any, ...]:
            v = image.get(k1)
            if v is not None:
                v = convert1(v)
                if v is not None and v.__class__ is not list:
                    return (v,)
            return slow_key(image, fallback, change)

    for change in tb.changes:
        op = change.op
        if op == "insert":
            after = change.after or {}
            state[key_of(after, None, change)] = Entry(REPLACE, after)
        elif op == "delete":
            before = change.before or {}
            state[key_of(before, None, change)] = Entry(DELETE, {})
        elif op == "update":
            before = change.before or {}
            after = change.after or {}
            old = key_of(before, None, change)
            new = key_of(after, before, change)
            prev = state.get(old)
            if change.json_diffs:
                after = _with_json_diffs(change, before, after, prev, old, name)
            if prev is None:
                mode, image, base = PATCH, {**before, **after}, old
            elif prev.mode == DELETE:  # not a consistent stream; trust the images
                mode, image, base = REPLACE, {**before, **after}, None
            else:
                mode, image, base = prev.mode, {**prev.image, **before, **after}, prev.base
                if mode == PATCH:
                    base = old
            if new == old:
                entry = Entry(mode, image, base if mode == MOVE else None)
            else:
                state[old] = Entry(DELETE, {})
                state.pop(new, None)
                whole = mode == REPLACE or image.keys() >= layout
                entry = Entry(REPLACE, image) if whole else Entry(MOVE, image, base)
            state[new] = entry
        elif op not in VERSIONED_OPS:  # a system-versioned table's history rows leave the mirror as it is
            raise SchemaError(f"{name}: unknown row change op {op!r} at {change.file}:{change.pos}")
    return state


def needs_mirror(entries: dict[tuple[Any, ...], Entry]) -> bool:
    """Whether ``from_mirror`` reads the mirror for these entries (moved keys, partial JSON updates)."""
    return any(e.mode == MOVE or any(type(v) is _PendingJson for v in e.image.values()) for e in entries.values())


def from_mirror(tb: TableBatch, dt: DeltaTable | None, entries: dict[tuple[Any, ...], Entry]) -> None:
    """Read from the mirror what the fold's images lack: the rows moved keys patch (``base_row``)
    and the documents of partial JSON updates (replayed here)."""
    moves = [e for e in entries.values() if e.mode == MOVE]
    pending = [(e, column, value) for e in entries.values() for column, value in e.image.items()
               if type(value) is _PendingJson]
    if not moves and not pending:
        return
    bases = {e.base for e in moves if e.base is not None} | {p.key for _, _, p in pending}
    found = _mirror_rows(tb, dt, bases)
    for e in moves:
        row = found.get(e.base) if e.base is not None else None
        if row is None:
            e.mode = PATCH  # nothing to carry over: insert what the images hold
        else:
            e.base_row = row
    name = f"{tb.db}.{tb.table}"
    for e, column, p in pending:
        row = found.get(p.key)
        text = None if row is None else row.get(column)
        if text is None:
            raise DataLossError(
                f"{name}: the update at {p.at} changes part of the JSON document in {column} of a row whose "
                f"mirror {'holds no document there' if row is not None else 'does not hold the row'}, so the "
                "document cannot be rebuilt; the mirror differs from the table: re-snapshot it (sluice snapshot)"
            )
        e.image[column] = _replayed(json_document(text), p.diffs, name, column, p.at)


def _mirror_rows(tb: TableBatch, dt: DeltaTable | None, keys: set[tuple[Any, ...]]) -> dict[tuple[Any, ...], Any]:
    """The mirror's rows of ``keys`` (converted values) by key; none without a mirror."""
    if dt is None or not keys:
        return {}
    existing = {f["name"] for f in json.loads(dt.schema().to_json())["fields"]}
    names = [c.name for c in tb.columns if c.name in existing]
    pk = tb.primary_key
    types = {c.name: c.arrow_type for c in tb.columns}
    # delta-rs 1.x scans with a predicate on a DECIMAL column return wrong values for that column
    # (decimal(20,0) read as if it were int64): narrow by the other key columns only, then match the
    # whole key here.
    narrow = [(j, k) for j, k in enumerate(pk) if not pa.types.is_decimal(types[k])]
    predicate: str | None = None
    if len(narrow) == 1:
        j, k = narrow[0]
        predicate = f"{_quote(k)} IN ({', '.join(sorted({_sql_literal(b[j]) for b in keys}))})"
    elif narrow:
        predicate = " OR ".join(sorted({
            "(" + " AND ".join(f"{_quote(k)} = {_sql_literal(b[j])}" for j, k in narrow) + ")" for b in keys
        }))
    rows = pa.table(dt.scan(columns=names, predicate=predicate)).to_pylist()
    return {tuple(_hashable(row[k]) for k in pk): row for row in rows}


class _PendingJson:
    """A JSON column's diffs waiting for the mirror's document of ``key`` (the row before the batch)."""

    __slots__ = ("at", "diffs", "key")

    def __init__(self, key: tuple[Any, ...], diffs: list[Any], at: str) -> None:
        self.key = key
        self.diffs = diffs
        self.at = at


def _with_json_diffs(change: RowChange, before: dict[str, Any], after: dict[str, Any], prev: Entry | None,
                     key: tuple[Any, ...], name: str) -> dict[str, Any]:
    """``after`` with each partially updated JSON column's new document, or its pending diffs."""
    after = dict(after)
    at = f"{change.file}:{change.pos} row {change.row}"
    for column, diffs in (change.json_diffs or {}).items():
        held = prev.image.get(column, _NONE) if prev is not None and prev.mode != DELETE else _NONE
        if type(held) is _PendingJson:
            after[column] = _PendingJson(held.key, [*held.diffs, *diffs], held.at)
        elif held is not _NONE:
            after[column] = _replayed(held, diffs, name, column, at)
        elif before.get(column) is not None:
            after[column] = _replayed(before[column], diffs, name, column, at)
        else:
            base = prev.base if prev is not None and prev.mode == MOVE and prev.base is not None else key
            after[column] = _PendingJson(base, list(diffs), at)
    return after


def _replayed(document: Any, diffs: Any, name: str, column: str, at: str) -> Any:
    try:
        return apply_json_diffs(document, diffs)
    except ValueError as exc:
        raise DataLossError(
            f"{name}: the partial JSON update of {column} at {at} does not fit the document sluice holds "
            f"({exc}); the mirror differs from the table: re-snapshot it (sluice snapshot)"
        ) from None


_NONE = object()


def _sql_literal(v: Any) -> str:
    """A primary key value (not DECIMAL) as a DataFusion SQL literal."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, bytes):
        return "X'" + v.hex() + "'"
    if isinstance(v, datetime):
        return f"TIMESTAMP '{v.isoformat()}'"
    if isinstance(v, date):
        return f"DATE '{v.isoformat()}'"
    raise SchemaError(f"a primary key value of type {type(v).__name__} cannot be looked up in the mirror")
