"""The ``binlog`` PySpark data source: a streaming reader that follows a server, a batch reader for files.

``spark.readStream.format("binlog").option("dsn", ...).load()`` — the driver follows the server
(``_Scout``) and plans micro-batches on transaction boundaries; its offsets are checkpoints as JSON
(``{"file", "pos", "gtid"}``); while Spark runs a batch, the scout reads the next one's worth in a
thread. A micro-batch never spans a schema change: a DDL transaction is a batch of its own, so
every batch has one layout per table. A batch is split into ranges of about ``rowsPerPartition``
rows / ``bytesPerPartition`` bytes, and into at least one range per core when it is smaller.
Executors replay their range with a replication connection of their own, from the range's start to
its end, and decode it into Arrow batches of ``sluice.spark.changes.ARROW_SCHEMA``; the same offsets
always give the same rows.

``spark.read.format("binlog").load(path_or_paths)`` — archived binlog files, a task per file or per
transaction-aligned segment of a large file; the driver first reads the DDL of the files in order so
that each task starts with the schema in force at its segment's start (the same rules as ``sluice
dump``).

Options (camelCase, as Spark spells them): ``dsn``, ``tables``, ``excludeTables``, ``ops``,
``startingPosition`` (``earliest`` (default), ``latest``, ``FILE:POS`` or a GTID set),
``maxRowsPerBatch`` (the driver then decodes ahead to count rows), ``maxBytesPerBatch`` (planning
by binlog bytes: the driver decodes no rows), ``rowsPerPartition`` (default 100000) /
``bytesPerPartition`` (default 16 MiB) for the ranges executors decode in parallel, ``segmentBytes``
(files: a task per transaction-aligned segment of about this size, default 128 MiB) and
``schemaHistory`` (a file that keeps the schema history across restarts; strongly advised unless
the server writes ``binlog_row_metadata=FULL``).
"""

from __future__ import annotations

import io
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from sluice.cdc.capture import CaptureConfig, ChangeCapture, CommittedTransaction
from sluice.cdc.filters import parse_ops, table_filter
from sluice.cdc.follow import FollowConfig, follow
from sluice.cdc.position import Checkpoint, binlog_file_key
from sluice.cdc.records import RowChange
from sluice.cdc.schema import Catalog, SchemaHistory, SchemaTracker, bootstrap_catalog
from sluice.dsn import parse_dsn
from sluice.errors import ConfigError, DataLossError
from sluice.io.binlog_file import iter_raw_events
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_files, server_binlog_status
from sluice.spark.changes import CHANGE_SCHEMA, record_batch

__all__ = ["BinlogDataSource", "SourceOptions"]

log = logging.getLogger(__name__)

ARROW_BATCH_ROWS = 8192


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """The data source's options, checked once on the driver."""

    dsn: str | None = None
    tables: str | None = None
    exclude_tables: str | None = None
    ops: frozenset[str] | None = None
    starting: str = "earliest"
    max_rows: int | None = None
    max_bytes: int | None = None
    rows_per_partition: int = 100_000
    bytes_per_partition: int = 16 << 20
    schema_history: str | None = None
    paths: tuple[str, ...] = ()
    segment_bytes: int = 128 << 20
    skip_incidents: bool = False

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        lower = {k.lower(): v for k, v in options.items()}

        def number(name: str) -> int | None:
            text = lower.get(name.lower())
            if text is None or text == "":
                return None
            try:
                value = int(text)
            except ValueError:
                raise ConfigError(f"option {name} must be a whole number, found {text!r}") from None
            if value <= 0:
                raise ConfigError(f"option {name} must be positive, found {value}")
            return value

        paths: tuple[str, ...] = ()
        if "paths" in lower:
            import json

            paths = tuple(json.loads(lower["paths"]))
        elif "path" in lower:
            paths = (lower["path"],)
        return cls(
            dsn=lower.get("dsn"),
            tables=lower.get("tables"),
            exclude_tables=lower.get("excludetables"),
            ops=parse_ops(lower.get("ops")),
            starting=lower.get("startingposition", "earliest"),
            max_rows=number("maxRowsPerBatch"),
            max_bytes=number("maxBytesPerBatch"),
            rows_per_partition=number("rowsPerPartition") or 100_000,
            bytes_per_partition=number("bytesPerPartition") or 16 << 20,
            schema_history=lower.get("schemahistory"),
            paths=paths,
            segment_bytes=number("segmentBytes") or 128 << 20,
            skip_incidents=_flag("skipIncidents", lower.get("skipincidents")),
        )

    def capture_config(self) -> CaptureConfig:
        return CaptureConfig(table_filter=table_filter(self.tables, self.exclude_tables), ops=self.ops,
                             skip_incidents=self.skip_incidents)

    def follow_config(self, *, until_end: bool = True) -> FollowConfig:
        if not self.dsn:
            raise ConfigError('the binlog stream needs option("dsn", "mysql://user:password@host:port/")')
        return FollowConfig(parse_dsn(self.dsn), until_end=until_end, heartbeat_period=0, retries=8)


