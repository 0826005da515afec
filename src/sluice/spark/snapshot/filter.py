"""Which streamed changes a snapshot already holds: ``SnapshotFilter``, built from ``snapshot.json``.

A chunk read between a low and a high watermark holds its keys' rows as of its high watermark, so
the stream leaves out of the mirror a change of the same table, with a key inside the chunk, at a
position before that high watermark (the change log still gets it). A table whose snapshot found it
gone (renamed or dropped before it could be read) is "lost": none of its changes reach a mirror
until the stream meets the DDL that removed it (``sluice.spark.ddl.batch``).

Positions compare by file and offset while the chunks and the stream are read on one server. Once
they are not (chunks read on two servers, or a batch read on another server than the chunks: a
failover), a change lies before a high watermark when its transaction's GTID is in the watermark's
executed set, which names the same transactions on every server; the column-wise path, whose
staged rows carry positions only, then gives way to the per-row one. A change without a GTID, or a
watermark without its exact set, cannot be placed so: ``SourceChangedError``, naming the servers
and the remedy. A table whose every high watermark the lake's committed position holds is passed:
none of its later changes is in the snapshot.

A table whose snapshot key is hashed (``--hash-columns``) has chunks bounded by the key's own values
and changes that carry its hash: ``KeyPlaces`` (``sluice.spark.snapshot.key_places``) says which
chunk each hashed key lies in, and the rest is judged as for any table.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sluice.binlog.position import Checkpoint, SourceIdentity, binlog_file_key, gtid_covers, parse_gtids, position_key
from sluice.cdc.column_rules import open_chunk
from sluice.cdc.records import RowChange
from sluice.cdc.schema import TableSchema
from sluice.cdc.schema.model import ColumnDef
from sluice.cdc.schema.typemap import INTEGER_TYPES
from sluice.cdc.table_read.chunks import Chunk, ChunkRead, key_columns
from sluice.cdc.table_read.reconcile import KeyOrder, after_high, key_order, split_key_move
from sluice.errors import SourceChangedError
from sluice.lake.mirror.merge_source import CHANGE_FILE, CHANGE_POS
from sluice.spark.snapshot.key_places import KeyPlaces, PlaceReader, hashed_key
from sluice.spark.snapshot.state import SnapshotState

__all__ = ["SnapshotFilter"]

# Chunk reads by lower bound, their lower bounds (``()`` for none) and upper bounds, as order keys.
_Bounds = tuple[list[ChunkRead], list[tuple[Any, ...]], list[tuple[Any, ...] | None]]


class SnapshotFilter:
    """Which streamed changes a finished snapshot already contains (left out of the mirror MERGE)."""

    def __init__(self, state: SnapshotState, places: PlaceReader | None = None) -> None:
        self._tables: dict[tuple[str, str], tuple[KeyOrder, list[ChunkRead], tuple[str, int, int]]] = {}
        # keep_source's view of each table: the snapshot key's columns, and its chunk reads by
        # lower bound with their bounds as order keys (None when two chunks overlap)
        self._placing: dict[tuple[str, str], tuple[tuple[ColumnDef, ...], _Bounds | None]] = {}
        self._lost = {tuple(name.split(".", 1)) for name, table in state.tables.items() if table.get("lost")}
        start = Checkpoint.from_json(state.start) if state.start else None
        self._servers: list[SourceIdentity] = [start.source] if start is not None and start.source else []
        self.by_gtid = False  # positions of two servers met: compare by GTID set (module docstring)
        self._parsed: dict[str, Any] = {}  # high watermarks' GTID sets, parsed once
        # tables whose snapshot key is hashed: their chunks, by hashed key (``KeyPlaces``)
        self._hashed: dict[tuple[str, str], KeyPlaces] = {}
        self._start = start  # where the window of a hashed key's places begins (``stream_read_on`` moves it)
        for table in state.tables.values():
            if not table["key"]:
                continue
            schema = TableSchema.from_json(table["schema"])
            order = key_order(schema, tuple(table["key"]))
            reads = []
            for c in table["chunks"]:
                chunk = Chunk.from_json(open_chunk(places.rules if places is not None else None, c))
                done = table["done"].get(chunk.id)
                if done is not None:
                    low, high = Checkpoint.from_json(done["low"]), Checkpoint.from_json(done["high"])
                    reads.append(ChunkRead(chunk, low, high, []))
                    self._met(low.source, high.source)
            if reads:
                last = max(position_key(r.high.file, r.high.pos) for r in reads)
                name = (schema.db, schema.name)
                self._tables[name] = (order, reads, last)
                self._placing[name] = (key_columns(schema, order.key), _ordered_bounds(order, reads))
                masked = hashed_key(places.rules if places is not None else None, schema, order)
                if masked is not None:
                    assert places is not None
                    self._hashed[name] = KeyPlaces(order, masked, reads, places)

    def __bool__(self) -> bool:
        return bool(self._tables or self._lost)

    def _met(self, *sources: SourceIdentity | None) -> None:
        for source in sources:
            if source is None or any(source.same_server(s) for s in self._servers):
                continue
            self._servers.append(source)
            self.by_gtid = self.by_gtid or len(self._servers) > 1

    def stream_read_on(self, servers: Sequence[SourceIdentity | None], committed: Checkpoint | None) -> None:
        """A batch's ranges were read on ``servers`` (None: not known); ``committed``: the lake's last
        committed position. Positions of another server turn to GTID sets, and a table whose high
        watermarks ``committed`` all holds is dropped (module docstring)."""
        self._met(*servers)
        if committed is not None and not self.by_gtid:
            self._start = committed
        if not self.by_gtid or committed is None or not committed.gtid_set:
            return
        for name, (_order, reads, _last) in list(self._tables.items()):
            if all(r.high.gtid_set and gtid_covers(committed.gtid_set, r.high.gtid_set) for r in reads):
                del self._tables[name]
                self._placing.pop(name, None)

    def _unplaced(self, what: str) -> SourceChangedError:
        servers = " and ".join(str(s) for s in self._servers) or "two servers"
        return SourceChangedError(
            f"the snapshot's chunks and the stream were read on {servers} (a failover), and {what}, so "
            "nothing says whether the snapshot holds it. Take a new snapshot of the captured tables on the "
            "new server (sluice snapshot, or a new lake)")

    def _before_high(self, read: ChunkRead, change: RowChange) -> bool:
        """By GTID set: whether ``change``'s transaction is in the set at ``read``'s high watermark."""
        if read.high.gtid_set is None:
            raise self._unplaced(f"the chunk {read.chunk.id}'s high watermark carries no GTID set")
        if change.gtid is None:
            raise self._unplaced(f"the change at {change.file}:{change.pos} has no GTID")
        if not read.high.gtid_set:
            return False  # the empty set: nothing was executed there
        high: Any = self._parsed.get(read.high.gtid_set)
        if high is None:
            high = self._parsed[read.high.gtid_set] = parse_gtids(read.high.gtid_set)
        mine: Any = parse_gtids(change.gtid)  # of the high watermark's flavor
        return bool(mine.issubset(high))

    def lost(self, db: str, table: str) -> bool:
        """Whether the table vanished (renamed or dropped) before its snapshot could read it: it has
        no mirror, and its changes stay out of the mirrors until the stream meets that DDL."""
        return (db, table) in self._lost

    def read_after(self, db: str, table: str, file: str, pos: int) -> bool | None:
        """Whether the table's snapshot read it after ``file:pos`` (every chunk's low watermark is
        later: a DDL there is in the snapshot already); False when only some chunks were; None when
        the snapshot did not read the table or finished before ``file:pos``."""
        entry = self._tables.get((db, table))
        if entry is not None and self.by_gtid:
            raise self._unplaced(f"a DDL on {db}.{table} at {file}:{pos} is logged without its GTID set")
        if entry is None or position_key(file, pos) >= entry[2]:
            return None
        return all(position_key(file, pos) < position_key(r.low.file, r.low.pos) for r in entry[1])

    def covers(self, db: str, table: str, file: str, pos: int) -> bool:
        """Whether ``keep`` may leave out changes of ``db.table`` from ``file:pos`` on: only before the
        last high watermark of the table's snapshot chunks."""
        if (db, table) in self._lost:
            return True
        entry = self._tables.get((db, table))
        return entry is not None and (self.by_gtid or position_key(file, pos) < entry[2])

    def keep(self, changes: Sequence[RowChange]) -> list[RowChange]:
        """The changes the mirror still needs (key moves split into a delete and an insert)."""
        out: list[RowChange] = []
        for change in changes:
            if (change.db, change.table) in self._lost:
                continue
            entry = self._tables.get((change.db, change.table))
            if entry is None or (not self.by_gtid and position_key(change.file, change.pos) >= entry[2]):
                out.append(change)
                continue
            order, reads, _ = entry
            places = self._places(change)
            if places is not None:
                order = places.masked
            for part in split_key_move(change, order):
                if places is not None:
                    inside = self._hashed_chunks(places, part)
                    if all(read.chunk.index not in inside or not self._before(read, part) for read in reads):
                        out.append(part)
                elif self.by_gtid:
                    if all(_outside(read, part, order) or not self._before_high(read, part) for read in reads):
                        out.append(part)
                elif all(after_high(read, part, order) for read in reads):
                    out.append(part)
        return out

    def _before(self, read: ChunkRead, change: RowChange) -> bool:
        """Whether ``change`` lies before ``read``'s high watermark (by GTID set once servers differ)."""
        if self.by_gtid:
            return self._before_high(read, change)
        return position_key(change.file, change.pos) < position_key(read.high.file, read.high.pos)

    def _places(self, change: RowChange) -> KeyPlaces | None:
        """The places of a hashed key's table (``KeyPlaces``), its window read; None for another table."""
        places = self._hashed.get((change.db, change.table))
        if places is None:
            return None
        if self.by_gtid:
            raise self._unplaced(f"the key of {change.db}.{change.table} is hashed, and its chunks are placed by "
                                 "reading the binlog from the chunks' server")
        if self._start is None:
            raise self._unplaced("the snapshot has no start")
        places.read(self._start)
        return places

    @staticmethod
    def _hashed_chunks(places: KeyPlaces, change: RowChange) -> set[int]:
        """The chunks the keys of ``change``'s images lie in; a key the window lacks is an error."""
        found = set()
        for image in (change.before, change.after):
            if image is not None:
                index = places.chunk_of(image)
                if index is None:
                    raise places.missing(change)
                found.add(index)
        return found

    def keep_source(self, db: str, table: str, primary_key: Sequence[str], source: pa.Table) -> pa.Table | None:
        """``keep`` on a table's staged MERGE source folded over the batch's ranges (the last change
        per key, with its ``CHANGE_FILE`` and ``CHANGE_POS``): the rows the mirror still needs, or
        None when the per-row path must judge the changes (a source without positions, a snapshot
        key other than the primary key, a key other than an integer, a CHAR/VARCHAR text or a
        DECIMAL, overlapping chunks).

        A key lies in at most one chunk, and its changes come in binlog order: ``keep`` leaves out
        those before the chunk's high watermark, a run from the first. So it keeps a key's last
        change exactly when that change is at or after the high watermark, and then the mirror
        ends with that change whatever came before it."""
        if (db, table) in self._lost:
            return source.slice(0, 0)
        entry = self._tables.get((db, table))
        if entry is None or not source.num_rows:
            return source
        if self.by_gtid:  # the staged rows carry positions, not GTIDs
            return None
        order = entry[0]
        columns, bounds = self._placing[(db, table)]
        names = {n.lower(): n for n in source.column_names}
        wanted = [k.lower() for k in order.key]
        if (bounds is None or sorted(wanted) != sorted(k.lower() for k in primary_key)
                or not set(wanted) <= names.keys() or not {CHANGE_FILE, CHANGE_POS} <= set(source.column_names)):
            return None
        places = self._hashed.get((db, table))
        hashed = places.reader.rules.of(db, table, order.key, "hash") if places is not None else frozenset()
        keys = []
        for column, name in zip(columns, wanted, strict=True):
            values = source.column(names[name])
            values = values if column.name in hashed else _comparable(column, values)
            if values is None:
                return None
            keys.append(values)
        ordered, lowers, uppers = bounds
        if places is not None:  # the key is hashed: its chunk is found by its hash (``KeyPlaces``)
            assert self._start is not None
            places.read(self._start)
            chunk = places.source_chunks(source, [names[k] for k in wanted],
                                         {r.chunk.index: i for i, r in enumerate(ordered)}, entry[2])
        else:
            chunk = _chunks_of(order, keys, lowers, uppers)
        before = _before_highs(source, chunk, [r.high for r in ordered])
        return source.filter(pa.array(~before))


