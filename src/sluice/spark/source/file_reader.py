"""The batch side of the ``binlog`` data source: archived binlog files decoded on Spark.

``spark.read.format("binlog").load(path_or_paths)`` — a task per file or per transaction-aligned
segment of a large file (``segmentBytes``, default 128 MiB); the driver first reads the DDL of the
files in order (no row decoded) so that each task starts with the schema in force at its segment's
start: the same rules as ``sluice dump``, ``schema`` and ``positional`` included (the given schema is
read once, on the driver). A segment is decoded on its own as the file's magic and
FORMAT_DESCRIPTION event followed by the segment's bytes. Options are the source's
(``sluice.spark.source.datasource.SourceOptions``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from sluice.binlog.position import Checkpoint, binlog_file_key
from sluice.cdc.capture import CaptureConfig, ChangeCapture
from sluice.cdc.filters import table_filter
from sluice.cdc.schema import Catalog, SchemaTracker
from sluice.cdc.schema.given import archived_tracker, load_schema
from sluice.errors import ConfigError
from sluice.io.binlog_file import iter_raw_spans
from sluice.io.heap import keep_batch_memory
from sluice.spark.source.change_frame import arrow_batches
from sluice.spark.source.failures import typed_failures
from sluice.spark.source.options import SourceOptions

__all__ = ["BinlogFileReader", "FilePartition"]


@dataclass
class FilePartition(InputPartition):
    """A file, or the transactions of a file from ``start`` to ``end`` (None: its end)."""

    path: str
    catalog: dict[str, Any]
    flavor: str | None
    start: int = 4
    end: int | None = None
    read_later: str | None = None  # where a given schema came from
    positional: str = "fallback"  # the tracker's positional mode


class BinlogFileReader(DataSourceReader):
    """Archived binlog files, a task per file, with the schema from the DDL of earlier files."""

    def __init__(self, options: SourceOptions) -> None:
        if not options.paths:
            raise ConfigError('spark.read.format("binlog").load(path) needs one or more binlog files')
        self.options = options

    @typed_failures
    def partitions(self) -> Sequence[InputPartition]:
        """A partition per file or transaction-aligned segment, with the catalog at its start."""
        # The DDL of every file, in order: the catalog at each segment's start. No rows are decoded.
        skip_rows = CaptureConfig(table_filter=lambda _db, _table: False, skip_incidents=self.options.skip_incidents)
        options = self.options
        given = (load_schema(options.schema, table_filter(options.tables, options.exclude_tables))
                 if options.schema else None)
        capture: ChangeCapture | None = None
        parts: list[InputPartition] = []
        size = self.options.segment_bytes
        for path in _expand(self.options.paths):
            name = os.path.basename(path)
            if capture is None:
                tracker = archived_tracker(given, positional=options.positional)
                capture = ChangeCapture(skip_rows, Checkpoint(name, 4), tracker)
            tracker = capture.tracker
            parts.append(FilePartition(path, tracker.catalog.to_json(), tracker.flavor,
                                       read_later=tracker.read_later, positional=tracker.positional))
            segment = 4
            for done in capture.feed_file(name, path, iter_raw_spans(path)):
                if done.end.pos - segment >= size:
                    # A transaction boundary past the segment size: the next task starts here.
                    segment = done.end.pos
                    parts[-1] = replace(parts[-1], end=segment)  # type: ignore[type-var]
                    parts.append(FilePartition(path, tracker.catalog.to_json(), tracker.flavor, start=segment,
                                               read_later=tracker.read_later, positional=tracker.positional))
        return parts

    @typed_failures
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Decode one file or segment into Arrow batches of the change schema."""
        assert isinstance(partition, FilePartition)
        keep_batch_memory()
        path = partition.path
        name = os.path.basename(path)
        tracker = SchemaTracker(Catalog.from_json(partition.catalog), None, flavor=partition.flavor,
                                read_later=partition.read_later, positional=partition.positional)
        capture = ChangeCapture(self.options.capture_config(), Checkpoint(name, 4), tracker)
        # A segment of a file is its FORMAT_DESCRIPTION_EVENT and the events from the task's start.
        yield from arrow_batches(capture.feed_file(name, path, iter_raw_spans(path, partition.start, partition.end)))


def _expand(paths: Sequence[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            out.extend(sorted((os.path.join(p, n) for n in os.listdir(p) if n.rsplit(".", 1)[-1].isdigit()),
                              key=lambda q: binlog_file_key(os.path.basename(q))))
        else:
            out.append(p)
    return out
