"""The DDL of a micro-batch: the ``ddl`` rows of a micro-batch, turned into mirror changes.

For each ``ddl`` row (a DDL starts a batch of its own, in order with the DDLs after it) the catalog
in force just before it comes from the schema history, ``plan_ddl`` decides the mirror steps and
``MirrorDdl`` runs them exactly once.
A table whose snapshot read it after the DDL needs nothing (the snapshot has the new layout); one
whose snapshot chunks straddle it is re-read. Tables to re-read are snapshotted again, only those,
with the watermark method (``SnapshotRunner``), and the pipeline's ``SnapshotFilter`` is renewed so
that the stream leaves out of the mirror what the new chunks already hold.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sluice.cdc.filters import table_filter
from sluice.cdc.routes import Routes
from sluice.cdc.schema import SchemaHistory
from sluice.cdc.schema.bootstrap import SYSTEM_SCHEMAS
from sluice.lake.layout import Lake
from sluice.lake.sink import DeltaLake
from sluice.spark.ddl.apply import MirrorDdl
from sluice.spark.ddl.plan import MirrorStep, plan_ddl
from sluice.spark.ddl.routed import route_steps

__all__ = ["BatchDdl"]

log = logging.getLogger(__name__)


class BatchDdl:
    """Applies the DDL rows of micro-batches to the lake of one pipeline."""

    def __init__(self, lake: DeltaLake, history_path: Path, tables: str | None,
                 exclude_tables: str | None, progress: Callable[[str], None], columns: Any = None,
                 routes: Routes | None = None) -> None:
        self.lake = lake
        self.columns = columns  # ColumnRules: columns kept out or hashed
        self.routes = routes  # tables merged into one mirror: their steps are the routed mirror's
        self.history_path = history_path
        keep = table_filter(tables, exclude_tables)
        self.captured = lambda db, t: (db not in SYSTEM_SCHEMAS and not Lake.reserved(db)
                                       and (keep is None or keep(db, t)))
        self.mirror = MirrorDdl(lake, progress)
        self.progress = progress

    def apply(self, batch_id: int, rows: list[dict[str, Any]], snapshot_filter: Any) -> set[str]:
        """Apply the batch's DDL rows; returns the ``db.table`` names to snapshot again."""
        history = SchemaHistory.open(self.history_path)
        steps: list[tuple[tuple[str, int], MirrorStep]] = []
        for row in rows:
            file, pos = row["file"], row["pos"]
            ddl = json.loads(row["ddl"])
            before = history.catalog_at(file, pos)
            if before is None:
                log.warning("no schema history before the DDL at %s:%s; its tables are re-read", file, pos)
                planned = [MirrorStep("reread", db, table, why="no schema known before it")
                           for db, table in (name.split(".", 1) for name in ddl["tables"]) if self.captured(db, table)]
            else:
                planned = plan_ddl(before, ddl["sql"], ddl.get("default_db"), self.captured, before.flavor,
                                   self.columns)
            planned = [s for step in planned for s in self._against_snapshot(step, file, pos, snapshot_filter)]
            if self.routes is not None and before is not None:
                planned = route_steps(planned, self.routes, before, ddl["sql"], ddl.get("default_db"), self.captured,
                                      lambda name: self.lake.table(self.lake.table_path(*name)), self.columns)
            steps += [((file, pos), s) for s in planned]
        for name in {(s.db, s.table) for _, s in steps} | {s.to for _, s in steps if s.to is not None}:
            self.lake.flush(*name)  # a DDL writes the mirror as of every change before it
        rereads = self.mirror.apply(batch_id, steps)
        return {f"{s.db}.{s.table}" for s in rereads}

    def _against_snapshot(self, step: MirrorStep, file: str, pos: int, snapshot_filter: Any) -> list[MirrorStep]:
        """The step, unless a snapshot read the table after the DDL (nothing to do) or while it ran
        (read it again). A rename whose new name was snapshotted after it only retires the old mirror."""
        if not snapshot_filter:
            return [step]
        if snapshot_filter.lost(step.db, step.table):  # gone before its snapshot could read it
            if step.kind == "move" and step.to is not None:
                return [MirrorStep("archive", step.db, step.table, why="it was renamed before it could be read"),
                        MirrorStep("reread", *step.to, why=f"renamed from {step.name} while that was being read")]
            return [step] if step.kind == "archive" else []
        if step.kind == "move" and step.to is not None:
            to = snapshot_filter.read_after(*step.to, file, pos)
            if to is not None:
                retire = MirrorStep("archive", step.db, step.table, why=f"renamed to {step.to[0]}.{step.to[1]}")
                if to:
                    return [retire]
                return [retire, MirrorStep("reread", *step.to, why="renamed while the table was being snapshotted")]
        after = snapshot_filter.read_after(step.db, step.table, file, pos)
        if after is None:
            return [step]
        if after:
            return []  # the snapshot read the table after the DDL: it has the new layout already
        if step.kind == "reread":
            return [step]
        return [MirrorStep("reread", step.db, step.table, why="the DDL ran while the table was being snapshotted")]
