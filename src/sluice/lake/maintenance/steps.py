"""Maintenance of the lake's Delta tables: compaction, checkpoints, log cleanup and VACUUM.

Every table the pipeline writes (the mirrors ``LAKE/<db>/<table>``, the change log
``LAKE/_sluice/changes``, the archived mirrors under ``LAKE/_sluice/archive/``) gathers small files
(a file or two per batch), log entries (one or more per batch) and files no version needs any more
(every MERGE rewrites files). Each step here is one delta-rs call on one table, named by its URI,
with the caller's ``storage_options`` (None for a local path), so the same code runs on any store
delta-rs writes:

- ``compact``: ``optimize.compact`` in two tiers, so that a byte is rewritten a few times, not once
  per compaction while a file grows toward the target. Once the table has ``min_small_files`` files
  below ``small_file_size`` they are packed into files of about that size; once it has
  ``min_small_files`` files between that and ``target_file_size``, those are packed into files of
  about the target size. (A single tier toward the target would rewrite the growing file of a table
  that gains a small file per batch, a change log's, at every compaction until it reached the target.)
  Its commit has ``dataChange=false``: a reader sees the same rows, the change feed shows nothing
  for it, and the pipeline's app transactions carry over. On an object store the bins are packed
  side by side (``REMOTE_COMPACTION_TASKS``), as each reads its files one after another.
- ``checkpoint``: ``create_checkpoint`` once ``checkpoint_interval`` commits came after the last one,
  then ``cleanup_metadata``, which deletes log entries older than both the checkpoint and the
  table's ``delta.logRetentionDuration`` (30 days unless set). The checkpoint holds the app
  transactions, so a replayed batch is still recognised after the log before it is gone.
  This is the only log cleanup of a table the pipeline looks after: ``leave_log_cleanup`` sets its
  ``delta.enableExpiredLogCleanup`` to false. Otherwise delta-rs looks for expired entries after
  every commit, listing the whole log each time, and a table committed to every second holds
  thousands of entries within an hour, so every commit takes longer as the log grows.
- ``vacuum``: deletes files no version within ``retention_hours`` needs (Delta's 7 days by default),
  and files no commit names (a killed writer's, a killed compaction's) once that old too. A shorter
  retention is refused unless ``allow_short_retention``: a reader or writer still on an older
  version would find its files gone.

None of these changes what a reader sees, and a kill at any moment leaves a valid table: a
compaction's files are committed in one commit or belong to no version (the next VACUUM past the
retention removes them), a checkpoint is written whole before ``_last_checkpoint`` names it, and
VACUUM deletes only files no version needs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Final

from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from sluice.errors import ConfigError, MaintenanceError, SluiceError
from sluice.lake.data_files import LAKE_WRITER
from sluice.lake.layout import LakeTable
from sluice.lake.storage import lake_store

__all__ = [
    "COMMIT_LOG_CLEANUP", "DEFAULT_RETENTION_HOURS", "STEPS", "MaintenanceConfig", "StepResult",
    "TableState", "checkpoint", "compact", "due_steps", "inspect", "leave_log_cleanup", "run_step",
    "vacuum",
]

#: Delta's own default for ``delta.deletedFileRetentionDuration``: 7 days.
DEFAULT_RETENTION_HOURS: Final = 168
#: The steps, in the order they run on a table.
STEPS: Final = ("compact", "checkpoint", "vacuum")
#: Bins a compaction on an object store packs at once (delta-rs' default is the number of CPUs): each
#: bin reads its files one after another, three round trips a file, so on a store that answers in
#: tens of milliseconds the bins side by side set how long the compaction holds the pipeline.
REMOTE_COMPACTION_TASKS: Final = 8
#: The table property that has every commit look for expired log entries (true unless set).
COMMIT_LOG_CLEANUP: Final = "delta.enableExpiredLogCleanup"


@dataclass(frozen=True, slots=True)
class MaintenanceConfig:
    """How and when the lake's tables are maintained (``[maintenance]`` in ``sluice run``'s config).

    The defaults suit a 1 s trigger: a table is compacted once it has 16 small files (a mirror's
    MERGE rewrites whole files, so files stay well below Delta's 100 MB), checkpointed every 100
    commits as Delta does by default, and vacuumed once a day; between two micro-batches the
    pipeline starts maintenance steps only within ``budget`` seconds.
    """

    enabled: bool = True
    target_file_size: int = 32 << 20  # bytes; the second tier of compaction writes files of about this size
    small_file_size: int = 0  # bytes; the first tier packs files below this into files of about this size
    # (0: an eighth of target_file_size)
    min_small_files: int = 16  # compact a tier once this many of the table's files are in it
    checkpoint_interval: int = 100  # commits between two checkpoints
    retention_hours: float = DEFAULT_RETENTION_HOURS  # VACUUM keeps what versions this recent need
    vacuum_interval: float = 86400.0  # seconds between two VACUUMs of a table
    budget: float = 0.5  # seconds of maintenance steps started per batch boundary
    rescan_interval: float = 60.0  # seconds between two listings of the lake's tables (new mirrors)
    look_interval: float = 30.0  # seconds between two looks of the pipeline at a table that needed nothing
    allow_short_retention: bool = False

    def __post_init__(self) -> None:
        if self.small_file_size == 0 and isinstance(self.target_file_size, int):
            object.__setattr__(self, "small_file_size", max(1, self.target_file_size // 8))
        for name in ("target_file_size", "small_file_size", "min_small_files", "checkpoint_interval"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"maintenance {name} must be a whole number >= 1; found {value!r}")
        for name in ("retention_hours", "vacuum_interval", "budget", "rescan_interval", "look_interval"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ConfigError(f"maintenance {name} must be a number >= 0; found {value!r}")
        if self.small_file_size > self.target_file_size:
            raise ConfigError(f"maintenance small_file_size ({self.small_file_size}) must not be above "
                              f"target_file_size ({self.target_file_size})")
        if self.retention_hours < DEFAULT_RETENTION_HOURS and not self.allow_short_retention:
            raise ConfigError(
                f"a VACUUM retention of {self.retention_hours:g} hours is below Delta's default of "
                f"{DEFAULT_RETENTION_HOURS} hours (7 days): a reader or writer still using an older version (a "
                "time-travel or change-feed read, a long Spark job) would find its files deleted. Give "
                "allow_short_retention (sluice maintain --allow-short-retention) to do it anyway"
            )


@dataclass(frozen=True, slots=True)
class TableState:
    """What maintenance needs to know of a table: its version, active files and bytes, how many of
    those files are in each tier of compaction (``small``: below ``small_file_size``; ``medium``:
    from there to below ``target_file_size``), the version of its last checkpoint (-1: none), and
    whether its commits clean its log themselves (``COMMIT_LOG_CLEANUP``)."""

    version: int
    files: int
    bytes: int
    small_files: int
    small_bytes: int
    medium_files: int
    medium_bytes: int
    checkpoint_version: int
    commit_cleanup: bool


@dataclass(frozen=True, slots=True)
class StepResult:
    """What one step did to a table (or, with ``dry_run``, would do): ``summary`` is one phrase."""

    table: str
    step: str
    done: bool
    summary: str


def inspect(uri: str, config: MaintenanceConfig, storage_options: dict[str, str] | None = None, *,
            dt: DeltaTable | None = None) -> TableState:
    """The table's version, files and bytes, and its last checkpoint's version. ``dt``: the table
    already read at its newest version (else it is read here)."""
    return _state(_open(uri, storage_options, dt), config, storage_options)


def _open(uri: str, storage_options: dict[str, str] | None, dt: DeltaTable | None) -> DeltaTable:
    """``dt`` when given (a table its caller keeps up to date), else the table read now."""
    return dt if dt is not None else DeltaTable(uri, storage_options=storage_options)


def _state(dt: DeltaTable, config: MaintenanceConfig, storage_options: dict[str, str] | None) -> TableState:
    sizes = dt.get_add_actions().column("size_bytes").to_pylist()
    small = [s for s in sizes if s < config.small_file_size]
    medium = [s for s in sizes if config.small_file_size <= s < config.target_file_size]
    cleanup = dt.metadata().configuration.get(COMMIT_LOG_CLEANUP, "true").strip().lower() != "false"
    return TableState(dt.version(), len(sizes), sum(sizes), len(small), sum(small), len(medium), sum(medium),
                      _checkpoint_version(dt.table_uri, storage_options), cleanup)


def leave_log_cleanup(table: LakeTable, storage_options: dict[str, str] | None = None, *,
                      dt: DeltaTable | None = None) -> None:
    """Have the table's commits leave its log alone (``COMMIT_LOG_CLEANUP`` false, one commit of its
    metadata): the ``checkpoint`` step deletes the expired entries. Only a writer that is alone on
    the table sets it (the pipeline, between batches): a concurrent commit would fail on it."""
    try:
        _open(table.uri, storage_options, dt).alter.set_table_properties(
            {COMMIT_LOG_CLEANUP: "false"})
    except (DeltaError, OSError) as exc:
        raise MaintenanceError(f"cannot set {COMMIT_LOG_CLEANUP} on {table.name}: {exc}") from exc


def _compaction_target(state: TableState, config: MaintenanceConfig) -> int | None:
    """The file size the compaction due packs toward (its tier), None when neither tier is due."""
    if state.small_files >= config.min_small_files:
        return config.small_file_size
    if state.medium_files >= config.min_small_files:
        return config.target_file_size
    return None


def _checkpoint_version(uri: str, storage_options: dict[str, str] | None) -> int:
    """The version ``_delta_log/_last_checkpoint`` names, -1 when the table has no checkpoint: one
    GET (a file system's reader would ask for the object's size first, a round trip more)."""
    try:
        found = lake_store(uri, storage_options).get("_delta_log/_last_checkpoint")
        return -1 if found is None else int(json.loads(found)["version"])
    except (SluiceError, ValueError, KeyError, TypeError):
        return -1


def due_steps(state: TableState, config: MaintenanceConfig, since_vacuum: float | None) -> list[str]:
    """The steps a table needs now, in ``STEPS`` order; ``since_vacuum``: seconds since this
    process last vacuumed it (None: not yet)."""
    due = []
    if _compaction_target(state, config) is not None:
        due.append("compact")
    if state.version - state.checkpoint_version >= config.checkpoint_interval:
        due.append("checkpoint")
    if since_vacuum is None or since_vacuum >= config.vacuum_interval:
        due.append("vacuum")
    return due


def compact(table: LakeTable, config: MaintenanceConfig, storage_options: dict[str, str] | None = None, *,
            dry_run: bool = False, dt: DeltaTable | None = None) -> StepResult:
    """Pack the files of the tier that is due (module docstring) into files of about its size, or
    with neither due, every file below ``target_file_size`` (one commit, ``dataChange=false``)."""
    dt = _open(table.uri, storage_options, dt)
    state = _state(dt, config, storage_options)
    target = _compaction_target(state, config) or config.target_file_size
    if dry_run:
        files, size = ((state.small_files, state.small_bytes) if target == config.small_file_size else
                       (state.small_files + state.medium_files, state.small_bytes + state.medium_bytes))
        what = (f"would compact {files} small files ({_size(size)}) into files of about {_size(target)}"
                if files > 1 else "no small files to compact")
        return StepResult(table.name, "compact", False, what)
    metrics = dt.optimize.compact(target_size=target, writer_properties=LAKE_WRITER,
                                  max_concurrent_tasks=None if storage_options is None else REMOTE_COMPACTION_TASKS)
    removed, added = int(metrics.get("numFilesRemoved", 0)), int(metrics.get("numFilesAdded", 0))
    if not removed:
        return StepResult(table.name, "compact", False, "nothing to compact")
    return StepResult(table.name, "compact", True, f"compacted {removed} files into {added}")


def checkpoint(table: LakeTable, config: MaintenanceConfig, storage_options: dict[str, str] | None = None, *,
               dry_run: bool = False, dt: DeltaTable | None = None) -> StepResult:
    """Write a checkpoint at the current version, then delete the log entries it makes expired."""
    dt = _open(table.uri, storage_options, dt)
    version = dt.version()
    if dry_run:
        return StepResult(table.name, "checkpoint", False,
                          f"would checkpoint version {version} and delete expired log entries")
    if _checkpoint_version(table.uri, storage_options) != version:
        dt.create_checkpoint()
    dt.cleanup_metadata()
    return StepResult(table.name, "checkpoint", True, f"checkpoint at version {version}")


def vacuum(table: LakeTable, config: MaintenanceConfig, storage_options: dict[str, str] | None = None, *,
           dry_run: bool = False, dt: DeltaTable | None = None) -> StepResult:
    """Delete the files no version within the retention needs, and unreferenced files as old."""
    dt = _open(table.uri, storage_options, dt)
    hours = config.retention_hours
    # The default leaves the retention to the table (its delta.deletedFileRetentionDuration, else 7 days).
    retention = None if hours == DEFAULT_RETENTION_HOURS else math.ceil(hours)
    deleted = dt.vacuum(retention_hours=retention, dry_run=dry_run, full=True,
                        enforce_retention_duration=hours >= DEFAULT_RETENTION_HOURS)
    verb = "would delete" if dry_run else "deleted"
    return StepResult(table.name, "vacuum", not dry_run,
                      f"{verb} {len(deleted)} files older than {hours:g} h that no version needs")


_RUN = {"compact": compact, "checkpoint": checkpoint, "vacuum": vacuum}


def run_step(step: str, table: LakeTable, config: MaintenanceConfig, storage_options: dict[str, str] | None = None,
             *, dry_run: bool = False, dt: DeltaTable | None = None) -> StepResult:
    """Run one of ``STEPS`` on a table (``dt``: the table already read at its newest version); a
    failure of the store or of Delta is a ``MaintenanceError`` naming the table and the step (what
    a reader sees is unchanged by it)."""
    try:
        return _RUN[step](table, config, storage_options, dry_run=dry_run, dt=dt)
    except (DeltaError, OSError) as exc:
        raise MaintenanceError(
            f"{step} of {table.name} ({table.uri}) failed ({_first_line(exc)}); what its readers see is "
            "unchanged. Run it again (a compaction that met a concurrent commit of a running pipeline is "
            "retried at the table's next turn)"
        ) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _size(n: int) -> str:
    value = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} bytes"

