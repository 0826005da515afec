"""The running pipeline's care of its lake's tables, on the driver between two micro-batches.

``Upkeep.start`` turns Delta's Change Data Feed on for mirrors made before it was on (when the
pipeline has it on). ``Upkeep.after_batch``, called once a batch has committed, looks at the lake's
tables in turn (mirrors, change log, archive, pending changes; the list is read again every
``rescan_interval`` seconds) and runs the maintenance steps each one is due for
(``sluice.lake.maintenance.steps.due_steps``), one step after the other while the boundary's time
``budget`` lasts: a step is started only within the budget, so a batch waits at most the budget
plus the one step that started last. A table whose turn ran out of time is looked at first at the
next boundary. A look costs a read of the table's log, so a table that needed nothing is not
looked at again for ``look_interval`` seconds (one that had steps run is, for its new sizes): a
step becomes due only after many commits, and a boundary then costs nothing for most tables.
A look at a table the pipeline writes (a mirror, the change log, a pending table) reads only its
commits since the last look, through the table the writer keeps between batches (``open_table``),
and after a step commits to it (a compaction, a VACUUM; a checkpoint adds no commit) the writer
hears so (``committed_to``) and reads that commit before its next batch; an archived mirror, which
no batch writes and a user may remove, is read whole.
A table whose commits still clean its log themselves (Delta's default, which lists the whole log
after each commit) is set to leave that to the checkpoint step, once, after its first look
(``maintenance.leave_log_cleanup``).
Nothing runs while a batch commits, so no maintenance commit races the pipeline's own; a kill
in a step leaves the table valid (``sluice.lake.maintenance.steps``) and the restarted pipeline
replays its batch exactly once.

A step that fails is reported on the progress line and counted, and the pipeline goes on: a table
that is not maintained for a while is slower to read, never wrong.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from deltalake import DeltaTable

from sluice.errors import MaintenanceError
from sluice.lake.layout import Lake, LakeTable, open_lake
from sluice.lake.maintenance.change_feed import enable_change_feed
from sluice.lake.maintenance.steps import (
    MaintenanceConfig,
    due_steps,
    inspect,
    leave_log_cleanup,
    run_step,
)

__all__ = ["Upkeep"]

log = logging.getLogger(__name__)

class Upkeep:
    """The maintenance schedule of one lake (module docstring); ``metrics`` is a ``PipelineMetrics`` or None."""

    def __init__(self, lake: str | Lake, config: MaintenanceConfig, *,
                 progress: Callable[[str], None] | None = None, metrics: Any = None,
                 clock: Callable[[], float] = time.monotonic,
                 open_table: Callable[[str], DeltaTable | None] | None = None,
                 committed_to: Callable[[str], None] | None = None) -> None:
        self.lake = open_lake(lake)
        self.config = config
        self.storage_options = self.lake.delta_options()
        self.progress = progress or (lambda text: log.info("%s", text))
        self.metrics = metrics
        self.clock = clock
        # a table URI -> the table at its newest version (None: gone); by default read whole at each look
        self.open_table = open_table or self._read_whole
        self.committed_to = committed_to or (lambda _uri: None)  # a table URI a step committed to
        self._tables: list[LakeTable] = []
        self._scanned: float | None = None
        self._next = 0  # index in _tables of the table whose turn is next
        self._vacuumed: dict[str, float] = {}  # table URI -> clock() of its last VACUUM by this process
        self._next_look: dict[str, float] = {}  # table URI -> clock() before which it is not looked at
        self.steps_run = 0
        self.failures = 0

    def start(self, *, change_feed: bool) -> None:
        """At the pipeline's start: turn the change feed on for every mirror that lacks it."""
        if not change_feed:
            return
        for table in self.lake.tables():
            if table.kind == "mirror" and enable_change_feed(table.uri, self.storage_options):
                self.progress(f"the mirror of {table.name} now writes Delta's change data feed")

    def after_batch(self) -> None:
        """Run the maintenance steps that are due, within the time budget (module docstring)."""
        if not self.config.enabled:
            return
        started = self.clock()
        if self._scanned is None or started - self._scanned >= self.config.rescan_interval:
            self._rescan(started)
        for _ in range(len(self._tables)):
            if self.clock() - started >= self.config.budget:
                return
            table = self._tables[self._next % len(self._tables)]
            if self._turn(table, started):
                self._next = (self._next + 1) % len(self._tables)
            else:
                return

    def _read_whole(self, uri: str) -> DeltaTable:
        return DeltaTable(uri, storage_options=self.storage_options)

    def _rescan(self, now: float) -> None:
        current = self._tables[self._next % len(self._tables)].uri if self._tables else None
        self._tables = self.lake.tables()
        self._scanned = now
        uris = [t.uri for t in self._tables]
        self._next = uris.index(current) if current in uris else 0

    def _turn(self, table: LakeTable, started: float) -> bool:
        """Look at one table and run its due steps while the budget lasts; False when time ran out
        before its last due step (the table keeps its turn)."""
        config = self.config
        if self.clock() < self._next_look.get(table.uri, 0.0):
            return True
        read = self._read_whole if table.kind == "archive" else self.open_table
        try:
            dt = read(table.uri)
            state = None if dt is None else inspect(table.uri, config, self.storage_options, dt=dt)
        except Exception as exc:
            log.debug("maintenance: cannot read %s: %s", table.uri, exc)
            state = None
        if state is None:  # moved or archived by a DDL since the scan: the next scan finds it
            return True
        if self.metrics is not None:
            self.metrics.table_size(table.name, state.files, state.bytes)
        last = self._vacuumed.get(table.uri)
        due = due_steps(state, config, None if last is None else started - last)
        if not due:
            self._next_look[table.uri] = self.clock() + config.look_interval
        for step in due:
            if self.clock() - started >= config.budget:
                return False
            began = self.clock()
            try:
                result = run_step(step, table, config, self.storage_options, dt=dt)
            except MaintenanceError as exc:
                self.committed_to(table.uri)  # it may have committed before it failed
                self.failures += 1
                self.progress(f"maintenance: {exc}")
                if self.metrics is not None:
                    self.metrics.maintenance_failed(step)
                continue
            finally:
                if step == "vacuum":
                    self._vacuumed[table.uri] = self.clock()  # a failed one too: tried again a day later
            self.steps_run += 1
            if step != "checkpoint":  # a checkpoint adds no commit: what the writer keeps is still current
                self.committed_to(table.uri)
            log.info("maintenance: %s: %s (%.2fs)", table.name, result.summary, self.clock() - began)
            if self.metrics is not None:
                self.metrics.maintained(step, time.time())
        if state.commit_cleanup:
            self.committed_to(table.uri)  # the setting is a commit (it is read before the next batch either way)
            try:
                leave_log_cleanup(table, self.storage_options, dt=dt)
            except MaintenanceError as exc:  # its commits go on cleaning the log: slower, never wrong
                log.debug("maintenance: %s", exc)
            else:
                log.info("maintenance: %s: its log is cleaned at checkpoints, not at every commit", table.name)
        return True
