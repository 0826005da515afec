"""Starting or resuming a capture from a live server: the start position and the schema there.

``prepare_capture`` decides where a capture starts and with which schema:

* with a checkpoint directory that holds a checkpoint, it resumes there (an explicit start
  position is then refused: it would silently skip or repeat changes), and the schema comes from
  the schema history persisted next to the checkpoint;
* otherwise from ``--from FILE:POS``, ``--gtid SET``, ``--from-now`` (the server's current end) or,
  by default, the start of the earliest binlog file still on the server;
* a schema history that does not reach back to the start is bootstrapped from the server's
  ``information_schema`` (the tables as they are *now*, taken as the schema at the start; DDL
  logged since the start is sorted out by the tracker as the capture meets it, and where the
  binlog later disagrees, the TABLE_MAP cross-check fails loudly or, with
  ``binlog_row_metadata=FULL``, the binlog wins and the correction is recorded).

The checkpoint directory holds ``checkpoint.json`` (written atomically after every flushed
transaction) and ``schema-history.jsonl``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sluice.binlog.position import Checkpoint
from sluice.cdc.executed_at import executed_at
from sluice.cdc.follow import FollowConfig
from sluice.cdc.schema import Catalog, SchemaHistory, SchemaTracker
from sluice.cdc.schema_start import read_schema
from sluice.dsn import ConnectionConfig
from sluice.errors import ConfigError, SluiceError
from sluice.io.checkpoint_file import CheckpointFile
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_files, server_binlog_status

__all__ = ["CaptureStart", "StartRequest", "prepare_capture", "tracker_at"]

log = logging.getLogger(__name__)

CHECKPOINT_NAME = "checkpoint.json"
HISTORY_NAME = "schema-history.jsonl"


@dataclass(frozen=True, slots=True)
class StartRequest:
    """An explicit start position (at most one of them), or none for the default."""

    file: str | None = None
    pos: int = 4
    gtid: str | None = None
    from_now: bool = False

    @property
    def explicit(self) -> bool:
        """True when the user named a start (``--from``, ``--gtid`` or ``--from-now``)."""
        return self.file is not None or self.gtid is not None or self.from_now


@dataclass
class CaptureStart:
    """Everything a capture needs to begin: where, with which schema, and where to persist."""

    start: Checkpoint
    tracker: SchemaTracker
    flavor: str
    checkpoint: CheckpointFile | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # what the last run saved beside the checkpoint
    resumed: bool = False
    how: str = ""  # one line for the user: where and why it starts there


def prepare_capture(
    connection: ConnectionConfig,
    request: StartRequest,
    *,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    include: Callable[[str, str], bool] | None = None,
) -> CaptureStart:
    """Open a connection, find the start position and the schema in force there."""
    checkpoint: CheckpointFile | None = None
    history: SchemaHistory | None = None
    loaded = None
    if checkpoint_dir is not None:
        directory = Path(checkpoint_dir)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the checkpoint directory {directory}: {exc.strerror}") from None
        checkpoint = CheckpointFile(directory / CHECKPOINT_NAME)
        history = SchemaHistory.open(directory / HISTORY_NAME)
        loaded = checkpoint.load()
        if loaded is not None and request.explicit:
            raise ConfigError(
                f"{directory / CHECKPOINT_NAME} holds a checkpoint at {loaded[0]}; resuming there is the "
                "default. To start somewhere else, use another --checkpoint directory or delete that one"
            )
    with Connection.open(connection) as conn:
        flavor = conn.flavor
        if loaded is not None:
            start, extra = loaded
            how = f"resuming from the checkpoint at {start}"
            resumed = True
        else:
            start, how = _choose_start(conn, request)
            if checkpoint is not None:  # a kept position carries its GTIDs, established exactly
                start = executed_at(FollowConfig(connection, retries=8), start)
            extra, resumed = {}, False
        tracker = tracker_at(conn, start, history, include, lenient=True)
    return CaptureStart(start, tracker, flavor, checkpoint, extra, resumed, how)


def _choose_start(conn: Connection, request: StartRequest) -> tuple[Checkpoint, str]:
    if request.file is not None:
        return Checkpoint(request.file, request.pos), f"starting at {request.file}:{request.pos} as asked"
    if request.gtid is not None:
        return Checkpoint("", 4, request.gtid), f"starting after the GTIDs {request.gtid}"
    status = server_binlog_status(conn)
    if request.from_now:
        return (
            Checkpoint(status.file, status.pos),  # its GTID set is read apart from its position
            f"starting at the server's current end, {status.file}:{status.pos}",
        )
    files = server_binlog_files(conn)
    if not files:
        raise ConfigError(f"the server at {conn.config.redacted()} lists no binary logs (SHOW BINARY LOGS)")
    first = files[0][0]
    return (
        Checkpoint(first, 4),
        f"starting at the earliest binlog still on the server, {first}:4 "
        "(changes purged before it are not captured: use --from-now to start at the current end)",
    )


def tracker_at(conn: Connection, start: Checkpoint, history: SchemaHistory | None,
               include: Callable[[str, str], bool] | None = None, *, lenient: bool = False) -> SchemaTracker:
    """The schema tracker for a capture from ``start``: the history's catalog there, with the
    position it was read at and the tables met since, or else one read from the server now and
    recorded in the history at ``start``. ``lenient``: a schema the server cannot give leaves an
    empty catalog, with a warning, instead of the error."""
    flavor = conn.flavor
    catalog = history.catalog_at(start.file, start.pos) if history is not None and start.file else None
    if catalog is not None:
        assert history is not None
        read_at, met = history.read_ahead(start.file, start.pos)
        return SchemaTracker(catalog, history, flavor=flavor, read_at=read_at, met=met)
    try:
        catalog, now = read_schema(conn, include)
    except SluiceError as exc:
        if not lenient:
            raise
        log.warning(
            "could not read the schema from information_schema (%s); column names must then come from "
            "the binlog (binlog_row_metadata=FULL) or from CREATE/ALTER statements that follow",
            exc,
        )
        catalog, now = Catalog(), Checkpoint("", 4)
    read_at = (now.file, now.pos) if now.file else None
    if history is not None:
        history.record_bootstrap(start.file, start.pos, catalog, read_at, at=start)
    return SchemaTracker(catalog, history, flavor=flavor, read_at=read_at)
