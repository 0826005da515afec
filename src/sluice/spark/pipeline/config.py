"""What ``sluice run`` runs: ``PipelineConfig``, one frozen object of its settings, checked before
Spark starts (a bad trigger or snapshot mode fails here), with where the lake and Spark's
checkpoint are. Its field defaults are the settings' defaults: ``sluice run`` leaves a setting
given neither in its file nor on its command line to them (``sluice.commands.run_settings``)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sluice.cdc.capture import PART_BYTES
from sluice.dsn import with_read_timeout
from sluice.errors import ConfigError
from sluice.lake.layout import Lake, open_lake
from sluice.lake.lease import DEFAULT_TTL
from sluice.lake.maintenance.steps import MaintenanceConfig
from sluice.lake.mirror.pending import MirrorCadence
from sluice.spark.pipeline.modes import SNAPSHOT_MODES

__all__ = ["ONCE", "PipelineConfig", "interval"]

ONCE = frozenset({"once", "available-now", "availableNow"})  # --trigger values: all there is now, then stop


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """What ``sluice run`` runs: source, lake, tables, trigger and Spark master."""

    source: str
    lake: str
    tables: str | None = None
    exclude_tables: str | None = None
    trigger: str = "1s"  # a processing-time interval ("1s", "500ms", "2 minutes") or "once"
    master: str | None = None
    starting_position: str = "earliest"
    # initial: snapshot the tables first, then stream; only: snapshot and stop; when-needed: initial, and
    # snapshot every captured table again when the stream's position was purged from the server
    snapshot: str = "never"
    chunk_rows: int | None = None  # rows per snapshot chunk; None: 64 MiB of the table's average row
    snapshot_connections: int | None = None  # chunks read at once; None: one per Spark core, at most 8
    max_rows_per_batch: int | None = None  # counting rows makes the driver decode ahead: bytes by default
    max_bytes_per_batch: int | None = 256 << 20
    part_bytes: int = PART_BYTES  # a task writes its range in parts of about this much binlog (spark.source.parts)
    conf: tuple[tuple[str, str], ...] = ()
    skip_incidents: bool = False  # go on past INCIDENT events (the server failed to log changes there)
    metrics_port: int | None = None  # sluice run serves Prometheus metrics there (0: any free port)
    metrics_host: str = "0.0.0.0"
    storage: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # [lake.storage]: may hold secrets
    checkpoint_dir: str | None = None  # Spark's checkpoint (default: see checkpoint_path)
    change_feed: bool = True  # mirrors write Delta's Change Data Feed (sluice.lake.maintenance.change_feed)
    maintenance: MaintenanceConfig = field(default_factory=MaintenanceConfig)  # between batches (pipeline.upkeep)
    mirror: MirrorCadence = field(default_factory=MirrorCadence)  # when pending changes are MERGEd (lake.pending)
    # Seconds a connection to the source may stay silent before it is made again: the source DSN's
    # read_timeout where that gives none (None: the DSN's, else sluice.dsn.DEFAULT_READ_TIMEOUT; 0: none)
    stall_timeout: float | None = None
    writer_lease: float = DEFAULT_TTL  # seconds the lake's writer lease lasts unrenewed (sluice.lake.lease)
    # Columns kept out or hashed (sluice.cdc.column_rules.ColumnRules: it holds the key, shown nowhere)
    columns: Any = field(default=None, repr=False)
    # Tables ('db.table' matched in full) that keep a history beside the mirror (spark.pipeline.history_feed)
    history: str | None = None
    # Tables merged into one mirror (sluice.cdc.routes.Routes), None: every table has its own
    routes: Any = None

    def __post_init__(self) -> None:
        if self.stall_timeout is not None:
            if self.stall_timeout < 0:
                raise ConfigError(f"--stall-timeout is a number of seconds, 0 or more; found {self.stall_timeout}")
            object.__setattr__(self, "source", with_read_timeout(self.source, self.stall_timeout))
        if self.trigger not in ONCE:
            interval(self.trigger)  # a bad trigger fails here, before Spark starts
        if self.snapshot not in SNAPSHOT_MODES:
            raise ConfigError(f"--snapshot is {', '.join(SNAPSHOT_MODES[:-1])} or {SNAPSHOT_MODES[-1]}; "
                              f"found {self.snapshot!r}")
        if not self.writer_lease > 0:
            raise ConfigError(f"--writer-lease is a number of seconds above 0; found {self.writer_lease!r}")
        if self.snapshot_connections is not None and self.snapshot_connections < 1:
            raise ConfigError(f"--snapshot-connections is at least 1; found {self.snapshot_connections}")

    @property
    def store(self) -> Lake:
        """Where the lake lives, with which storage options, and its layout."""
        return open_lake(self.lake, dict(self.storage))

    @property
    def histories(self) -> tuple[str | None, bool]:
        """``--history`` and whether the run streams (writes histories): what the lake records of it."""
        return self.history, self.snapshot != "only"

    @property
    def checkpoint_path(self) -> Path:
        """Spark's checkpoint: ``--checkpoint-dir``, else ``LAKE/_sluice/checkpoint`` for a lake on a file
        system, else a folder named after the lake in the user's state directory."""
        if self.checkpoint_dir:
            return Path(self.checkpoint_dir).expanduser().absolute()
        store = self.store
        if not store.remote:
            return Path(store.checkpoint)
        base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
        return base / "sluice" / "checkpoints" / hashlib.sha256(store.uri.encode()).hexdigest()[:16]


def interval(text: str) -> str:
    """Spark's processing-time interval of a --trigger value (1s, 500ms, 2m)."""
    t = text.strip().lower()
    for suffix, unit in (("ms", "milliseconds"), ("s", "seconds"), ("m", "minutes")):
        number = t[: -len(suffix)]
        if t.endswith(suffix) and number.replace(".", "", 1).isdigit():
            return f"{number} {unit}"
    if t and t[0].isdigit():
        return text
    raise ConfigError(f"--trigger takes an interval such as 1s, 500ms or 2m, or 'once'; found {text!r}")
