"""The public Python API: iterate decoded events or row changes from binlog files or a live server.

    import sluice

    for change in sluice.read_changes(["binlog.000001"], tables=r"shop\\..*"):
        print(change.op, change.table, change.after)

    for change in sluice.stream_changes("mysql://repl:secret@db:3306/", until_end=True):
        ...

Events are the frozen dataclasses of ``sluice.binlog.events``; row changes are
``sluice.cdc.records.RowChange`` (``as_dict()`` gives the JSON-lines record).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

from sluice.binlog.parser import EventParser, ParserConfig
from sluice.cdc.records import RowChange, RowChangeBuilder
from sluice.commands.dump import table_filter
from sluice.dsn import parse_dsn
from sluice.io.binlog_file import iter_events
from sluice.io.replication import ReplicationStream, StreamConfig

PathLike = str | os.PathLike[str]


def read_events(
    paths: PathLike | Iterable[PathLike], *, tables: str | None = None, verify_checksum: bool = True
) -> Iterator[tuple[str, int, Any]]:
    """``(file, offset, event)`` for every event of the binlog files, in order."""
    config = ParserConfig(verify_checksum=verify_checksum, table_filter=table_filter(tables, None))
    for path in _paths(paths):
        name = os.path.basename(os.fspath(path))
        for offset, event in iter_events(os.fspath(path), EventParser(config)):
            yield name, offset, event


def read_changes(
    paths: PathLike | Iterable[PathLike], *, tables: str | None = None, verify_checksum: bool = True
) -> Iterator[RowChange]:
    """Every row change in the binlog files; ``tables`` is a regex on ``db.table``."""
    yield from RowChangeBuilder().changes(read_events(paths, tables=tables, verify_checksum=verify_checksum))


def stream_events(
    dsn: str,
    *,
    file: str | None = None,
    pos: int = 4,
    gtid: str | None = None,
    until_end: bool = False,
    tables: str | None = None,
) -> Iterator[tuple[str, int, Any]]:
    """``(file, offset, event)`` from a live server, as a replica receives them."""
    config = StreamConfig(parse_dsn(dsn), file=file, pos=pos, gtid=gtid, until_end=until_end)
    with ReplicationStream(config) as stream:
        parser: EventParser | None = None
        for raw in stream:
            if parser is None:
                parser = EventParser(
                    ParserConfig(initial_checksum=stream.checksum_algorithm, table_filter=table_filter(tables, None))
                )
            yield raw.file, raw.pos, parser.parse(raw.data, file=raw.file, offset=raw.pos)


def stream_changes(
    dsn: str,
    *,
    file: str | None = None,
    pos: int = 4,
    gtid: str | None = None,
    until_end: bool = False,
    tables: str | None = None,
) -> Iterator[RowChange]:
    """Row changes from a live server."""
    events = stream_events(dsn, file=file, pos=pos, gtid=gtid, until_end=until_end, tables=tables)
    yield from RowChangeBuilder().changes(events)


def _paths(paths: PathLike | Iterable[PathLike]) -> list[PathLike]:
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    return list(paths)
