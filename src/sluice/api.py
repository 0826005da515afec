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
from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, ChangeCapture
from sluice.cdc.capture_start import StartRequest, prepare_capture
from sluice.cdc.filters import table_filter
from sluice.cdc.follow import FollowConfig, follow
from sluice.cdc.records import RowChange
from sluice.dsn import parse_dsn
from sluice.io.binlog_file import iter_events, iter_raw_spans
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
    paths: PathLike | Iterable[PathLike],
    *,
    tables: str | None = None,
    ops: Iterable[str] | None = None,
    verify_checksum: bool = True,
    skip_incidents: bool = False,
) -> Iterator[RowChange]:
    """Every row change of the committed transactions in the binlog files, in order.

    ``tables`` is a regex on ``db.table``; ``ops`` a subset of insert/update/delete/history/delete_history. Column names
    come from the binlog (``binlog_row_metadata=FULL``) or from the DDL earlier in the files. An
    INCIDENT event (the server failed to log some changes) raises ``DataLossError`` unless
    ``skip_incidents``.
    """
    config = CaptureConfig(
        table_filter=table_filter(tables, None),
        ops=None if ops is None else frozenset(ops),
        verify_checksum=verify_checksum,
        skip_incidents=skip_incidents,
    )
    capture: ChangeCapture | None = None
    for path in _paths(paths):
        name = os.path.basename(os.fspath(path))
        if capture is None:
            capture = ChangeCapture(config, Checkpoint(name, 4))
        for committed in capture.feed_file(name, os.fspath(path), iter_raw_spans(os.fspath(path))):
            for record in committed.records:
                if type(record) is RowChange:
                    yield record


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
    from_now: bool = False,
    until_end: bool = False,
    tables: str | None = None,
    ops: Iterable[str] | None = None,
    checkpoint_dir: PathLike | None = None,
    skip_incidents: bool = False,
) -> Iterator[RowChange]:
    """Row changes of committed transactions from a live server, reconnecting when it goes away.

    With ``checkpoint_dir`` the position after each transaction whose changes were all consumed
    is saved there and a later call resumes from it (at least once: the changes of a transaction
    interrupted half-way are delivered again). An INCIDENT event raises ``DataLossError`` unless
    ``skip_incidents``.
    """
    connection = parse_dsn(dsn)
    keep = table_filter(tables, None)
    request = StartRequest(file=file, pos=pos, gtid=gtid, from_now=from_now)
    begin = prepare_capture(connection, request, checkpoint_dir=checkpoint_dir, include=keep)
    config = CaptureConfig(table_filter=keep, ops=None if ops is None else frozenset(ops),
                           skip_incidents=skip_incidents)
    capture = ChangeCapture(config, begin.start, begin.tracker)
    for committed in follow(FollowConfig(connection, until_end=until_end), capture):
        for record in committed.records:
            if type(record) is RowChange:
                yield record
        if begin.checkpoint is not None:
            begin.checkpoint.save(committed.end)


def _paths(paths: PathLike | Iterable[PathLike]) -> list[PathLike]:
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    return list(paths)