def _flag(name: str, text: str | None) -> bool:
    if text is None or text.strip().lower() in ("", "false", "0", "no"):
        return False
    if text.strip().lower() in ("true", "1", "yes"):
        return True
    raise ConfigError(f"option {name} is true or false, found {text!r}")


def offset_json(cp: Checkpoint) -> dict[str, Any]:
    return {"file": cp.file, "pos": cp.pos, "gtid": cp.gtid_set or ""}


def offset_checkpoint(offset: Mapping[str, Any]) -> Checkpoint:
    try:
        return Checkpoint(str(offset["file"]), int(offset["pos"]), str(offset.get("gtid") or "") or None)
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"not a binlog offset: {offset!r}; expected {{'file', 'pos', 'gtid'}}") from None


def _key(cp: Checkpoint) -> tuple[str, int, int]:
    return (*binlog_file_key(cp.file), cp.pos)


@dataclass
class RangePartition(InputPartition):
    """Whole transactions from ``start`` to ``end`` (offsets), decoded with ``catalog`` at start."""

    start: dict[str, Any]
    end: dict[str, Any]
    catalog: dict[str, Any]
    flavor: str
    rows: int = 0


@dataclass
class FilePartition(InputPartition):
    """A file, or the transactions of a file from ``start`` to ``end`` (None: its end)."""

    path: str
    catalog: dict[str, Any]
    flavor: str | None
    start: int = 4
    end: int | None = None


@dataclass
class _Planned:
    start: Checkpoint
    end: Checkpoint
    rows: int
    size: int
    ddl: bool
    catalog: Catalog


