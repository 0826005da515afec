"""Watermark reconciliation of snapshot chunks with the binlog, without I/O (the DBLog rule).

A chunk's ``SELECT`` ran at some moment between its low and high watermark. ``reconcile`` gives the
chunk's rows as of the high watermark: every key of the chunk touched by a row change between the
watermarks takes its final state from the binlog (the last change's after image, or no row after a
delete or after an update that moved the key away), every untouched row comes from the ``SELECT``.
This holds whether or not the ``SELECT`` saw a change, and it also holds for any window that starts
earlier than the ``SELECT``, so a low watermark may safely be early. It needs full after images
(``binlog_row_image=FULL``, no partial JSON) and says so otherwise. The streaming phase then
applies a change to a chunk's keys only if it lies at or after that chunk's high watermark
(``after_high``); an update that moves a key between chunks is judged per key after
``split_key_move``.

Key order in Python (``KeyOrder``) must be the server's: integers, DECIMALs, dates and binary
strings compare as themselves. Character strings compare by a documented approximation of their
collation — ``_bin`` collations by code point; case-insensitive collations by the text with
trailing spaces removed (PAD SPACE collations; MySQL's ``0900`` and MariaDB's ``nopad`` ones keep
them), accents removed (Unicode NFD without combining marks, unless the collation is ``_as_``) and
case folded (upper case for ``general_ci``, whose weights are the upper-case letters, else
``casefold``; ``_cs`` collations keep accents and case). This is exact for keys made of letters,
digits and spaces; punctuation may sort differently under UCA collations. ``reconcile`` checks
every ``SELECT`` row against the rule (inside the chunk, strictly ascending) and raises
``SchemaError`` when the server's order disagrees, so a collation the rule does not model fails
loudly instead of misplacing rows.
"""

from __future__ import annotations

import operator
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from sluice.binlog.position import Checkpoint, position_key
from sluice.cdc.records import VERSIONED_OPS, RowChange
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.table_read.chunks import Chunk, ChunkRead, key_columns
from sluice.errors import SchemaError

__all__ = ["KeyOrder", "after_high", "collation_weight", "in_window", "key_order", "reconcile", "reconcile_keys",
           "split_key_move"]

Weight = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def _text_weight(value: Any, *, pad: bool, accents: bool, fold: str) -> Any:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogateescape")
    text = str(value)
    if pad:
        text = text.rstrip(" ")
    if not accents:
        text = "".join(ch for ch in unicodedata.normalize("NFD", text) if not unicodedata.combining(ch))
        text = unicodedata.normalize("NFC", text)
    if fold == "upper":
        return text.upper()
    return text.casefold() if fold == "casefold" else text


def _bin_weight(value: Any, *, pad: bool) -> Any:
    text = value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)
    return text.rstrip(" ") if pad else text


def collation_weight(collation: str | None) -> Weight:
    """The Python sort key approximating ``collation`` (see the module docstring for the rule)."""
    name = (collation or "").lower()
    pad = "0900" not in name and "nopad" not in name
    if not name or name == "binary":
        return _identity
    if name.endswith("_bin"):
        return partial(_bin_weight, pad=pad)
    sensitive = name.endswith("_cs")
    fold = "" if sensitive else "upper" if "general" in name else "casefold"
    return partial(_text_weight, pad=pad, accents=sensitive or "_as_" in name, fold=fold)


def _weight(column: ColumnDef) -> Weight:
    if column.data_type in ("char", "varchar") and column.charset != "binary":
        return collation_weight(column.collation)
    return _identity


@dataclass(frozen=True, slots=True)
class KeyOrder:
    """How a table's snapshot key orders and identifies rows: ``columns`` are all column names (a
    full row image has them all), ``key`` the key columns, ``weights`` one sort key per key column."""

    table: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    weights: tuple[Weight, ...]

    def of(self, image: Mapping[str, Any]) -> tuple[Any, ...]:
        """The order key (also the identity: equal under the collation = the same row) of a row image."""
        try:
            return tuple(w(image[k]) for w, k in zip(self.weights, self.key, strict=True))
        except KeyError as exc:
            raise SchemaError(
                f"{self.table}: a row image lacks the key column `{exc.args[0]}`; the snapshot needs full "
                "row images (set binlog_row_image=FULL on the server)"
            ) from None

    def bound(self, values: Sequence[Any]) -> tuple[Any, ...]:
        """A chunk bound (key column values) as an order key comparable with ``of``."""
        return tuple(w(v) for w, v in zip(self.weights, values, strict=True))

    def contains(self, chunk: Chunk, key: tuple[Any, ...]) -> bool:
        """Whether the order key ``key`` lies in ``[chunk.lower, chunk.upper)``."""
        if chunk.lower is not None and key < self.bound(chunk.lower):
            return False
        return chunk.upper is None or key < self.bound(chunk.upper)


def key_order(schema: TableSchema, key: Sequence[str]) -> KeyOrder:
    """The ``KeyOrder`` of ``schema`` under snapshot key ``key``."""
    columns = key_columns(schema, key)
    return KeyOrder(f"{schema.db}.{schema.name}", schema.names, tuple(c.name for c in columns),
                    tuple(_weight(c) for c in columns))


def in_window(read: ChunkRead, change: RowChange) -> bool:
    """Whether ``change`` lies between ``read``'s low watermark (inclusive) and high watermark."""
    at = position_key(change.file, change.pos)
    return position_key(read.low.file, read.low.pos) <= at < position_key(read.high.file, read.high.pos)


