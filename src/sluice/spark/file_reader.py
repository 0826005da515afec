"""The batch side of the ``binlog`` data source: archived binlog files decoded on Spark.

``spark.read.format("binlog").load(path_or_paths)`` — a task per file or per transaction-aligned
segment of a large file (``segmentBytes``, default 128 MiB); the driver first reads the DDL of the
files in order (no row decoded) so that each task starts with the schema in force at its segment's
start: the same rules as ``sluice dump``. A segment is decoded on its own as the file's magic and
FORMAT_DESCRIPTION event followed by the segment's bytes. Options are the source's
(``sluice.spark.source.SourceOptions``).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from sluice.binlog.position import Checkpoint, binlog_file_key
from sluice.cdc.capture import CaptureConfig, ChangeCapture, CommittedTransaction
from sluice.cdc.schema import Catalog, SchemaTracker
from sluice.errors import ConfigError
from sluice.io.binlog_file import iter_raw_events
from sluice.spark.source import SourceOptions, arrow_batches

__all__ = ["BinlogFileReader", "FilePartition"]


@dataclass
class FilePartition(InputPartition):
    """A file, or the transactions of a file from ``start`` to ``end`` (None: its end)."""

    path: str
    catalog: dict[str, Any]
    flavor: str | None
    start: int = 4
    end: int | None = None


class BinlogFileReader(DataSourceReader):
    """Archived binlog files, a task per file, with the schema from the DDL of earlier files."""

    def __init__(self, options: SourceOptions) -> None:
        if not options.paths:
            raise ConfigError('spark.read.format("binlog").load(path) needs one or more binlog files')
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        # The DDL of every file, in order: the catalog at each segment's start. No rows are decoded.
        skip_rows = CaptureConfig(table_filter=lambda _db, _table: False, skip_incidents=self.options.skip_incidents)
        capture: ChangeCapture | None = None
        parts: list[InputPartition] = []
        size = self.options.segment_bytes
        for path in _expand(self.options.paths):
            name = os.path.basename(path)
            if capture is None:
                capture = ChangeCapture(skip_rows, Checkpoint(name, 4))
            tracker = capture.tracker
            parts.append(FilePartition(path, tracker.catalog.to_json(), tracker.flavor))
            capture.begin_file(name, path)
            segment = 4
            for offset, data in iter_raw_events(path):
                done = capture.feed(name, offset, offset + len(data), data)
                if done is not None and done.end.pos - segment >= size:
                    # A transaction boundary past the segment size: the next task starts here.
                    segment = done.end.pos
                    parts[-1] = replace(parts[-1], end=segment)  # type: ignore[type-var]
                    parts.append(FilePartition(path, tracker.catalog.to_json(), tracker.flavor, start=segment))
            capture.cut_off()
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilePartition)
        path = partition.path
        name = os.path.basename(path)
        tracker = SchemaTracker(Catalog.from_json(partition.catalog), None, flavor=partition.flavor)
        capture = ChangeCapture(self.options.capture_config(), Checkpoint(name, 4), tracker)
        capture.begin_file(name, path)

        def committed() -> Iterator[CommittedTransaction]:
            for offset, data in _segment(path, partition.start, partition.end):
                done = capture.feed(name, offset, offset + len(data), data)
                if done is not None:
                    yield done

        yield from arrow_batches(committed())


class _Spliced(io.RawIOBase):
    """A binlog file seen as its magic and FORMAT_DESCRIPTION event followed directly by the bytes
    from ``start`` on: a segment a reader can decode on its own."""

    def __init__(self, f: Any, head: bytes, start: int) -> None:
        self._f, self._head = f, head
        f.seek(start)

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._f.read(len(b))
        b[: len(data)] = data
        return len(data)


def _segment(path: str, start: int, end: int | None) -> Iterator[tuple[int, bytes]]:
    """``(offset, event)`` of the FORMAT_DESCRIPTION event and of the events in ``[start, end)``."""
    if start <= 4:
        for offset, data in iter_raw_events(path):
            if end is not None and offset >= end:
                return
            yield offset, data
        return
    with open(path, "rb") as f:
        head = f.read(4 + 19)
        fde_size = int.from_bytes(head[4 + 9 : 4 + 13], "little")
        head += f.read(fde_size - 19)
        shift = start - (4 + fde_size)
        for offset, data in iter_raw_events(io.BufferedReader(_Spliced(f, head, start))):
            at = offset if offset == 4 else offset + shift
            if end is not None and at >= end:
                return
            yield at, data


def _expand(paths: Sequence[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            out.extend(sorted((os.path.join(p, n) for n in os.listdir(p) if n.rsplit(".", 1)[-1].isdigit()),
                              key=lambda q: binlog_file_key(os.path.basename(q))))
        else:
            out.append(p)
    return out
