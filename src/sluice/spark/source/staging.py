"""The executors' half of the pipeline: a binlog range decoded straight into the lake's files.

With ``option("stageTo", LAKE)`` (what ``sluice run`` sets) the ``binlog`` stream source does not
hand its rows to Spark. Each task decodes its range into the change DataFrame's Arrow batches, as
without the option, and writes them in parts of about ``partBytes`` (``sluice.spark.source.parts``):
per part, its change-log rows as a Parquet file in the change log's folder
(``LAKE/_sluice/changes``), not part of the table until the driver commits it with the batch
(``DeltaLake.write_batch(changelog_files=...)``), and for each captured table with a primary key its
MERGE source (``sluice.lake.mirror.merge_source``: the last state per key, typed mirror columns, and
the binlog position of each key's last change) as an Arrow IPC file in
``LAKE/_sluice/staging/<batch>/``. A transaction larger than a part is handed out by the capture in
parts while it is read (``CaptureConfig.hold_columns``), so a task holds about a part, whatever the
size of a transaction.

The task yields one small row per file (``DESCRIPTOR_SPARK_SCHEMA``): Spark carries these descriptors, not the
rows. The driver folds a table's sources in binlog order, MERGEs, and commits the change log last.
A file that an attempt wrote and the driver never committed (a task retried, a batch replayed after
a crash, a transaction rolled back) belongs to no table: the staging folder goes after every batch,
and the change log's strays are what Delta's ``VACUUM`` removes.

A source does not know the batch id: the pipeline sets it as the job's local property
``sluice.batch`` (``BATCH_PROPERTY``), which Spark hands to every task of the job.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import replace
from typing import Any, Final

import pyarrow as pa

from sluice.binlog.position import Checkpoint, SourceIdentity
from sluice.cdc.capture import PART_BYTES
from sluice.cdc.schema import SchemaTracker
from sluice.errors import ConfigError
from sluice.lake.changelog.sequence import SEQ_PROPERTY
from sluice.lake.layout import Lake, open_lake
from sluice.spark.source.descriptors import DESCRIPTOR_SCHEMA, ChangelogFile, Descriptor, to_row
from sluice.spark.source.parts import PartWriter, layout_key
from sluice.spark.source.spark_ddl import spark_ddl

__all__ = [
    "BATCH_PROPERTY", "DESCRIPTOR_SCHEMA", "DESCRIPTOR_SPARK_SCHEMA", "STORAGE_PROPERTY", "layout_key", "part_writer",
    "stage_range", "task_batch_id", "task_seq", "task_store",
]

BATCH_PROPERTY: Final = "sluice.batch"
#: The job's local property with the lake's storage options (JSON), for the tasks' writes to it. A
#: local property travels with each task and shows in no plan.
STORAGE_PROPERTY: Final = "sluice.storage"

#: The descriptors' Arrow schema (``sluice.spark.source.descriptors``), what the tasks yield.
#: The same schema in Spark's DDL: the stream's schema, which the pipeline gives its reader.
DESCRIPTOR_SPARK_SCHEMA: Final = spark_ddl(DESCRIPTOR_SCHEMA)



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


def part_writer(lake: str, batch_id: int, start: Checkpoint, tracker: SchemaTracker, *, seq_first: int = 0,
                range_index: int = 0, columns: Any = None) -> PartWriter:
    """The writer of a task's parts; its tables are typed from the tracker's catalog as it stands
    when a part is written: a batch never spans a schema change of a captured table, so it is the
    one in force at every row (after the DDL, in a DDL's batch). ``seq_first``: the batch's first
    change-log number, ``range_index``: the range's place in the batch, which number the range's
    change-log rows (``sluice.lake.changelog.sequence``). ``columns``: the capture's ``ColumnRules``."""
    return PartWriter(task_store(lake), batch_id, start, lambda: tracker.catalog, seq_first=seq_first,
                      range_index=range_index, columns=columns)


def stage_range(items: Iterable[pa.RecordBatch | tuple[Any, int]], writer: PartWriter, *,
                part_bytes: int = PART_BYTES, reconnects: Callable[[], int] = lambda: 0,
                typed: list[dict[Any, Any]] | None = None, end: Checkpoint | None = None,
                read_on: Callable[[], SourceIdentity | None] = lambda: None) -> Iterator[pa.RecordBatch]:
    """Write a range's change batches (``sluice.spark.source.change_frame.ARROW_SCHEMA``, binlog
    order, as ``arrow_batches`` yields them) to the lake's staging files in parts of about
    ``part_bytes``; the descriptors of what was written. ``typed``: the list ``arrow_batches`` adds
    the typed images of each batch the compiled core built to; a part takes those of its batches
    and empties it. A ``(part, commit µs)`` item is a part of a transaction the capture handed out
    before its commit (``PartWriter.hold``). The range's last change-log file also says how often
    the range's replication connection was made again (``reconnects``, asked once the range is
    read), which attempt of the Spark task this is, the range's end offset (``end``), which the
    batch's commit records as where the stream stands, and the server it was read on (``read_on``,
    asked at the end too: its positions are that server's)."""

    kept = typed if typed is not None else []
    pending: list[pa.RecordBatch] = []
    size = 0
    staged: list[Descriptor | Future[ChangelogFile]] = []

    def flush() -> None:
        nonlocal size
        if pending:
            rows = pa.Table.from_batches(pending).combine_chunks()
            pending.clear()
            staged.extend(writer.write(rows, list(kept)))
        kept.clear()
        size = 0

    try:
        for item in items:
            if isinstance(item, tuple):
                flush()
                staged.extend(writer.committed(*item))
                continue
            if item.num_rows:
                pending.append(item)
                size += item.nbytes
                if size >= part_bytes:
                    flush()
        flush()
    except BaseException:
        writer.abandon()
        raise
    writer.done()  # every file in the lake before a descriptor names it
    out: list[Descriptor] = [d.result() if isinstance(d, Future) else d for d in staged]
    files = [i for i, d in enumerate(out) if isinstance(d, ChangelogFile)]
    if not files:
        return
    last = files[-1]
    on = read_on()
    out[last] = replace(out[last], reconnects=reconnects(), attempt=_task_attempt(), range_end=end, read_on=on)  # type: ignore[arg-type]
    yield pa.RecordBatch.from_pylist([to_row(d) for d in out], schema=DESCRIPTOR_SCHEMA)


def _task_attempt() -> int:
    """Which attempt of its Spark task this is (0: the first), 0 outside a task."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return 0 if context is None else int(context.attemptNumber())
