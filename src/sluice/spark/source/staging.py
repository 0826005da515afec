"""The executors' half of the pipeline: a binlog range decoded straight into the lake's files.

With ``option("stageTo", LAKE)`` (what ``sluice run`` sets) the ``binlog`` stream source does not
hand its rows to Spark. Each task decodes its range into the change DataFrame's Arrow batches, as
without the option, and writes

- the range's change-log rows as one Parquet file in the change log's folder
  (``LAKE/_sluice/changes``), not part of the table until the driver commits it with the batch
  (``DeltaLake.write_batch(changelog_files=...)``);
- for each captured table with a primary key, the range's MERGE source (``sluice.lake.mirror.merge_source``:
  the last state per key, typed mirror columns, and the binlog position of each key's last change)
  as an Arrow IPC file in ``LAKE/_sluice/staging/<batch>/``;

and yields one small row per file (``STAGE_SCHEMA``): Spark carries these descriptors, not the
rows. The driver folds a table's sources over the ranges in binlog order, MERGEs, and commits the
change log last. A file that an attempt wrote and the driver never committed (a task retried, a
batch replayed after a crash) belongs to no table: the staging folder goes after every batch, and
the change log's strays are what Delta's ``VACUUM`` removes.

A source does not know the batch id: the pipeline sets it as the job's local property
``sluice.batch`` (``BATCH_PROPERTY``), which Spark hands to every task of the job.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from sluice.binlog.position import Checkpoint
from sluice.cdc.schema import Catalog, SchemaTracker
from sluice.errors import ConfigError
from sluice.lake.changelog.rows import changelog_rows
from sluice.lake.changelog.sequence import SEQ_PROPERTY, range_first
from sluice.lake.data_files import write_data_file
from sluice.lake.layout import Lake, open_lake
from sluice.lake.mirror.merge_source import merge_source, typed_merge_source
from sluice.lake.mirror.versioned import mirror_rows
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.lake.types.typed_images import typed_rows
from sluice.spark.source.descriptors import DESCRIPTOR_SCHEMA, ChangelogFile, DdlMet, Descriptor, TableSource, to_row
from sluice.spark.source.spark_ddl import spark_ddl

__all__ = [
    "BATCH_PROPERTY", "STAGE_ARROW_SCHEMA", "STAGE_SCHEMA", "STORAGE_PROPERTY", "layout_key", "stage_range",
    "task_batch_id", "task_seq", "task_store",
]

BATCH_PROPERTY: Final = "sluice.batch"
#: The job's local property with the lake's storage options (JSON), for the tasks' writes to it. A
#: local property travels with each task and shows in no plan.
STORAGE_PROPERTY: Final = "sluice.storage"

#: The descriptors' Arrow schema (``sluice.spark.source.descriptors``), what the tasks yield.
STAGE_ARROW_SCHEMA: Final = DESCRIPTOR_SCHEMA
#: The same schema in Spark's DDL: the stream's schema, which the pipeline gives its reader.
STAGE_SCHEMA: Final = spark_ddl(STAGE_ARROW_SCHEMA)

# Delta data skipping reads these bounds: exact ones for the short columns, none for the images.
_BOUNDED: Final = ("op", "db", "table", "file", "gtid", "pos", "row", "batch_id", "seq")


def task_store(lake: str) -> Lake:
    """The lake's store in a task: its URI, with the storage options the driver set for the job."""
    from pyspark import TaskContext

    context = TaskContext.get()
    text = context.getLocalProperty(STORAGE_PROPERTY) if context is not None else None
    return open_lake(lake, json.loads(text) if text else None)


def task_batch_id() -> int:
    """The batch id the pipeline set for the running job."""
    from pyspark import TaskContext

    context = TaskContext.get()
    text = context.getLocalProperty(BATCH_PROPERTY) if context is not None else None
    if not text or not text.isdigit():
        raise ConfigError(
            'option("stageTo") writes a sluice lake\'s files and belongs to sluice run\'s pipeline, which '
            f"sets the job's batch id (local property {BATCH_PROPERTY}); read the stream without it"
        )
    return int(text)


def task_seq() -> int:
    """The batch's first change-log ``seq`` the pipeline set for the running job (``SEQ_PROPERTY``)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    text = context.getLocalProperty(SEQ_PROPERTY) if context is not None else None
    if not text or not text.isdigit():
        raise ConfigError(
            'option("stageTo") writes a sluice lake\'s change log and belongs to sluice run\'s pipeline, which '
            f"sets the batch's first change-log number (local property {SEQ_PROPERTY}); read the stream without it"
        )
    return int(text)


def layout_key(columns: Iterable[Any], primary_key: Iterable[str]) -> str:
    """What a MERGE source was built for: the mirror's column names and types, and the key."""
    return json.dumps([[[c.name, str(c.arrow_type)] for c in columns], list(primary_key)])


