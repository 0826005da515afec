"""Applying a DDL batch's ``MirrorStep``s to the lake, exactly once, whatever the moment of a crash.

A DDL starts a micro-batch of its own (with the DDLs right after it that change no captured rows).
The batch's steps run in order; after each one the journal
``LAKE/_sluice/ddl.json`` records ``(batch, steps done)``, so a replayed batch resumes at the first
step not done. Each step is atomic or finishes on replay: a move of the mirror's folder
(``archive``, ``move``: ``os.rename`` on a file system; on an object store, which cannot rename, a
copy of every object and then the removal of the source, the journal naming both first so that a
replay finishes the same move) or one Delta commit (``create``: the first of a new mirror, made
only when none is there; ``truncate``, ``rewrite``) that carries the
batch's app transaction, so a step whose commit landed just before a crash is recognised too.
``reread`` archives the mirror and removes the table from the snapshot state; the pipeline then
snapshots it again with the watermark method while the stream goes on from the DDL. A routed
mirror's ``widen`` and ``unroute`` are ``sluice.spark.ddl.routed``'s.

Archived mirrors stay readable Delta tables under ``LAKE/_sluice/archive/<db>/<table>@<file>-<pos>``
(the binlog position of the DDL); sluice never deletes them.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import DeltaError

from sluice.errors import DataLossError
from sluice.lake.data_files import LAKE_WRITER
from sluice.lake.sink import DeltaLake
from sluice.lake.types.mirror_columns import column_array
from sluice.spark.ddl.plan import MirrorStep
from sluice.spark.ddl.routed import ROUTED_KINDS, run_routed
from sluice.spark.snapshot.state import SnapshotState

__all__ = ["CannotRewrite", "MirrorDdl"]

log = logging.getLogger(__name__)


class CannotRewrite(Exception):
    """A rewrite met a value it cannot convert exactly: the table is re-read instead."""


class MirrorDdl:
    """Runs mirror steps for the pipeline ``lake.app_id`` (module docstring)."""

    def __init__(self, lake: DeltaLake, progress: Callable[[str], None]) -> None:
        self.lake = lake
        self.store = lake.store
        self.progress = progress

    def apply(self, batch_id: int, steps: list[tuple[tuple[str, int], MirrorStep]]) -> list[MirrorStep]:
        """Run the steps (each with the binlog position of its DDL) not done yet; returns the
        ``reread`` steps, done now or before, for the pipeline to snapshot those tables again."""
        done = self._done(batch_id)
        rereads = []
        for k, (at, step) in enumerate(steps):
            if step.kind == "reread":
                rereads.append(step)
            if k < done:
                continue
            try:
                self._run(step, batch_id, at, k)
            except CannotRewrite as exc:
                step = MirrorStep("reread", step.db, step.table, why=str(exc))
                rereads.append(step)
                self._run(step, batch_id, at, k)
            self._record(batch_id, k + 1)
        return rereads

    def finish_move(self) -> None:
        """At a start, before the snapshot looks for newly captured tables: finish a move of one
        mirror to another (a RENAME) that a kill cut short, and rename the table's snapshot entry as
        the step would. Left to the replayed step, the new name would read as newly captured: the
        snapshot would make its mirror, and the replayed move would copy the old one over it. A move
        into the archive is left to its step (the table is still in the snapshot state)."""
        doc = self.store.get_json(self.store.DDL_JOURNAL)
        moving = doc.get("moving") if isinstance(doc, dict) else None
        if not isinstance(moving, dict):
            return
        old, new = self._mirror_name(moving.get("from")), self._mirror_name(moving.get("to"))
        if old is None or new is None:
            return
        self._move(moving["from"], moving["to"], int(doc["batch"]), int(moving["step"]))
        self._snapshot_state(lambda tables: tables.__setitem__(new, tables.pop(old)) if old in tables else None)

    def _mirror_name(self, path: Any) -> str | None:
        """``db.table`` of the mirror at ``path``, None for another folder of the lake."""
        try:
            parts = self.store.key(str(path)).split("/")
        except ValueError:
            return None
        return ".".join(parts) if len(parts) == 2 and not self.store.reserved(parts[0]) else None

    # -- journal ---------------------------------------------------------------------------------
    def _journal(self, batch_id: int) -> dict[str, Any]:
        doc = self.store.get_json(self.store.DDL_JOURNAL)
        return doc if isinstance(doc, dict) and doc.get("batch") == batch_id else {"batch": batch_id, "done": 0}

    def _done(self, batch_id: int) -> int:
        return int(self._journal(batch_id)["done"])

    def _record(self, batch_id: int, done: int, **extra: Any) -> None:
        self.store.put_json(self.store.DDL_JOURNAL, {"batch": batch_id, "done": done, **extra})

    # -- steps -----------------------------------------------------------------------------------
    def _run(self, step: MirrorStep, batch_id: int, at: tuple[str, int], index: int) -> None:
        moving = self._journal(batch_id).get("moving")
        if isinstance(moving, dict) and moving.get("step") == index:
            # A move this step began (on an object store) and a kill cut short: finish it first. Its
            # source may have lost its first commit already and read as no table at all, which must
            # neither skip the move nor take a new mirror over the source's leftover objects.
            self._move(moving["from"], moving["to"], batch_id, index)
        if step.kind in ROUTED_KINDS:  # a routed mirror's (sluice.spark.ddl.routed)
            run_routed(self.lake, step, self.progress)
            if step.kind == "unroute":
                self._snapshot_state(lambda tables: tables.pop(step.name, None))
            return
        path = self.lake.table_path(step.db, step.table)
        mirror = self.lake.table(path)
        exists = mirror is not None
        what = f"{step.name}: {step.why}" if step.why else step.name
        if step.kind in ("archive", "reread"):
            if exists:
                self._archive(path, step, at, batch_id, index)
                self.progress(f"DDL: the mirror of {what} — archived" if step.kind == "archive"
                              else f"DDL: the mirror of {what} — re-reading the table")
            self._snapshot_state(lambda tables: tables.pop(step.name, None))
        elif step.kind == "create":
            if self.lake.create_mirror(step.db, step.table, step.columns):
                self.progress(f"DDL: the mirror of {step.name} created, empty (CREATE TABLE)")
        elif step.kind == "move":
            assert step.to is not None
            target = self.lake.table_path(*step.to)
            if exists:
                if self.lake.table(target) is not None:
                    self._archive(target, MirrorStep("archive", *step.to), at, batch_id, index)
                self._move(path, target, batch_id, index)
                self.progress(f"DDL: the mirror of {step.name} follows the table to {step.to[0]}.{step.to[1]}")
            new = f"{step.to[0]}.{step.to[1]}"
            self._snapshot_state(lambda tables: tables.__setitem__(new, tables.pop(step.name))
                                 if step.name in tables else None)
        elif step.kind == "truncate" and mirror is not None:
            dt = mirror
            if not self._landed(dt, batch_id):
                empty = dt.schema().to_arrow()
                self._commit(path, pa.Table.from_batches([], schema=pa.schema(empty)), batch_id, step)
                self.progress(f"DDL: the mirror of {step.name} emptied (TRUNCATE)")
        elif step.kind == "rewrite" and mirror is not None:
            dt = mirror
            if not self._landed(dt, batch_id):
                self._rewrite(dt, path, step, batch_id)
                self.progress(f"DDL: the mirror of {step.name} rewritten in the new layout "
                              f"({', '.join(c.name for c in step.columns)})")

    def _archive(self, path: str, step: MirrorStep, at: tuple[str, int], batch_id: int, index: int) -> None:
        base = self.store.archive(step.db, step.table, at)
        dest, n = base, 1
        while self.lake.table(dest) is not None and not self._moving(batch_id, index, path, dest):
            dest = f"{base}.{n}"
            n += 1
        self._move(path, dest, batch_id, index)

    def _moving(self, batch_id: int, index: int, path: str, dest: str) -> bool:
        """Whether the journal says step ``index`` was copying ``path`` to ``dest`` when it stopped."""
        moving = self._journal(batch_id).get("moving")
        return moving == {"step": index, "from": path, "to": dest}

    def _move(self, path: str, dest: str, batch_id: int, index: int) -> None:
        """Move a mirror's folder: one rename on a file system; on an object store, which cannot
        rename, a copy of every object and then the removal of the source, journaled first so that
        a replay finishes the same move (copying again is harmless)."""
        if not self.store.remote:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            os.rename(path, dest)
            return
        self._record(batch_id, index, moving={"step": index, "from": path, "to": dest})
        source, target = self.store.key(path), self.store.key(dest)
        self.store.copy_prefix(source, target)
        self.store.delete_prefix(source)

    def _landed(self, dt: DeltaTable, batch_id: int) -> bool:
        version = dt.transaction_version(self.lake.app_id)
        return version is not None and version >= batch_id

    def _commit(self, path: str, data: Any, batch_id: int, step: MirrorStep) -> None:
        txn = CommitProperties(app_transactions=[Transaction(self.lake.app_id, batch_id)])
        try:
            write_deltalake(path, data, mode="overwrite", schema_mode="overwrite", writer_properties=LAKE_WRITER,
                            commit_properties=txn, storage_options=self.lake.options)
        except DeltaError as exc:
            raise DataLossError(
                f"the Delta commit of batch {batch_id} to the mirror of {step.name} ({path}) failed ({exc}); "
                "nothing of it was committed. Fix the cause and restart: the batch is replayed"
            ) from exc

    def _rewrite(self, dt: DeltaTable, path: str, step: MirrorStep, batch_id: int) -> None:
        schema = pa.schema([pa.field(c.name, c.arrow_type) for c in step.columns])
        dataset = dt.to_pyarrow_dataset()

        def batches() -> Iterator[pa.RecordBatch]:
            for batch in dataset.to_batches(batch_size=65536):
                yield self._convert(batch, step, schema)

        for batch in dataset.to_batches(batch_size=65536):  # a value that does not convert: before any write
            self._convert(batch, step, schema)
        reader = pa.RecordBatchReader.from_batches(schema, batches())
        self._commit(path, reader, batch_id, step)

    def _convert(self, batch: pa.RecordBatch, step: MirrorStep, schema: pa.Schema) -> pa.RecordBatch:
        arrays = []
        n = batch.num_rows
        names = batch.schema.names
        for col, origin in zip(step.columns, step.origins, strict=True):
            if origin.source is not None:
                if origin.source not in names:
                    raise CannotRewrite(f"the mirror has no column {origin.source}")
                arr = batch.column(names.index(origin.source))
                if arr.type != col.arrow_type:
                    try:
                        arr = pc.cast(arr, col.arrow_type, safe=True)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                        raise CannotRewrite(f"column {origin.source} does not convert exactly ({exc})") from None
                arrays.append(arr)
            else:
                value = origin.fill.value if origin.fill is not None else None
                arrays.append(column_array(col, [None if value is None else col.convert(value)] * n))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def _snapshot_state(self, edit: Callable[[dict[str, Any]], Any]) -> None:
        state = SnapshotState.find(self.store)
        if state is None:
            return
        before = json.dumps(state.tables, sort_keys=True)
        edit(state.tables)
        if json.dumps(state.tables, sort_keys=True) != before:
            state.save(self.store)
