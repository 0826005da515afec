"""The executed GTIDs at a binlog position, established exactly by reading its file from the start.

A stream started at ``FILE:POS`` inside a file never sees that file's PREVIOUS_GTIDS (MySQL) or
GTID_LIST (MariaDB), and the server's ``SHOW BINARY LOG STATUS`` reads its position and its GTID
set at two moments, so neither says which GTIDs were executed at ``POS``. ``executed_at`` reads
``FILE`` from its first event up to ``POS``: the file's PREVIOUS_GTIDS / GTID_LIST plus the GTID of
every transaction before ``POS`` is the set a replica stopped there would hold. Positions between
two transactions share the set of the boundary before the next one. A position inside a
transaction is a ``ConfigError``; a server without GTIDs leaves the checkpoint as it was. MySQL
writes a PREVIOUS_GTIDS event whether GTIDs are on or not, so an empty one before the position and
no GTID since say nothing by themselves: on a server with ``gtid_mode`` ON the set there is the
empty set (``""``), which a failover goes on from as from any other.

``since``, a boundary known exactly on the same server at or before the position and in its file
(the snapshot's start, a chunk's high watermark), shortens the read: from there, not from the
file's start (one in an earlier file would lengthen it). A
position whose server is known is read on that server only: when the address reaches another one,
the read stops with ``SourceMovedError`` (the position means nothing there).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace

from sluice.binlog.position import Checkpoint, SourceIdentity
from sluice.cdc.capture import CaptureConfig, CaptureOutput, ChangeCapture, CommittedTransaction
from sluice.cdc.follow import FollowConfig, follow
from sluice.errors import BinlogPurgedError, ConfigError, SourceChangedError, SourceMovedError
from sluice.io.connection import Connection

__all__ = ["executed_at", "on_server"]

_GTID_MODE_ON: dict[str, bool] = {}  # server_uuid -> whether gtid_mode is ON (``_gtids_on``)

log = logging.getLogger(__name__)


def _transactions(config: FollowConfig, capture: ChangeCapture, start: Checkpoint) -> Iterator[CommittedTransaction]:
    """``follow`` to the server's end; a purged file is named at the start asked for, not at the
    file's first event it is read from."""
    try:
        for committed in follow(replace(config, until_end=True), capture):
            on_server(capture.boundary, start)
            yield committed
        on_server(capture.boundary, start)
    except SourceChangedError as exc:
        raise SourceMovedError(str(exc)) from None
    except BinlogPurgedError as exc:
        facts = getattr(exc, "facts", str(exc)).replace(f"{start.file}:4 ", f"{start.file}:{start.pos} ", 1)
        raise BinlogPurgedError(facts, file=exc.file, gtids=exc.gtids) from None


def on_server(read: Checkpoint, expected: Checkpoint) -> None:
    """Raise ``SourceMovedError`` when ``read`` was read on another server than ``expected`` names."""
    if read.source is not None and expected.source is not None and not read.source.same_server(expected.source):
        raise SourceMovedError(
            f"the source's address reached another server ({read.source}) while the binlog of "
            f"{expected.source} was read up to {expected.file}:{expected.pos}; that position means nothing there"
        )


def executed_at(config: FollowConfig, start: Checkpoint, since: Checkpoint | None = None) -> Checkpoint:
    """``start`` with the executed GTID set there (module docstring); as it is when it has one already,
    names no file, or the server writes no GTIDs. ``since``: an exact boundary on the same server at
    or before ``start`` in its file to read from instead of the file's start (ignored when it is not one)."""
    if start.gtid_set is not None or not start.file:
        return start
    usable = (since is not None and since.gtid_set is not None and since.file == start.file
              and since.pos <= start.pos
              and (since.source is None or start.source is None or since.source.same_server(start.source)))
    if usable and since is not None and since.key == start.key:
        return Checkpoint(start.file, start.pos, since.gtid_set, start.source)
    nothing = CaptureConfig(table_filter=lambda _db, _table: False, output=CaptureOutput.COUNTS)
    begin = since.on(start.source) if usable and since is not None else Checkpoint(start.file, 4, None, start.source)
    capture = ChangeCapture(nothing, begin)
    goal = start.key
    found: str | None = None
    for committed in _transactions(config, capture, start):
        tx = committed.transaction
        if tx.start.key >= goal:  # no transaction between the start and this one's beginning
            found = tx.start.gtid_set
            break
        if tx.end.key == goal:
            found = tx.end.gtid_set
            break
        if tx.end.key > goal:
            raise ConfigError(f"the binlog position {start.file}:{start.pos} is inside the transaction at "
                              f"{tx.start.file}:{tx.start.pos}..{tx.end.pos}: a stream starts at a transaction "
                              "boundary (the end of a transaction, or a checkpoint sluice wrote)")
    else:
        if capture.boundary.key <= goal:
            found = capture.boundary.gtid_set
    if found is None and not _gtids_on(config, start.source):
        return start
    found = found or ""
    log.info("the executed GTIDs at %s:%d, read from %s:%d: %s", start.file, start.pos, begin.file, begin.pos,
             found)
    return Checkpoint(start.file, start.pos, found, start.source)


def _gtids_on(config: FollowConfig, source: SourceIdentity | None) -> bool:
    """Whether the server is a MySQL with ``gtid_mode`` ON (a MariaDB's GTID_LIST always says its
    position, so it never asks). Asked once per server and process: a snapshot asks at every chunk's
    watermarks, and on a server without GTIDs each would otherwise open a connection to learn it."""
    if source is not None and source.flavor == "mariadb":
        return False
    if source is not None and source.server in _GTID_MODE_ON:
        return _GTID_MODE_ON[source.server]
    with Connection.open(config.connection) as conn:
        on = not conn.is_mariadb and str(conn.query("SELECT @@GLOBAL.gtid_mode").rows[0][0] or "").upper() == "ON"
    if source is not None:
        _GTID_MODE_ON[source.server] = on
    return on