def _full(order: KeyOrder, change: RowChange, image: Mapping[str, Any]) -> dict[str, Any]:
    if change.json_diffs or len(image) != len(order.columns):
        missing = sorted(set(order.columns) - set(image)) or sorted(change.json_diffs or ())
        raise SchemaError(
            f"{order.table}: the change at {change.file}:{change.pos} row {change.row} has no full after image "
            f"(columns {missing} absent); snapshot reconciliation needs binlog_row_image=FULL and "
            "binlog_row_value_options without PARTIAL_JSON"
        )
    return dict(image)


def _selected(order: KeyOrder, image: dict[str, Any]) -> dict[str, Any]:
    """An image with the columns a ``SELECT`` reads: without a system-versioned table's implicit
    period columns, which every full image of it ends with."""
    if len(image) <= len(order.columns):
        return image
    return {k: v for k, v in image.items() if k in order.columns}


def reconcile_keys(chunk: Chunk, low: Checkpoint, high: Checkpoint, values: Sequence[tuple[Any, ...]],
                   changes: Iterable[RowChange], order: KeyOrder) -> tuple[list[int] | None, list[dict[str, Any]]]:
    """``reconcile`` told only the key of each ``SELECT`` row: ``values`` holds the decoded key values
    of the rows of ``chunk`` read between ``low`` and ``high``, in the server's order.

    Returns the indexes of the ``SELECT`` rows that stay as read (None: all of them) and the after
    images the window's changes leave in the chunk, in key order; together they are the chunk's rows
    as of ``high``. Raises ``SchemaError`` like ``reconcile``.
    """
    identity = all(w is _identity for w in order.weights)
    keys: Sequence[tuple[Any, ...]] = values if identity else [order.bound(v) for v in values]
    lower = None if chunk.lower is None else order.bound(chunk.lower)
    upper = None if chunk.upper is None else order.bound(chunk.upper)
    if keys and ((lower is not None and keys[0] < lower) or (upper is not None and not keys[-1] < upper)
                 or not all(map(operator.lt, keys, keys[1:]))):
        _order_error(chunk, order, keys, values)
    final: dict[tuple[Any, ...], dict[str, Any] | None] = {}
    window = (position_key(low.file, low.pos), position_key(high.file, high.pos))
    for change in changes:
        if change.db != chunk.db or change.table != chunk.table:
            continue
        if not window[0] <= position_key(change.file, change.pos) < window[1]:
            continue
        if change.op in VERSIONED_OPS:
            continue  # a system-versioned table's history rows: no SELECT of the table reads them
        if change.before is not None:
            final[order.of(change.before)] = None
        after = None if change.op == "delete" else change.after  # a versioned delete keeps the row as history
        if after is not None:
            final[order.of(after)] = _full(order, change, _selected(order, after))
    touched = {k: state for k, state in final.items() if order.contains(chunk, k)}
    if not touched:
        return None, []
    keep = [i for i, k in enumerate(keys) if k not in touched]
    return keep, [touched[k] for k in sorted(touched) if touched[k] is not None]  # type: ignore[misc]


def _order_error(chunk: Chunk, order: KeyOrder, keys: Sequence[tuple[Any, ...]],
                 values: Sequence[tuple[Any, ...]]) -> None:
    previous: tuple[Any, ...] | None = None
    for k, v in zip(keys, values, strict=True):
        inside = order.contains(chunk, k)
        if not inside or (previous is not None and not previous < k):
            raise SchemaError(
                f"chunk {chunk.id}: the server returned key {v!r} {'out of order' if inside else 'outside the chunk'} "
                "by sluice's rule for the key's collation; this collation's order is not modelled — snapshot the "
                "table in one consistent scan"
            )
        previous = k


def reconcile(read: ChunkRead, changes: Iterable[RowChange], order: KeyOrder) -> list[dict[str, Any]]:
    """The rows of ``read.chunk`` as of ``read.high``, in key order.

    ``changes`` are row changes in binlog order; those of other tables or outside the window
    ``[read.low, read.high)`` are ignored. Raises ``SchemaError`` when a ``SELECT`` row is not in the
    chunk or not ascending by ``order`` (the collation rule disagrees with the server), or a change
    in the window lacks a full image.
    """
    values = [tuple(row[c] for c in order.key) for row in read.rows]
    keep, images = reconcile_keys(read.chunk, read.low, read.high, values, changes, order)
    if keep is None:
        return list(read.rows)
    rows = [read.rows[i] for i in keep]
    if not images:
        return rows
    return sorted([*rows, *images], key=order.of)


def split_key_move(change: RowChange, order: KeyOrder) -> tuple[RowChange, ...]:
    """An update that changes the key as a delete of its before image and an insert of its after
    image (same position), so each key is judged by its own chunk; any other change unchanged."""
    if change.op != "update" or change.before is None or change.after is None:
        return (change,)
    if order.of(change.before) == order.of(change.after):
        return (change,)
    return (replace(change, op="delete", after=None, json_diffs=None), replace(change, op="insert", before=None))


def after_high(read: ChunkRead, change: RowChange, order: KeyOrder) -> bool:
    """Whether the streaming phase must apply ``change`` as far as ``read``'s chunk is concerned:
    True when it lies at or after the high watermark or touches no key of the chunk; False when
    the chunk's rows already contain it. Judge key moves after ``split_key_move``."""
    chunk = read.chunk
    if change.db != chunk.db or change.table != chunk.table:
        return True
    if position_key(change.file, change.pos) >= position_key(read.high.file, read.high.pos):
        return True
    images = [i for i in (change.before, change.after) if i is not None]
    return not any(order.contains(chunk, order.of(i)) for i in images)