def _outside(read: ChunkRead, change: RowChange, order: KeyOrder) -> bool:
    """Whether ``change`` touches no key of ``read``'s chunk (another table, or keys outside it)."""
    chunk = read.chunk
    if change.db != chunk.db or change.table != chunk.table:
        return True
    images = [i for i in (change.before, change.after) if i is not None]
    return not any(order.contains(chunk, order.of(i)) for i in images)


def _comparable(column: ColumnDef, values: pa.ChunkedArray) -> pa.ChunkedArray | None:
    """A key column's Arrow values as ``KeyOrder`` judges them in a row image: integers (a BIGINT
    UNSIGNED's DECIMAL(20,0) as UINT64), the text of a CHAR/VARCHAR (which its collation's weight
    orders), or a DECIMAL's ``Decimal``; None for any other key (a temporal key's image holds its
    text, which the mirror's Arrow values are not)."""
    if column.data_type in INTEGER_TYPES:
        if pa.types.is_decimal(values.type) and values.type.scale == 0 and column.unsigned:
            return pc.cast(values, pa.uint64())
        return values if pa.types.is_integer(values.type) else None
    if column.data_type in ("char", "varchar") and column.charset != "binary":
        return values if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) else None
    if column.data_type == "decimal":
        return values if pa.types.is_decimal(values.type) else None
    return None


