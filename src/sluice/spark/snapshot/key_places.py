"""Where a hashed key lies among a snapshot's chunks: ``KeyPlaces``, for ``SnapshotFilter``.

A table whose snapshot key has a column that ``--hash-columns`` hashes is still cut into chunks on
the key's own values (the server orders and bounds them); its mirror, its change log and the batches
the pipeline folds hold the key's hash, which says nothing of the key's order. The filter must still
tell, for a streamed change before the last high watermark, which chunk its key lies in. The driver
reads the table's binlog changes once, from where the stream's batches start (the lake's committed
position, or the snapshot's start) up to the last high watermark, on the server the chunks were read
on: each change's images give the key's own values (placed among the chunks' bounds by the
collation's order, as ``KeyOrder`` does) and, masked as the pipeline masks them
(``ColumnRules.mask``), its hashed key. What it keeps is the map of hashed key to chunk, in memory,
for the keys changed in that window: every change the filter judges lies in it. A change whose
hashed key the map lacks was hashed under another rule or key: a ``SchemaError``.

A table read in one chunk (no bounds) needs no map: every key lies in it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from sluice.binlog.position import Checkpoint, position_key
from sluice.cdc.capture import CaptureConfig, ChangeCapture
from sluice.cdc.executed_at import on_server
from sluice.cdc.follow import FollowConfig, follow
from sluice.cdc.records import RowChange
from sluice.cdc.schema import SchemaHistory, SchemaTracker, TableSchema
from sluice.cdc.table_read.chunks import ChunkRead
from sluice.cdc.table_read.reconcile import KeyOrder
from sluice.dsn import parse_dsn
from sluice.errors import ConfigError, SchemaError
from sluice.lake.mirror.merge_source import CHANGE_FILE, CHANGE_POS

__all__ = ["KeyPlaces", "PlaceReader", "hashed_key"]


def _same(value: Any) -> Any:
    return value


def hashed_key(rules: Any, schema: TableSchema, order: KeyOrder) -> KeyOrder | None:
    """``order`` over the masked images when ``rules`` hash a column of the snapshot key (a hash is
    compared as itself, the other columns by their collation's weight); None when they hash none."""
    if rules is None:
        return None
    hashed = rules.of(schema.db, schema.name, order.key, "hash")
    if not hashed:
        return None
    return replace(order, weights=tuple(_same if k in hashed else w for k, w in zip(order.key, order.weights,
                                                                                 strict=True)))


class PlaceReader:
    """Reads a table's binlog changes between two positions on the driver (``KeyPlaces.read``):
    ``source``: the DSN, ``history_path``: the stream's schema history, ``rules``: the ``ColumnRules``."""

    def __init__(self, source: str, history_path: str | Path, rules: Any) -> None:
        self.source = source
        self.history_path = history_path
        self.rules = rules

    def changes(self, db: str, table: str, start: Checkpoint, end: Checkpoint) -> list[RowChange]:
        """``db.table``'s row changes committed in ``[start, end)``; ``start`` a transaction boundary."""
        catalog = SchemaHistory.open(self.history_path).catalog_at(start.file, start.pos)
        if catalog is None:
            raise ConfigError(f"the schema history {self.history_path} holds no schema at {start.file}:{start.pos}, "
                              f"where the hashed key of {db}.{table} is placed among its snapshot's chunks: start "
                              "the lake over")
        only = (db, table)
        capture = ChangeCapture(CaptureConfig(table_filter=lambda d, t: (d, t) == only),
                                Checkpoint(start.file, start.pos, start.gtid_set, end.source),
                                SchemaTracker(catalog, None, flavor=catalog.flavor))
        config = FollowConfig(parse_dsn(self.source), until_end=True, heartbeat_period=0, retries=8, say_moved=False)
        out: list[RowChange] = []
        for committed in follow(config, capture):
            on_server(capture.boundary, end)
            tx = committed.transaction
            if tx.start.key >= end.key:
                break
            out.extend(r for r in committed.records if type(r) is RowChange)
            if tx.end.key >= end.key:
                break
        return out


class KeyPlaces:
    """The chunk (``Chunk.index``) of each hashed key of one table changed in the filter's window."""

    def __init__(self, order: KeyOrder, masked: KeyOrder, reads: Sequence[ChunkRead], reader: PlaceReader) -> None:
        self.order = order  # the key's own values
        self.masked = masked  # the key as the pipeline writes it
        self.reads = reads
        self.reader = reader
        self._single = len(reads) == 1 and reads[0].chunk.lower is None and reads[0].chunk.upper is None
        self._places: dict[tuple[Any, ...], int] | None = None
        self._from: Checkpoint | None = None
        by_lower = sorted(reads, key=lambda r: () if r.chunk.lower is None else order.bound(r.chunk.lower))
        self._lowers = [() if r.chunk.lower is None else order.bound(r.chunk.lower) for r in by_lower]
        self._by_lower = by_lower

    def chunk_of(self, image: dict[str, Any]) -> int | None:
        """The index of the chunk a masked image's key lies in (-1: in no chunk read); None: the window
        changed no such key."""
        if self._single:
            return self.reads[0].chunk.index
        assert self._places is not None, "KeyPlaces.read first"
        return self._places.get(self.masked.of(image))

    def read(self, start: Checkpoint) -> None:
        """Read the window from ``start`` (a transaction boundary on the chunks' server) to the last
        high watermark, unless a window read already covers it."""
        if self._single or (self._from is not None and self._from.key <= start.key):
            return
        end = max((r.high for r in self.reads), key=lambda c: c.key)
        rules = self.reader.rules
        places: dict[tuple[Any, ...], int] = {}
        for change in self.reader.changes(self.reads[0].chunk.db, self.reads[0].chunk.table, start, end):
            masked = rules.mask(change)
            for raw, kept in ((change.before, masked.before), (change.after, masked.after)):
                if raw is None or kept is None:
                    continue
                index = self._chunk_of_raw(self.order.of(raw))
                places[self.masked.of(kept)] = -1 if index is None else index
        self._places, self._from = places, start

    def _chunk_of_raw(self, key: tuple[Any, ...]) -> int | None:
        at = bisect_right(self._lowers, key) - 1
        for read in self._by_lower[max(at, 0):at + 2] if at >= 0 else ():
            if self.order.contains(read.chunk, key):
                return read.chunk.index
        return next((r.chunk.index for r in self.reads if self.order.contains(r.chunk, key)), None)

    def source_chunks(self, source: pa.Table, names: Sequence[str], at: dict[int, int],
                      last: tuple[str, int, int]) -> np.ndarray:
        """Per row of a folded MERGE source (``names``: its key columns, in the key's order), the
        place in ``at`` (chunk index -> place) of its key's chunk, -1 for none; ``last``: the last
        high watermark's order key, before which every key must be placed."""
        keys = zip(*(source.column(n).to_pylist() for n in names), strict=True)
        files, positions = source.column(CHANGE_FILE).to_pylist(), source.column(CHANGE_POS).to_pylist()
        out = np.empty(source.num_rows, dtype=np.int64)
        for row, (values, file, pos) in enumerate(zip(keys, files, positions, strict=True)):
            index = self.chunk_of(dict(zip(self.masked.key, values, strict=True)))
            if index is None and position_key(file, pos) < last:
                raise self.missing(RowChange("update", self.reads[0].chunk.db, self.reads[0].chunk.table, None, None,
                                             self.masked.key, file, pos, 0, None, 0))
            out[row] = -1 if index is None else at.get(index, -1)
        return out

    def missing(self, change: RowChange) -> SchemaError:
        """The error for a change before the last high watermark whose hashed key the window lacks."""
        return SchemaError(
            f"the change of {change.db}.{change.table} at {change.file}:{change.pos} has a hashed key that no change "
            "of the binlog there hashes to under this run's --hash-columns and key: the lake's rows were hashed "
            "under another key or rule. Run with the lake's column rules and key")
