"""The ``binlog`` PySpark data source: a streaming reader that follows a server, a batch reader for files.

``spark.readStream.format("binlog").option("dsn", ...).load()`` — the driver follows the server
(``sluice.spark.source.planner``) and plans micro-batches on transaction boundaries; its offsets are
checkpoints as JSON (``Checkpoint.to_json``); while Spark runs a batch, the planner reads the next
one's worth in a thread. A micro-batch never spans a schema change: a DDL transaction starts a batch
of its own (with the DDLs right after it that change no captured rows), so every batch has one
layout per table. A batch is split into ranges of about ``rowsPerPartition`` rows /
``bytesPerPartition`` bytes, and into at least one range per core when it is smaller. Transactions
that change no captured table are in no range (``BatchPlanner.ranges``). Executors replay their range with
a replication connection of their own, from the range's start to its end, and decode it into Arrow
batches of ``sluice.spark.source.change_frame.ARROW_SCHEMA``; the same offsets always give the same
rows.

``spark.read.format("binlog").load(path_or_paths)`` — archived binlog files
(``sluice.spark.source.file_reader``).

Options (camelCase, as Spark spells them): ``dsn``, ``tables``, ``excludeTables``, ``ops``,
``startingPosition`` (``earliest`` (default), ``latest``, ``FILE:POS`` or a GTID set),
``maxRowsPerBatch`` (the driver counts rows ahead), ``maxBytesPerBatch`` (planning by binlog
bytes), ``rowsPerPartition`` (default 100000) /
``bytesPerPartition`` (default 16 MiB) for the ranges executors decode in parallel, ``segmentBytes``
(files: a task per transaction-aligned segment of about this size, default 128 MiB) and
``schemaHistory`` (a file that keeps the schema history across restarts; strongly advised unless
the server writes ``binlog_row_metadata=FULL``) and ``skipIncidents`` (``true``: go on past INCIDENT
events, which otherwise stop the query with ``DataLossError``) and ``includeDdl`` (``true``: a row with
``op`` ``ddl`` and the ``ddl`` column for every schema change on a captured table, as the pipeline
reads it) and ``stageTo`` (a lake: tasks write their range's files into it and yield one row per
file, ``sluice.spark.source.staging``; sluice run's pipeline sets it) with ``partBytes`` (default 8
MiB: a task writes its range, and a transaction larger than that, in parts of about this many
bytes of binlog, and holds about a part at a time). For archived files, as ``sluice dump``
has them: ``schema`` (a DSN or a ``mysqldump --no-data`` file: the tables' definitions when the
binlog does not name the columns; a table it does not fit is read by position with a warning) and
``positional`` (``true``: every table by position, ``@1``, ``@2``, ...).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from sluice.binlog.position import Checkpoint, precedes, same_place
from sluice.cdc.capture import CaptureConfig, CaptureOutput, ChangeCapture, CommittedTransaction
from sluice.cdc.capture_start import tracker_at
from sluice.cdc.executed_at import executed_at
from sluice.cdc.follow import follow, retrying
from sluice.cdc.schema import Catalog, SchemaHistory, SchemaTracker
from sluice.errors import ConfigError, DataLossError
from sluice.io.connection import Connection
from sluice.io.heap import keep_batch_memory
from sluice.io.replication import server_binlog_files, server_binlog_status
from sluice.spark.source.change_frame import CHANGE_SCHEMA, arrow_batches
from sluice.spark.source.failures import typed_failures
from sluice.spark.source.file_reader import BinlogFileReader
from sluice.spark.source.options import SourceOptions
from sluice.spark.source.planner import BatchPlanner, RangePartition, offset_checkpoint
from sluice.spark.source.staging import DESCRIPTOR_SPARK_SCHEMA, part_writer, stage_range, task_batch_id, task_seq

__all__ = ["BinlogDataSource", "SourceOptions"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def _tracker_at(options: SourceOptions, conn: Connection, start: Checkpoint) -> SchemaTracker:
    history = SchemaHistory.open(options.schema_history) if options.schema_history else None
    # Every table, not only the captured ones: a table added to the capture later is known already.
    return tracker_at(conn, start, history)


def _on_server(options: SourceOptions, what: str, work: Callable[[Connection], T]) -> T:
    """``work`` on a connection of its own, made again with backoff while the connection is lost."""
    config = options.follow_config()

    def attempt() -> T:
        with Connection.open(config.connection) as conn:
            return work(conn)

    return retrying(config, what, attempt)


class BinlogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are transaction boundaries; executors decode their ranges themselves."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._planner: BatchPlanner | None = None
        self._target: Checkpoint | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Executors get plain data: the options. The planner lives on the driver only.
        return {"options": self.options, "_planner": None, "_target": None}

    # -- driver ----------------------------------------------------------------------------------
    @typed_failures
    def initialOffset(self) -> dict[str, Any]:
        """The first offset, from ``startingPosition``: earliest, latest, FILE:POS or GTIDs."""
        named = self.options.start_checkpoint()
        if named is not None:
            return named.to_json()
        if self.options.starting.strip().lower() == "latest":
            status = _on_server(self.options, "reading the binlog's end", server_binlog_status)
            # Its GTID set is read apart from its position: the planner establishes it (executed_at).
            return Checkpoint(status.file, status.pos).to_json()
        files = _on_server(self.options, "listing the binlogs", server_binlog_files)
        if not files:
            raise ConfigError("the server lists no binary logs (SHOW BINARY LOGS)")
        log.warning("binlog source: starting at the earliest binlog still on the server, %s:4", files[0][0])
        return Checkpoint(files[0][0], 4).to_json()

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxRowsPerBatch`` or ``maxBytesPerBatch`` as Spark's read limit, else all."""
        if self.options.max_rows is not None:
            return ReadMaxRows(self.options.max_rows)
        if self.options.max_bytes is not None:
            return ReadMaxRows(1 << 62)  # carries maxBytesPerBatch: the engine has no byte limit for Python sources
        return ReadAllAvailable()

    @typed_failures
    def prepareForTriggerAvailableNow(self) -> None:
        """Take the server's binlog end now: the last batch ends there."""
        status = _on_server(self.options, "reading the binlog's end", server_binlog_status)
        self._target = Checkpoint(status.file, status.pos)

    @typed_failures
    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """Plan the batch from ``start`` within ``limit`` and start reading the next ahead."""
        begin = offset_checkpoint(start)
        if isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows if self.options.max_rows is not None else None
            max_bytes = self.options.max_bytes
        else:  # ReadAllAvailable: the engine asks for everything (e.g. Trigger.Once)
            max_rows = max_bytes = None
        if self._planner is not None:
            self._planner.finish_reading()  # what it reads now is the last it reads for this batch
            self._planner.wait_for_batch(begin, max_rows, max_bytes, self._target)
            if self._planner.reading:  # it has read this batch whole and reads on while the batch runs
                return self._planner.choose_end(begin, max_rows, max_bytes, self._target).to_json()
            self._planner.join()
        planner = self._planner_at(begin)
        planner.drop_before(begin)
        planner.read_ahead(max_rows, max_bytes, self._target)
        end = planner.choose_end(begin, max_rows, max_bytes, self._target)
        target = self._target
        if not planner.at_end and (target is None or precedes(end, target)):
            planner.read_ahead_later(max_rows, max_bytes, target, since=end)  # the next batch's, while this one runs
        elif target is None:  # at the binlog's end: follow on while this batch runs and after
            planner.read_ahead_later(max_rows, max_bytes, None, since=end, read_first=False)
        return end.to_json()

    @typed_failures
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """Ranges of the batch ``[start, end)`` for the executors, with the catalog at each start."""
        begin, finish = offset_checkpoint(start), offset_checkpoint(end)
        if begin == finish:
            return []
        planner = self._planner
        if planner is not None:
            parts = planner.ranges(begin, finish, self.options.rows_per_partition, self.options.bytes_per_partition)
            if parts is not None:
                return parts
        # A batch planned before a restart: one range, with the schema persisted at its start (a
        # bootstrap there is recorded with the executed GTIDs, as the planner's is).
        begin = executed_at(self.options.follow_config(), begin)
        tracker, flavor = _on_server(self.options, "reading the schema",
                                     lambda conn: (_tracker_at(self.options, conn, begin), conn.flavor))
        return [RangePartition(start, end, tracker.catalog.to_json(), flavor)]

    @typed_failures
    def commit(self, end: dict[str, Any]) -> None:
        """Forget what the planner planned before ``end``: Spark committed it."""
        if self._planner is not None:
            self._planner.drop_before(offset_checkpoint(end))

    def stop(self) -> None:
        """Let go of the planner: a read-ahead under way ends after its current transaction."""
        planner, self._planner = self._planner, None
        if planner is not None:
            planner._stopping = True

    def _planner_at(self, start: Checkpoint) -> BatchPlanner:
        planner = self._planner
        if planner is not None and (same_place(planner.origin, start) or any(same_place(p.start, start)
                                                                          for p in planner.pending)
                                  or same_place(planner.capture.boundary, start)):
            return planner
        # Every offset after this one carries the executed GTIDs, established exactly: a failover
        # goes on by them.
        start = executed_at(self.options.follow_config(), start)
        tracker, flavor = _on_server(self.options, "reading the schema",
                                     lambda conn: (_tracker_at(self.options, conn, start), conn.flavor))
        captured = self.options.capture_config()
        if self.options.max_rows is not None or captured.ops is None:
            # Count the captured tables' rows (by the row images' lengths where the compiled core
            # takes the events; no value decoded, no record built): maxRowsPerBatch needs the
            # counts, and a transaction that changed no captured table is left out of the ranges.
            planning = replace(captured, output=CaptureOutput.COUNTS)
            counts = True
        else:
            # An ops filter (whose counting decodes every row): boundaries and DDL only.
            planning = CaptureConfig(table_filter=lambda _db, _table: False, output=CaptureOutput.COUNTS,
                                     skip_incidents=self.options.skip_incidents)
            counts = False
        capture = ChangeCapture(planning, start, tracker)
        if planner is not None:
            planner._stopping = True  # its in-flight reports end with it
        self._planner = BatchPlanner(self.options, start, capture, flavor, counts_captured=counts)
        return self._planner

    # -- executors -------------------------------------------------------------------------------
    @typed_failures
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Replay one range from the server and decode it into Arrow batches (or staged files)."""
        assert isinstance(partition, RangePartition)
        keep_batch_memory()
        start, end = offset_checkpoint(partition.start), offset_checkpoint(partition.end)
        tracker = SchemaTracker(Catalog.from_json(partition.catalog), None, flavor=partition.flavor)
        config = self.options.capture_config()
        writer = None
        if self.options.stage_to:
            # The range is written in parts as it is read; a transaction larger than a part is
            # handed out in parts before its commit.
            writer = part_writer(self.options.stage_to, task_batch_id(), start, tracker,
                                 seq_first=task_seq(), range_index=partition.index, columns=config.columns)
            config = replace(config, hold_columns=writer.hold, part_bytes=self.options.part_bytes)
        capture = ChangeCapture(config, start, tracker)
        reached = False
        reconnects: list[BaseException] = []

        def until_end() -> Iterator[CommittedTransaction]:
            nonlocal reached
            for committed in follow(self.options.follow_config(until_end=True), capture, on_retry=reconnects.append):
                here = committed.transaction.end
                if precedes(end, here):
                    return
                yield committed
                if same_place(here, end):
                    reached = True
                    return

        if writer is not None:
            typed: list[dict[Any, Any]] = []
            yield from stage_range(arrow_batches(until_end(), typed), writer, part_bytes=self.options.part_bytes,
                                   reconnects=lambda: len(reconnects), typed=typed, end=end,
                                   read_on=lambda: capture.boundary.source)
        else:
            yield from arrow_batches(until_end())
        if not reached:
            raise DataLossError(
                f"the binlog range {start}..{end} planned for this batch could not be read to its end "
                "(the server's binlog changed or was purged): restart the query from a new checkpoint location"
            )


class BinlogDataSource(DataSource):
    """``format("binlog")``: row changes from a MySQL / MariaDB binlog (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        """``binlog``: the name ``format()`` takes."""
        return "binlog"

    def schema(self) -> str:
        """The change schema, or the staged-file descriptor schema with ``stageTo``."""
        if any(k.lower() == "stageto" and v for k, v in self.options.items()):

            return DESCRIPTOR_SPARK_SCHEMA
        return CHANGE_SCHEMA

    @typed_failures
    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        """The streaming reader that follows a server."""
        return BinlogStreamReader(SourceOptions.parse(self.options))

    @typed_failures
    def reader(self, schema: Any) -> DataSourceReader:
        """The batch reader of binlog files (``load(path)``)."""
        options = SourceOptions.parse(self.options)
        if options.stage_to:
            raise ConfigError('option("stageTo") is for the stream that sluice run reads, not for binlog files')
        return BinlogFileReader(options)