@dataclass
class _Scout:
    """Driver side: follows the server ahead of the query, remembering transaction boundaries.

    After each ``latestOffset`` a thread goes on reading the next batch's worth while Spark runs
    the batch just planned; the next ``latestOffset`` joins it first, and ``partitions`` /
    ``commit`` meanwhile touch ``pending`` under ``_lock`` only."""

    options: SourceOptions
    origin: Checkpoint
    capture: ChangeCapture
    flavor: str
    pending: list[_Planned] = field(default_factory=list)
    at_end: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None
    _failure: BaseException | None = None
    _stopping: bool = False

    def read_ahead(self, want_rows: int | None, want_bytes: int | None, target: Checkpoint | None) -> None:
        """Follow the binlog from the last scouted boundary until enough is planned, a DDL
        transaction (which ends a batch) was seen, or its end."""
        with self._lock:
            pending = list(self.pending)
        rows = sum(p.rows for p in pending)
        size = sum(p.size for p in pending)
        if ((want_rows is not None and rows >= want_rows) or (want_bytes is not None and size >= want_bytes)
                or any(p.ddl for p in pending)):
            return
        catalog = self.capture.tracker.catalog
        self.at_end = False
        for committed in follow(self.options.follow_config(until_end=True), self.capture):
            tx = committed.transaction
            n = committed.row_count
            span = tx.end.pos - tx.start.pos if tx.end.file == tx.start.file else tx.end.pos
            with self._lock:
                self.pending.append(_Planned(tx.start, tx.end, n, span, tx.kind == "ddl", catalog))
            catalog = self.capture.tracker.catalog
            rows += n
            size += span
            if (want_rows is not None and rows >= want_rows) or (want_bytes is not None and size >= want_bytes):
                return
            if target is not None and _key(tx.end) >= _key(target):
                return
            if tx.kind == "ddl" or self._stopping:  # a DDL ends the batch: what follows is the next one's
                return
        self.at_end = True

    def read_ahead_later(self, want_rows: int | None, want_bytes: int | None, target: Checkpoint | None) -> None:
        """``read_ahead`` in a thread, while Spark runs the batch just planned; ``join`` waits for it."""

        def run() -> None:
            try:
                self.read_ahead(want_rows, want_bytes, target)
            except BaseException as exc:  # raised by the next join, where a read would have raised it
                self._failure = exc

        self._thread = threading.Thread(target=run, name="sluice-binlog-scout", daemon=True)
        self._thread.start()

    def join(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def drop_before(self, start: Checkpoint) -> None:
        with self._lock:
            self.pending = [p for p in self.pending if _key(p.start) >= _key(start)]

    def choose_end(self, start: Checkpoint, max_rows: int | None, max_bytes: int | None,
                   target: Checkpoint | None) -> Checkpoint:
        self.drop_before(start)
        end, rows, size = start, 0, 0
        for p in self.pending:
            if target is not None and _key(p.end) > _key(target):
                break
            if p.ddl:
                if rows == 0 and size == 0:
                    end = p.end
                break
            if rows and max_rows is not None and rows + p.rows > max_rows:
                break
            if size and max_bytes is not None and size + p.size > max_bytes:
                break
            end, rows, size = p.end, rows + p.rows, size + p.size
        return end

    def ranges(self, start: Checkpoint, end: Checkpoint, per_partition: int,
               bytes_per_partition: int) -> list[RangePartition] | None:
        """Partitions for [start, end) from what was scouted, or None if it was not: about
        ``per_partition`` rows each when rows were counted, else about ``bytes_per_partition``, and
        at least one range per core (of this machine) when the batch has enough transactions."""
        with self._lock:
            pending = list(self.pending)
        chosen = [p for p in pending if _key(p.start) >= _key(start) and _key(p.end) <= _key(end)]
        if not chosen or chosen[0].start != start or chosen[-1].end != end:
            return None
        # Rows are counted only under maxRowsPerBatch; planning by bytes decodes none (every count is 0).
        counted = self.options.max_rows is not None
        weights = [p.rows if counted else p.size for p in chosen]
        limit = per_partition if counted else bytes_per_partition
        limit = max(1, min(limit, -(-sum(weights) // _parallelism())))
        parts: list[RangePartition] = []
        group: list[_Planned] = []
        weight = 0
        for p, w in zip(chosen, weights, strict=True):
            if group and weight + w > limit:
                parts.append(self._range(group))
                group, weight = [], 0
            group.append(p)
            weight += w
        parts.append(self._range(group))
        return parts

    def _range(self, group: list[_Planned]) -> RangePartition:
        return RangePartition(
            offset_json(group[0].start), offset_json(group[-1].end), group[0].catalog.to_json(), self.flavor,
            sum(g.rows for g in group),
        )


def _parallelism() -> int:
    """How many ranges a batch is split into at least: the cores of the machine (local mode)."""
    return max(1, os.cpu_count() or 1)


def _tracker_at(options: SourceOptions, conn: Connection, start: Checkpoint) -> SchemaTracker:
    flavor = "mariadb" if conn.is_mariadb else "mysql"
    history = SchemaHistory.open(options.schema_history) if options.schema_history else None
    catalog = history.catalog_at(start.file, start.pos) if history is not None and start.file else None
    if catalog is None:
        # Every table, not only the captured ones: a table added to the capture later is known already.
        catalog = bootstrap_catalog(conn)
        if history is not None:
            history.record_bootstrap(start.file, start.pos, catalog)
    return SchemaTracker(catalog, history, flavor=flavor)


class BinlogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are transaction boundaries; executors decode their ranges themselves."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._scout: _Scout | None = None
        self._target: Checkpoint | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Executors get plain data: the options. The scout lives on the driver only.
        return {"options": self.options, "_scout": None, "_target": None}

    # -- driver ----------------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        starting = self.options.starting.strip()
        with Connection.open(self.options.follow_config().connection) as conn:
            if starting.lower() == "latest":
                status = server_binlog_status(conn)
                return offset_json(Checkpoint(status.file, status.pos, status.gtid_executed or None))
            if starting.lower() == "earliest":
                files = server_binlog_files(conn)
                if not files:
                    raise ConfigError("the server lists no binary logs (SHOW BINARY LOGS)")
                log.warning("binlog source: starting at the earliest binlog still on the server, %s:4", files[0][0])
                return offset_json(Checkpoint(files[0][0], 4))
        file, sep, pos = starting.rpartition(":")
        if sep and pos.isdigit() and "-" not in pos and not _looks_like_gtid(starting):
            return offset_json(Checkpoint(file, int(pos)))
        return offset_json(Checkpoint("", 4, starting))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_rows is not None:
            return ReadMaxRows(self.options.max_rows)
        if self.options.max_bytes is not None:
            return ReadMaxRows(1 << 62)  # carries maxBytesPerBatch: the engine has no byte limit for Python sources
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        with Connection.open(self.options.follow_config().connection) as conn:
            status = server_binlog_status(conn)
        self._target = Checkpoint(status.file, status.pos)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = offset_checkpoint(start)
        if self._scout is not None:
            self._scout.join()
        scout = self._scout_at(begin)
        if isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows if self.options.max_rows is not None else None
            max_bytes = self.options.max_bytes
        else:  # ReadAllAvailable: the engine asks for everything (e.g. Trigger.Once)
            max_rows = max_bytes = None
        scout.drop_before(begin)
        scout.read_ahead(max_rows, max_bytes, self._target)
        end = scout.choose_end(begin, max_rows, max_bytes, self._target)
        target = self._target
        if not scout.at_end and (target is None or _key(end) < _key(target)):
            # Read the next batch's worth while Spark runs this one.
            rows = sum(p.rows for p in scout.pending)
            size = sum(p.size for p in scout.pending)
            scout.read_ahead_later(None if max_rows is None else rows + max_rows,
                                   None if max_bytes is None else size + max_bytes, target)
        return offset_json(end)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin, finish = offset_checkpoint(start), offset_checkpoint(end)
        if begin == finish:
            return []
        scout = self._scout
        if scout is not None:
            parts = scout.ranges(begin, finish, self.options.rows_per_partition, self.options.bytes_per_partition)
            if parts is not None:
                return parts
        # A batch planned before a restart: one range, with the schema persisted at its start.
        with Connection.open(self.options.follow_config().connection) as conn:
            tracker = _tracker_at(self.options, conn, begin)
            flavor = "mariadb" if conn.is_mariadb else "mysql"
        return [RangePartition(start, end, tracker.catalog.to_json(), flavor)]

    def commit(self, end: dict[str, Any]) -> None:
        if self._scout is not None:
            self._scout.drop_before(offset_checkpoint(end))

    def stop(self) -> None:
        scout, self._scout = self._scout, None
        if scout is not None:
            scout._stopping = True

    def _scout_at(self, start: Checkpoint) -> _Scout:
        scout = self._scout
        if scout is not None and (scout.origin == start or any(p.start == start for p in scout.pending)
                                  or scout.capture.boundary == start):
            return scout
        config = self.options.follow_config()
        with Connection.open(config.connection) as conn:
            tracker = _tracker_at(self.options, conn, start)
            flavor = "mariadb" if conn.is_mariadb else "mysql"
        if self.options.max_rows is not None:
            # Row counts are needed to honour maxRowsPerBatch: decode (but build no records).
            planning = replace(self.options.capture_config(), count_only=True)
        else:
            # Planning by bytes: transaction boundaries and DDL only, no row is decoded here.
            planning = CaptureConfig(table_filter=lambda _db, _table: False, count_only=True,
                                     skip_incidents=self.options.skip_incidents)
        capture = ChangeCapture(planning, start, tracker)
        self._scout = _Scout(self.options, start, capture, flavor)
        return self._scout

    # -- executors -------------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        start, end = offset_checkpoint(partition.start), offset_checkpoint(partition.end)
        tracker = SchemaTracker(Catalog.from_json(partition.catalog), None, flavor=partition.flavor)
        capture = ChangeCapture(self.options.capture_config(), start, tracker)
        goal = _key(end)
        reached = False

        def until_end() -> Iterator[CommittedTransaction]:
            nonlocal reached
            for committed in follow(self.options.follow_config(until_end=True), capture):
                here = _key(committed.transaction.end)
                if here > goal:
                    return
                yield committed
                if here == goal:
                    reached = True
                    return

        yield from _arrow_batches(until_end())
        if not reached:
            raise DataLossError(
                f"the binlog range {start}..{end} planned for this batch could not be read to its end "
                "(the server's binlog changed or was purged): restart the query from a new checkpoint location"
            )


def _arrow_batches(transactions: Iterable[CommittedTransaction]) -> Iterator[pa.RecordBatch]:
    """The row changes of committed transactions as Arrow batches of the change schema."""
    changes: list[RowChange] = []
    commits: list[int] = []
    for committed in transactions:
        tx = committed.transaction
        commit_us = tx.commit_us if tx.commit_us is not None else tx.ts * 1_000_000
        for record in committed.records:
            if type(record) is RowChange:
                changes.append(record)
                commits.append(commit_us)
        if len(changes) >= ARROW_BATCH_ROWS:
            yield record_batch(changes, commits)
            changes, commits = [], []
    if changes:
        yield record_batch(changes, commits)


def _looks_like_gtid(text: str) -> bool:
    head = text.split(",")[0].strip()
    return len(head) >= 36 and head[8:9] == "-" and head[13:14] == "-"


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

        yield from _arrow_batches(committed())


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


class BinlogDataSource(DataSource):
    """``format("binlog")``: row changes from a MySQL / MariaDB binlog (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return "binlog"

    def schema(self) -> str:
        return CHANGE_SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return BinlogStreamReader(SourceOptions.parse(self.options))

    def reader(self, schema: Any) -> DataSourceReader:
        return BinlogFileReader(SourceOptions.parse(self.options))