def _ordered_bounds(order: KeyOrder, reads: Sequence[ChunkRead]) -> _Bounds | None:
    """The chunk reads by lower bound, with their lower bounds (``()`` for none: below every key)
    and upper bounds as order keys; None when two chunks overlap."""
    lowers = [order.bound(r.chunk.lower) if r.chunk.lower is not None else () for r in reads]
    at = sorted(range(len(reads)), key=lambda i: lowers[i])
    uppers: list[tuple[Any, ...] | None] = []
    for i in at:
        upper = reads[i].chunk.upper
        uppers.append(None if upper is None else order.bound(upper))
    lows = [lowers[i] for i in at]
    for i in range(1, len(at)):
        end = uppers[i - 1]
        if end is None or not lows[i] or lows[i] < end:
            return None
    return [reads[i] for i in at], lows, uppers


def _chunks_of(order: KeyOrder, keys: list[pa.ChunkedArray], lowers: list[tuple[Any, ...]],
               uppers: list[tuple[Any, ...] | None]) -> np.ndarray:
    """Per row, the index of the chunk whose range holds its key, -1 for none."""
    if len(keys) == 1 and pa.types.is_integer(keys[0].type) and all(
            isinstance(b[0], int) for b in (*lowers, *uppers) if b):
        # One integer key (its weight is the value itself): the chunks found by a binary search.
        values = keys[0].to_numpy()
        try:
            low = np.array([b[0] if b else np.iinfo(values.dtype).min for b in lowers], dtype=values.dtype)
            high = np.array([b[0] if b is not None else 0 for b in uppers], dtype=values.dtype)
        except OverflowError:  # a bound outside the column's type: compared as Python integers below
            pass
        else:
            index = np.searchsorted(low, values, side="right") - 1
            at = np.maximum(index, 0)
            bounded = np.array([b is not None for b in uppers], dtype=bool)
            inside = (index >= 0) & (~bounded[at] | (values < high[at]))
            return np.where(inside, index, -1)
    out = np.empty(len(keys[0]), dtype=np.int64)
    for row, values in enumerate(zip(*(k.to_pylist() for k in keys), strict=True)):
        key = order.bound(values)
        index = bisect_right(lowers, key) - 1
        end = uppers[index] if index >= 0 else None
        out[row] = index if index >= 0 and (end is None or key < end) else -1
    return out


def _before_highs(source: pa.Table, chunk: np.ndarray, highs: list[Checkpoint]) -> np.ndarray:
    """Per row, whether its change lies in a chunk (``chunk`` >= 0) and before that chunk's high
    watermark: the chunk's rows hold it already."""
    files = source.column(CHANGE_FILE)
    names = pc.unique(files).to_pylist()
    ranked = sorted({binlog_file_key(f) for f in [*names, *(h.file for h in highs)]})
    rank = {key: i for i, key in enumerate(ranked)}
    file_rank = np.array([rank[binlog_file_key(f)] for f in names], dtype=np.int64)[
        pc.index_in(files, value_set=pa.array(names, files.type)).to_numpy()]
    pos = source.column(CHANGE_POS).to_numpy()
    at = np.maximum(chunk, 0)
    high_rank = np.array([rank[binlog_file_key(h.file)] for h in highs], dtype=np.int64)[at]
    high_pos = np.array([h.pos for h in highs], dtype=np.int64)[at]
    before = (file_rank < high_rank) | ((file_rank == high_rank) & (pos < high_pos))
    return (chunk >= 0) & before
