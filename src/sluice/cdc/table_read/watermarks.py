"""A chunk's watermarks made exact, and the table's binlog changes between them.

A watermark is read as ``SHOW BINARY LOG STATUS`` (or MariaDB's ``binlog_snapshot_position``) on the
chunk's connection: a file and an offset of the server the chunk was read on, and a GTID set read
at another moment than the offset, or none. A file and offset mean nothing on another server; the
executed GTID set at the offset names the same transactions on every server of a replication
topology, so a chunk is compared with a stream read on another server by it
(``sluice.spark.snapshot.filter``). ``chunk_window`` gives both watermarks that set and the table's
changes in ``[low, high)``, reading the binlog forward once: from the nearest boundary known
exactly on the same server (``nearest``: the snapshot's start, the high watermarks of the chunks
done, in the low watermark's file) or else that file's start, up to the low watermark (no row decoded,
``cdc.executed_at``), then with the table's rows up to the high one, whose set is the low one's
plus the GTIDs in between. Every transaction of it must be read on the server the watermarks were
read on: when the address reaches another one meanwhile, ``SourceMovedError`` says so and the
chunk is read again there. A server without GTIDs leaves the sets out; the server still is named.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, ChangeCapture
from sluice.cdc.executed_at import executed_at, on_server
from sluice.cdc.follow import FollowConfig, follow
from sluice.cdc.records import RowChange
from sluice.cdc.schema import Catalog, SchemaTracker, TableSchema
from sluice.errors import SourceChangedError, SourceMovedError

__all__ = ["KEPT_POINTS", "chunk_window", "nearest", "recent"]

#: Exact boundaries handed to each chunk's task per server: the furthest ones (a chunk's low
#: watermark, taken up to two waves ahead, lies after most of them).
KEPT_POINTS = 32


def nearest(points: Iterable[Checkpoint], mark: Checkpoint) -> Checkpoint | None:
    """The furthest of ``points`` with a GTID set that lies on ``mark``'s server at or before it."""
    if mark.source is None:
        return None
    same = [p for p in points if p.gtid_set is not None and p.source is not None
            and p.source.same_server(mark.source) and p.key <= mark.key]
    return max(same, key=lambda p: p.key, default=None)


def recent(points: Iterable[Checkpoint], kept: int = KEPT_POINTS) -> list[Checkpoint]:
    """The ``kept`` furthest exact points of each server (those ``nearest`` may pick)."""
    by_server: dict[Any, list[Checkpoint]] = {}
    for p in points:
        if p.gtid_set is not None and p.source is not None:
            by_server.setdefault((p.source.flavor, p.source.server), []).append(p)
    return [p for group in by_server.values() for p in sorted(group, key=lambda p: p.key)[-kept:]]


def chunk_window(config: Any, catalog: Catalog, schema: TableSchema, flavor: str, low: Checkpoint,
                 high: Checkpoint, known: Sequence[Checkpoint] = ()) -> tuple[Checkpoint, Checkpoint, list[RowChange]]:
    """``low`` and ``high`` (read on one server, ``source`` set) with the executed GTID set at each,
    and ``schema``'s row changes committed in ``[low, high)``, read from the binlog (module
    docstring). ``known``: exact boundaries of the stream (any server's); ``config``: the source's
    ``ConnectionConfig``."""
    # say_moved off: another server is not gone on to here, the chunk is read again (SourceMovedError)
    follow_config = FollowConfig(config, until_end=True, heartbeat_period=0, retries=8, say_moved=False)
    low = executed_at(follow_config, Checkpoint(low.file, low.pos, None, low.source), nearest(known, low))
    changes: list[RowChange] = []
    if low.key >= high.key:
        return low, Checkpoint(high.file, high.pos, low.gtid_set, high.source), changes
    tracker = SchemaTracker(catalog, None, flavor=flavor)
    only = (schema.db, schema.name)
    capture = ChangeCapture(CaptureConfig(table_filter=lambda d, t: (d, t) == only), low, tracker)
    goal = high.key
    at_high: str | None = None
    try:
        for committed in follow(follow_config, capture):
            on_server(capture.boundary, high)
            tx = committed.transaction
            if tx.start.key >= goal:
                at_high = tx.start.gtid_set
                break
            changes.extend(r for r in committed.records if type(r) is RowChange)
            if tx.end.key >= goal:
                at_high = tx.end.gtid_set
                break
        else:
            on_server(capture.boundary, high)
            at_high = capture.boundary.gtid_set
    except SourceChangedError as exc:  # the address reached another server and no GTID set says where
        raise SourceMovedError(str(exc)) from None
    return low, Checkpoint(high.file, high.pos, at_high, high.source), changes