def stage_range(batches: Iterable[pa.RecordBatch], tracker: SchemaTracker, lake: str,
                batch_id: int, *, reconnects: Callable[[], int] = lambda: 0,
                typed: Sequence[dict[Any, Any]] = (), end: Checkpoint | None = None,
                seq_first: int = 0, range_index: int = 0) -> Iterator[pa.RecordBatch]:
    """Write a range's change batches (``sluice.spark.source.change_schema.ARROW_SCHEMA``, binlog order) to the
    lake's staging files; the descriptors of what was written. The tables are typed from the
    tracker's catalog once the range is read: a batch never spans a schema change of a captured
    table, so it is the one in force at every row (after the DDL, in a DDL's batch). The change-log
    file's descriptor also says how often the range's replication connection was made again
    (``reconnects``, asked once the range is read) and which attempt of the Spark task this is.
    ``typed``: the typed images the compiled core kept of the batches' tables, once they are read
    (``arrow_batches``); a table they hold whole is not parsed back from its JSON images. ``end``: the
    range's end offset, which the change-log file's descriptor carries (``range_end``) so that the
    batch's commit records where the stream stands. ``seq_first``: the batch's first change-log number,
    ``range_index``: the range's place in the batch, which number the range's change-log rows
    (``sluice.lake.changelog.sequence``)."""

    collected = list(batches)
    if not collected:
        return
    rows = pa.Table.from_batches(collected).combine_chunks()
    if rows.num_rows == 0:
        return
    store = task_store(lake)
    log = changelog_rows(rows, batch_id, range_first(seq_first, range_index, rows.num_rows))
    out: list[Descriptor] = [_write_changelog(log, rows, store, reconnects, end)]
    is_ddl = pc.equal(rows.column("op"), "ddl")
    if pc.any(is_ddl).as_py():
        out += [DdlMet(d["db"], d["table"], d["file"], d["pos"], d["ddl"]) for d in rows.filter(is_ddl).to_pylist()]
        rows = rows.filter(pc.invert(is_ddl))
    if rows.num_rows:
        out.extend(_stage_tables(rows, tracker.catalog, store.staging(batch_id), typed, store))
    yield pa.RecordBatch.from_pylist([to_row(d) for d in out], schema=DESCRIPTOR_SCHEMA)


def _task_attempt() -> int:
    """Which attempt of its Spark task this is (0: the first), 0 outside a task."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return 0 if context is None else int(context.attemptNumber())


def _write_changelog(log: pa.Table, rows: pa.Table, store: Lake, reconnects: Callable[[], int],
                     end: Checkpoint | None) -> ChangelogFile:
    import numpy as np

    written = write_data_file(log, store.changes, plain=("before", "after", "json_diffs", "ddl"),
                              bounded=_BOUNDED, store=store)
    commits = rows.column("commit_ts").cast(pa.int64()).to_numpy()
    starts = np.concatenate([[0], np.flatnonzero(np.diff(commits)) + 1])
    counts = np.diff(np.concatenate([starts, [len(commits)]]))
    return ChangelogFile(
        written["path"], written["size"], written["mtime"], written["stats"], log.num_rows,
        rows.column("file")[0].as_py(), rows.column("pos")[0].as_py(), rows.column("row")[0].as_py(),
        rows.column("file")[-1].as_py(), rows.column("pos")[-1].as_py(),
        tuple(commits[starts].tolist()), tuple(counts.tolist()), reconnects(), _task_attempt(), end)


def _stage_tables(rows: pa.Table, catalog: Catalog, folder: str, typed: Sequence[dict[Any, Any]],
                  store: Lake) -> Iterator[TableSource]:
    """Each table's MERGE source, or a descriptor without a path when the per-row path must build
    it (no primary key, a minimal image, a partial JSON update, a value Arrow will not convert)."""

    names = pc.binary_join_element_wise(rows.column("db"), rows.column("table"), "\x00")
    keys = pc.unique(names).to_pylist()
    for key in keys:
        db, name = key.split("\x00", 1)
        part = rows if len(keys) == 1 else rows.filter(pc.equal(names, key))
        ops = dict(zip(*(v.to_pylist() for v in pc.value_counts(part.column("op")).flatten()), strict=True))
        entry = TableSource(db, name, part.num_rows, part.column("file")[0].as_py(), part.column("pos")[0].as_py(),
                            part.column("row")[0].as_py(), ops.get("insert", 0), ops.get("update", 0),
                            ops.get("delete", 0))
        schema = catalog.get(db, name)
        if schema is not None and schema.primary_key:
            columns = mirror_columns_for_schema(schema, catalog.flavor)
            images = typed_rows((t[(db, name)] for t in typed if (db, name) in t), part.num_rows)
            pk = tuple(schema.primary_key)
            source = None if images is None else typed_merge_source(columns, pk, part, images, positions=True)
            if source is None:
                source = merge_source(columns, pk, mirror_rows(part, schema), positions=True)
            if source is not None:
                path = f"{folder}/{uuid.uuid4()}.arrow"
                if store.remote:
                    sink = pa.BufferOutputStream()
                    with pa.ipc.new_file(sink, source.schema) as writer:
                        writer.write_table(source)
                    store.write_file(path, sink.getvalue().to_pybytes())
                else:
                    os.makedirs(folder, exist_ok=True)
                    with pa.OSFile(path, "wb") as out, pa.ipc.new_file(out, source.schema) as writer:
                        writer.write_table(source)
                entry = replace(entry, path=path, layout=layout_key(columns, schema.primary_key))
        yield entry
