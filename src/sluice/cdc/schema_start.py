"""The schema at the start of a capture, read from a live server without racing its DDL.

``information_schema`` describes the tables as they are now; the capture needs them as they were at
a binlog position. ``read_schema`` ties the two: it reads the binlog position ``p1``, the catalog,
and the position ``p2`` again, then reads the binlog between ``p1`` and ``p2``: when no DDL was
logged there the catalog was in force at every position from ``p1`` to ``p2`` and ``p1`` is
returned with it; otherwise it tries again (a DDL running right then), up to ``attempts`` times.
A capture from an older start takes this catalog with ``p1`` as its ``read_at``: the
``SchemaTracker`` sorts out the DDL logged between the start and ``p1`` as the capture meets it, so
the binlog is read once, not once for DDL and once more for the rows.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sluice.binlog.constants import EventType
from sluice.binlog.events import QueryEvent
from sluice.binlog.framing import events_of, type_table
from sluice.binlog.parser import EventParser, ParserConfig
from sluice.binlog.position import Checkpoint, position_key
from sluice.cdc.schema import Catalog, is_ddl
from sluice.errors import SchemaError
from sluice.io.connection import Connection
from sluice.io.replication import RawEvent, ReplicationStream, StreamConfig, server_binlog_status

__all__ = ["LoggedDdl", "ddl_between", "read_schema"]

# What the DDL scan parses: statements (plain and MariaDB's compressed) and the FORMAT_DESCRIPTION
# they are read with.
_READ = frozenset({int(EventType.QUERY_EVENT), int(EventType.QUERY_COMPRESSED_EVENT),
                   int(EventType.FORMAT_DESCRIPTION_EVENT)})

_WANTED = type_table(_READ)
_SIZE = struct.Struct("<I").unpack_from

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LoggedDdl:
    """A DDL statement found in the binlog: where, what kind and which tables it touched."""

    file: str
    pos: int
    kind: str
    tables: tuple[tuple[str, str], ...]
    sql: str


def ddl_between(conn: Connection, start: Checkpoint, end: Checkpoint) -> list[LoggedDdl]:
    """Every DDL statement logged from ``start`` up to (not including) ``end``, in binlog order.
    A ``start`` read on another server than ``conn`` reaches (``end``'s) is read there from its GTID
    set (``SourceChangedError`` without one)."""
    moved = start.source is not None and end.source is not None and not start.source.same_server(end.source)
    if not start.file or (not moved and position_key(start.file, start.pos) >= position_key(end.file, end.pos)):
        return []
    from sluice.cdc.schema.ddl import apply_ddl  # sqlglot: loaded only when there is a range to check

    found: list[LoggedDdl] = []
    parser = EventParser(ParserConfig(table_filter=lambda _db, _table: False))
    config = StreamConfig(connection=conn.config, file=start.file, pos=start.pos, gtid=start.gtid_set,
                          source=start.source, until_end=True, server_id=0)
    with ReplicationStream(config) as stream:
        for raw in _statements(stream, end):
            parser.checksum_alg = int(stream.checksum_algorithm)
            event = parser.parse(raw.data, file=raw.file, offset=raw.pos)
            if type(event) is QueryEvent and is_ddl(event.sql):
                _, outcome = apply_ddl(Catalog(), event.sql, event.schema)
                found.append(LoggedDdl(raw.file, raw.pos, outcome.kind, tuple(outcome.tables), event.sql))
    return found


def _statements(stream: ReplicationStream, end: Checkpoint) -> Iterator[RawEvent]:
    """The events of ``stream`` before ``end`` that can be DDL, and the FORMAT_DESCRIPTIONs they are
    read with; rows and the rest are not even parsed."""
    goal = position_key(end.file, end.pos)
    size_of = _SIZE
    file, stop = "", -1  # the events' file, and the offset in it where the scan ends (-1: none)
    for chunk in stream.chunks():
        if chunk.file != file:
            file = chunk.file
            key = position_key(file, 0)[:2]
            if key > goal[:2]:
                return
            stop = end.pos if key == goal[:2] else -1
        if isinstance(chunk, RawEvent):
            if 0 <= stop <= chunk.pos:
                return
            if chunk.data[4] in _READ:
                yield chunk
            continue
        data = chunk.data
        view = memoryview(data)
        for at in events_of(data, 0, len(data), _WANTED):
            if 0 <= stop <= chunk.pos + at:
                return
            (size,) = size_of(data, at + 9)
            yield RawEvent(file, chunk.pos + at, view[at : at + size])
        if 0 <= stop <= chunk.pos + len(data):
            return


def read_schema(conn: Connection, include: Callable[[str, str], bool] | None = None, *,
                attempts: int = 8) -> tuple[Catalog, Checkpoint]:
    """The catalog and a binlog position it was in force at, read so that no DDL falls between them."""
    from sluice.cdc.schema.bootstrap import bootstrap_catalog

    for attempt in range(attempts):
        s1 = server_binlog_status(conn)
        catalog = bootstrap_catalog(conn, include)
        s2 = server_binlog_status(conn)
        p1 = Checkpoint(s1.file, s1.pos, s1.gtid_executed or None)
        p2 = Checkpoint(s2.file, s2.pos, s2.gtid_executed or None)
        if p1 == p2 or not ddl_between(conn, p1, p2):
            return catalog, p1
        log.info("a DDL ran while the schema was read (%s..%s): reading it again", p1, p2)
        time.sleep(min(0.1 * 2**attempt, 2.0))
    raise SchemaError(
        f"the schema could not be read consistently with the binlog position: DDL kept running during "
        f"{attempts} reads. Start again when the server's DDL is done"
    )
