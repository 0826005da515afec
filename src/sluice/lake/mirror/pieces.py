"""A MERGE source too large to hold at once: its pieces, read one at a time, and what the keys say.

A huge batch of one table is staged by its tasks as many MERGE sources, a piece of binlog each
(``sluice.spark.source.parts``), and a mirror's pending table holds a file per batch appended
(``sluice.lake.mirror.pending``). Each such piece holds one row per key it touched, the last state
of that key in the piece; read in order, a key's row in a later piece wins. ``Piece`` reads one:
a staged Arrow IPC file (``StagedPiece``), a pending table's data file (``PendingPiece``) or a
table in memory (``TablePiece``). Each piece has an order: a piece of pending rows orders its rows
by the batch that appended them (``pending.SEQ``), any other piece comes after every pending row
and after the pieces before it.

``KeyIndex`` is what a MERGE in passes (``sluice.lake.mirror.passes``) knows of the keys, from the
pieces' key columns only: the sorted keys touched, which of them end deleted, and for a key that
more than one piece carries, the order of the piece whose row wins. A single integer key is held as
8 bytes per key touched (16 more per key that comes twice), whatever the width of the rows; keys
that lie close together also get an array of their places by offset, at most 16 bytes per key,
which a lookup indexes instead of searching.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
from deltalake import DeltaTable

from sluice.lake.mirror.merge_source import DELETE_FLAG
from sluice.lake.storage import LakeStore

__all__ = [
    "AFTER_PENDING", "KeyIndex", "PendingPiece", "Piece", "StagedPiece", "TablePiece", "integer_key", "table_dataset",
]

#: the order of the first piece that is not a pending table's: above any batch id a pending row carries
AFTER_PENDING: Final = 1 << 48


class Piece:
    """One piece of a MERGE source, read when asked."""

    order: int  # the piece's place among the others (a pending piece: its rows carry their own)
    order_column: str | None = None  # the column giving each row's order instead of ``order``

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The piece's rows (only ``columns``, when given)."""
        raise NotImplementedError

    def count(self) -> int:
        """How many rows the piece holds (its metadata, where it says)."""
        raise NotImplementedError

    def orders(self, rows: pa.Table) -> np.ndarray:
        """The order of each of ``rows`` (read with ``order_columns``' columns)."""
        if self.order_column is None:
            return np.full(rows.num_rows, self.order, dtype=np.int64)
        return rows.column(self.order_column).to_numpy().astype(np.int64, copy=False)

    def order_columns(self) -> list[str]:
        """The columns ``orders`` needs."""
        return [] if self.order_column is None else [self.order_column]


class StagedPiece(Piece):
    """A MERGE source a task staged: an Arrow IPC file of the lake (memory-mapped when local)."""

    def __init__(self, store: LakeStore, path: str, order: int) -> None:
        self.store, self.path, self.order = store, path, order

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The file's rows."""
        table = pa.ipc.open_file(self.store.read_file(self.path)).read_all()
        return table if columns is None else table.select(list(columns))

    def count(self) -> int:
        """The rows of the file's record batches."""
        reader = pa.ipc.open_file(self.store.read_file(self.path))
        return sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))


class TablePiece(Piece):
    """A MERGE source held in memory (a batch small enough, after pending pieces)."""

    def __init__(self, table: pa.Table, order: int) -> None:
        self.table, self.order = table, order

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The table's rows."""
        return self.table if columns is None else self.table.select(list(columns))

    def count(self) -> int:
        """The table's rows."""
        return int(self.table.num_rows)


