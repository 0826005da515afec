"""Which streamed changes a snapshot already holds: ``SnapshotFilter``, built from ``snapshot.json``.

A chunk read between a low and a high watermark holds its keys' rows as of its high watermark, so
the stream leaves out of the mirror a change of the same table, with a key inside the chunk, at a
position before that high watermark (the change log still gets it). A table whose snapshot found it
gone (renamed or dropped before it could be read) is "lost": none of its changes reach a mirror
until the stream meets the DDL that removed it (``sluice.spark.ddl.batch``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sluice.binlog.position import Checkpoint, position_key
from sluice.cdc.records import RowChange
from sluice.cdc.schema import TableSchema
from sluice.cdc.snapshot.chunks import Chunk, ChunkRead
from sluice.cdc.snapshot.reconcile import KeyOrder, after_high, key_order, split_key_move
from sluice.spark.snapshot.state import SnapshotState

__all__ = ["SnapshotFilter"]


class SnapshotFilter:
    """Which streamed changes a finished snapshot already contains (left out of the mirror MERGE)."""

    def __init__(self, state: SnapshotState) -> None:
        self._tables: dict[tuple[str, str], tuple[KeyOrder, list[ChunkRead], tuple[str, int, int]]] = {}
        self._lost = {tuple(name.split(".", 1)) for name, table in state.tables.items() if table.get("lost")}
        for table in state.tables.values():
            if not table["key"]:
                continue
            schema = TableSchema.from_json(table["schema"])
            order = key_order(schema, tuple(table["key"]))
            reads = []
            for c in table["chunks"]:
                chunk = Chunk.from_json(c)
                done = table["done"].get(chunk.id)
                if done is not None:
                    low, high = Checkpoint.from_json(done["low"]), Checkpoint.from_json(done["high"])
                    reads.append(ChunkRead(chunk, low, high, []))
            if reads:
                last = max(position_key(r.high.file, r.high.pos) for r in reads)
                self._tables[(schema.db, schema.name)] = (order, reads, last)

    def __bool__(self) -> bool:
        return bool(self._tables or self._lost)

    def lost(self, db: str, table: str) -> bool:
        """Whether the table vanished (renamed or dropped) before its snapshot could read it: it has
        no mirror, and its changes stay out of the mirrors until the stream meets that DDL."""
        return (db, table) in self._lost

    def read_after(self, db: str, table: str, file: str, pos: int) -> bool | None:
        """Whether the table's snapshot read it after ``file:pos`` (every chunk's low watermark is
        later: a DDL there is in the snapshot already); False when only some chunks were; None when
        the snapshot did not read the table or finished before ``file:pos``."""
        entry = self._tables.get((db, table))
        if entry is None or position_key(file, pos) >= entry[2]:
            return None
        return all(position_key(file, pos) < position_key(r.low.file, r.low.pos) for r in entry[1])

    def covers(self, db: str, table: str, file: str, pos: int) -> bool:
        """Whether ``keep`` may leave out changes of ``db.table`` from ``file:pos`` on: only before the
        last high watermark of the table's snapshot chunks."""
        if (db, table) in self._lost:
            return True
        entry = self._tables.get((db, table))
        return entry is not None and position_key(file, pos) < entry[2]

    def keep(self, changes: Sequence[RowChange]) -> list[RowChange]:
        """The changes the mirror still needs (key moves split into a delete and an insert)."""
        out: list[RowChange] = []
        for change in changes:
            if (change.db, change.table) in self._lost:
                continue
            entry = self._tables.get((change.db, change.table))
            if entry is None or position_key(change.file, change.pos) >= entry[2]:
                out.append(change)
                continue
            order, reads, _ = entry
            for part in split_key_move(change, order):
                if all(after_high(read, part, order) for read in reads):
                    out.append(part)
        return out