class PendingPiece(Piece):
    """A data file of a mirror's pending table (a fragment of its dataset); each row's order is the
    batch that appended it."""

    def __init__(self, fragment: object, schema: pa.Schema, order_column: str) -> None:
        self.fragment, self.schema, self.order_column = fragment, schema, order_column
        self.order = 0

    def read(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The data file's rows, with the pending table's columns."""
        names = list(self.schema.names if columns is None else columns)
        return self.fragment.to_table(schema=self.schema, columns=names)  # type: ignore[attr-defined]

    def count(self) -> int:
        """The data file's rows, from its Parquet footer."""
        return int(self.fragment.count_rows())  # type: ignore[attr-defined]


def table_dataset(dt: DeltaTable, path: str, store: LakeStore) -> ds.Dataset:
    """The Delta table ``dt`` at ``path`` as a pyarrow dataset, a fragment per data file; a local
    table read through pyarrow's own file system, not delta-rs' object store."""
    if store.remote:
        return dt.to_pyarrow_dataset()
    return dt.to_pyarrow_dataset(filesystem=pafs.SubTreeFileSystem(path, pafs.LocalFileSystem()))


def integer_key(schema: pa.Schema, primary_key: Sequence[str]) -> bool:
    """Whether a MERGE in passes takes this key: a single column of an integer type whose values
    are all 64-bit signed integers (not BIGINT UNSIGNED)."""
    if len(primary_key) != 1 or primary_key[0] not in schema.names:
        return False
    kind = schema.field(primary_key[0]).type
    return pa.types.is_integer(kind) and kind != pa.uint64()


class KeyIndex:
    """The keys a MERGE source's pieces touch, read from their key columns (see the module)."""

    def __init__(self, pieces: Sequence[Piece], key: str) -> None:
        self.key = key
        keys = np.empty(sum(piece.count() for piece in pieces), dtype=np.int64)
        at = 0
        for piece in pieces:
            column = piece.read([key]).column(key).to_numpy()  # a null key never reaches a MERGE source
            keys[at:at + len(column)] = column
            at += len(column)
        keys.sort()
        twice = keys[1:] == keys[:-1]
        if twice.any():
            self.repeated: np.ndarray = np.unique(keys[1:][twice])
            keys = keys[np.concatenate(([True], ~twice))]
        else:
            self.repeated = np.empty(0, dtype=np.int64)
        del twice
        self.keys = keys  # every key touched, sorted, once
        self._dense = _Dense.of(keys)
        self.winner = np.full(len(self.repeated), -1, dtype=np.int64)  # a repeated key: the order that wins
        if len(self.repeated):
            for piece in pieces:
                rows = piece.read([key, *piece.order_columns()])
                place, found = _lookup(self.repeated, rows.column(key).to_numpy())
                np.maximum.at(self.winner, place[found], piece.orders(rows)[found])
        self.deleted = np.zeros(len(keys), dtype=bool)  # the key's last state is a delete
        for piece in pieces:
            rows = piece.read([key, DELETE_FLAG, *piece.order_columns()])
            wins = self.wins(piece, rows)
            place, _ = self.touched(rows.column(key).to_numpy()[wins])
            self.deleted[place] = rows.column(DELETE_FLAG).to_numpy(zero_copy_only=False)[wins]

    def wins(self, piece: Piece, rows: pa.Table) -> np.ndarray:
        """Which of a piece's ``rows`` (read with the key and ``order_columns``) are their key's last state."""
        keys = rows.column(self.key).to_numpy()
        if not len(self.repeated):
            return np.ones(len(keys), dtype=bool)
        place, found = _lookup(self.repeated, keys)
        wins = np.ones(len(keys), dtype=bool)
        wins[found] = self.winner[place[found]] == piece.orders(rows)[found]
        return wins

    def touched(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each of ``keys``: its place among the keys touched, and whether it is one of them."""
        if self._dense is not None:
            return self._dense.lookup(keys)
        return _lookup(self.keys, keys)

    def any_between(self, low: int, high: int) -> bool:
        """Whether a key touched lies in ``[low, high]``."""
        at = int(np.searchsorted(self.keys, low, side="left"))
        return at < len(self.keys) and int(self.keys[at]) <= high


class _Dense:
    """The places of keys that lie close together, by their offset from the lowest: a lookup is an
    index into an array, not a binary search (a batch that touched a range of a table's keys)."""

    SPAN = 4  # at most this many slots per key, 4 bytes each: twice the keys' own 8 bytes at most

    def __init__(self, low: int, places: np.ndarray) -> None:
        self.low, self.places = low, places

    @classmethod
    def of(cls, keys: np.ndarray) -> _Dense | None:
        if not len(keys) or len(keys) >= 1 << 31:
            return None
        low, span = int(keys[0]), int(keys[-1]) - int(keys[0]) + 1
        if span > cls.SPAN * len(keys):
            return None
        places = np.full(span, -1, dtype=np.int32)
        places[keys - low] = np.arange(len(keys), dtype=np.int32)
        return cls(low, places)

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As ``_lookup`` gives for the keys these places were made of (a key not there: place 0)."""
        keys = keys.astype(np.int64, copy=False)
        inside = (keys >= self.low) & (keys <= self.low + len(self.places) - 1)  # no offset taken that could wrap
        place = np.full(len(keys), -1, dtype=np.int64)
        place[inside] = self.places[keys[inside] - self.low]
        found = place >= 0
        place[~found] = 0
        return place, found


def _lookup(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each of ``keys``' place in ``sorted_keys`` and whether it is there."""
    keys = keys.astype(np.int64, copy=False)
    place = np.searchsorted(sorted_keys, keys)
    inside = place < len(sorted_keys)
    found = np.zeros(len(keys), dtype=bool)
    found[inside] = sorted_keys[place[inside]] == keys[inside]
    return np.minimum(place, max(len(sorted_keys) - 1, 0)), found
