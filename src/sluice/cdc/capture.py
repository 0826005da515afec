"""The change-capture core: raw binlog events in, committed transactions of change records out.

``ChangeCapture`` owns the pieces that must move in lock-step for one stream of events: the
``EventParser`` (checksums, TABLE_MAPs, row decoding), the ``SchemaTracker`` through
``CapturedTables`` (DDL replay and the column facts every row plan is compiled with), the
``TransactionAssembler`` (only committed transactions come out, each with the checkpoints before and
after it), the row-change builder and what is made of each transaction (``TransactionOutput``, as
``CaptureConfig`` asks; both in modules of their own). It is sans-I/O: the caller feeds ``(file, pos, next_pos,
bytes)`` from a binlog file or a replication stream and gets a ``CommittedTransaction`` whenever one
completes.

DDL is applied to the tracked schema the moment its QUERY event is decoded, so the rows that
follow are decoded with the table's new layout; a DDL statement is its own transaction.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Any

from sluice.binlog import rowplan
from sluice.binlog.absent import ABSENT
from sluice.binlog.constants import ChecksumAlgorithm
from sluice.binlog.events import (
    FormatDescriptionEvent,
    IncidentEvent,
    QueryEvent,
    RowsEvent,
    TableMapEvent,
)
from sluice.binlog.header import build_header, frozen_builder
from sluice.binlog.parser import EventParser, ParserConfig
from sluice.binlog.position import Checkpoint
from sluice.cdc import capture_out as out
from sluice.cdc.capture_config import COUNTING_OUTPUTS, PART_BYTES, CaptureConfig, CaptureOutput, on_incident
from sluice.cdc.captured_tables import CapturedTables
from sluice.cdc.committed import CommittedTransaction, CountedRows, DdlRecord, WrittenLines
from sluice.cdc.jsonl import gtid_ts, value_bytes
from sluice.cdc.records import RowChangeBuilder
from sluice.cdc.schema import ResolvedTable, SchemaTracker
from sluice.cdc.transaction_out import TransactionOutput
from sluice.cdc.transactions import TransactionAssembler
from sluice.dsn import flavor_of
from sluice.errors import MalformedEventError

__all__ = [
    "PART_BYTES", "CaptureConfig", "CaptureOutput", "ChangeCapture", "CommittedTransaction", "DdlRecord", "on_incident",
]



_SIZE = struct.Struct("<I").unpack_from
_build_rows = frozen_builder(RowsEvent)


class ChangeCapture:
    """Feed raw events of one stream in order; committed transactions come out."""

    def __init__(self, config: CaptureConfig, start: Checkpoint, tracker: SchemaTracker | None = None) -> None:
        self.config = config
        self.tracker = tracker if tracker is not None else SchemaTracker()
        self.tables = CapturedTables(self.tracker)
        self.parser = EventParser(
            ParserConfig(
                verify_checksum=config.verify_checksum,
                table_filter=config.table_filter,
                initial_checksum=config.initial_checksum,
                plan_for=self.tables.plan,
            )
        )
        self.assembler = TransactionAssembler(start)
        self.builder = RowChangeBuilder(resolve=self.tables.names, ops=config.ops, row_end=self.tables.row_end,
                                        columns=config.columns)
        self._file = start.file
        self._pos = start.pos
        self._read_to = start.pos  # the end of the last event taken
        self.label: str | None = None  # how errors name the input (a file's full path), if not by `file`
        self.incidents_skipped = 0
        self._fed = 0
        self._gtid_ts: tuple[str | None, bytes] = ("", b"")  # the open transaction's ',"gtid":…,"ts":'
        # Runs of TABLE_MAP and rows events go to the compiled core when it is in use (decided here).
        # Rows counted with an ops filter are not: a system-versioned table's op is its row's.
        core = rowplan.core()
        counted_ops = config.output in COUNTING_OUTPUTS and config.ops is not None
        self._run = core.EventRun(self.parser, build_header, _build_rows) if core and not counted_ops else None
        self._core = core
        self._run_types: frozenset[int] = core.RUN_TYPES if core is not None else frozenset()
        self.output = TransactionOutput(config, self.builder, self.tables, core)
        output = config.output
        if self._run is not None and self.output.lines:
            self._run.write_lines(lambda table_map, file: out.line_spec(self.builder, table_map, file, self._pos),
                                  self.builder.kinds, ABSENT, value_bytes, WrittenLines)
        elif self._run is not None and output is CaptureOutput.COUNTS:
            self._run.skip_values = True
        elif self._run is not None and self.output.columns:
            self._run.write_columns(lambda table_map, file: out.column_spec(self.builder, table_map, file, self._pos),
                                    self.builder.kinds, ABSENT, value_bytes, output is CaptureOutput.TYPED_COLUMNS)

    @property
    def layouts(self) -> dict[tuple[str, str], tuple[TableMapEvent, ResolvedTable]]:
        """The TABLE_MAP and column facts each table's rows were last decoded with (``CapturedTables``)."""
        return self.tables.layouts

    def resolve(self, table_map: TableMapEvent) -> ResolvedTable:
        """The column facts for a TABLE_MAP's rows (``CapturedTables.resolve``)."""
        return self.tables.resolve(table_map)

    @property
    def boundary(self) -> Checkpoint:
        """Where a resume must start so that nothing is lost: the last transaction boundary."""
        return self.assembler.boundary

    def restart(self, checksum: ChecksumAlgorithm | None = None) -> None:
        """A new connection starts: forget stream state and any transaction cut off by the break."""
        self.assembler.cut_off()
        self.output.restart()
        self.parser.reset()
        if checksum is not None:
            self.parser.checksum_alg = int(checksum)
        self.tables.forget_ddl()

    def open_progress(self) -> tuple[str, int, int, int] | None:
        """The open transaction, if any: its file and start offset, the binlog bytes read of it and the
        row changes decoded or counted of it so far (0 when the capture neither decodes nor counts them)."""
        tx = self.assembler.open_transaction
        if tx is None:
            return None
        return tx.file, tx.pos, max(0, self._read_to - tx.pos), out.rows_so_far(tx.events)

    @property
    def events_read(self) -> int:
        """Events fed so far, in all."""
        return self._fed + (self._run.taken if self._run is not None else 0)

    def feed(self, file: str, pos: int, next_pos: int, data: bytes | memoryview) -> CommittedTransaction | None:
        """Decode one event at ``(file, pos)``; returns the transaction it commits, if any."""
        if self._run is not None and len(data) >= 19 and data[4] in self._run_types:
            events = self.assembler.open_events()
            if events is not None:
                buf = data if type(data) is bytes else bytes(data)  # a replication stream's payload view
                if self._take_run(buf, 0, len(buf), file, pos, events):
                    return None
        return self._feed(file, pos, next_pos, data)

    def feed_block(self, file: str, offset: int, block: bytes,
                   stop: int | None = None) -> Iterator[CommittedTransaction]:
        """Decode a block of whole events (``block[:stop]``) that starts at ``(file, offset)`` and
        yield each transaction as it commits. Runs of TABLE_MAP and rows events inside a transaction
        go to the compiled core in one call (see ``EventRun``). The block is read only as far as it
        is iterated: a reader that stops after a transaction leaves the capture (its schema, its
        boundary) just after that transaction, as if the block had ended there."""
        run, run_types = self._run, self._run_types
        feed = self._feed
        pos, n = 0, len(block) if stop is None else stop
        while pos < n:
            if run is not None and block[pos + 4] in run_types:
                events = self.assembler.open_events()
                if events is not None:
                    taken = self._take_run(block, pos, n, file, offset, events)
                    if taken != pos:
                        pos = taken
                        continue
            (size,) = _SIZE(block, pos + 9)
            if size < 19:
                raise MalformedEventError(
                    f"event header declares {size} bytes, less than the header itself",
                    file=self.label or file, offset=offset + pos,
                )
            end = pos + size
            done = feed(file, offset + pos, offset + end, block[pos:end])
            pos = end
            if done is not None:
                yield done

    def _take_run(self, buf: bytes, start: int, end: int, file: str, base: int, events: list[Any]) -> int:
        """Let the compiled core take the events of ``buf[start:end]`` it can; returns where it stopped."""
        run = self._run
        assert run is not None
        count = self.output.counting
        gtid = None
        if self.output.lines:
            open_gtid = self.assembler.open_gtid
            if self._gtid_ts[0] != open_gtid:
                self._gtid_ts = (open_gtid, gtid_ts(open_gtid))
            gtid = self._gtid_ts[1]
        stop: int = run.run(buf, start, end, file, base, None if count else events, self.tracker.version, gtid)
        if stop != start:
            self.assembler.took_rows()
            if count:
                counted = run.take_counts()
                if any(counted):
                    events.append((file, base + start, CountedRows(*counted)))
            elif self.output.grows:
                self.output.grew(self.assembler.open_transaction, base + stop)
            self._read_to = base + stop
        return stop

    def _feed(self, file: str, pos: int, next_pos: int, data: bytes | memoryview) -> CommittedTransaction | None:
        self._fed += 1
        self._file, self._pos = file, pos
        self.tables.at(file, pos)
        event: Any = self.parser.parse(data, file=self.label or file, offset=pos)
        kind = type(event)
        if kind is QueryEvent:
            self.tables.on_query(event, file, pos, self.assembler)
        elif kind is IncidentEvent and event.incident:
            on_incident(event, f"{self.label or file}:{pos}", skip=self.config.skip_incidents)
            self.incidents_skipped += 1
        elif kind is FormatDescriptionEvent:
            self.tracker.learn_flavor(flavor_of(event.is_mariadb))
        self._read_to = next_pos
        tx = self.assembler.feed(file, pos, next_pos, event)
        if tx is None:
            if self.output.grows:  # per event: no call unless held lines or parts are asked for
                self.output.grew(self.assembler.open_transaction, next_pos)
            return None
        return self.output.committed(tx)

    def feed_file(self, file: str, label: str,
                  spans: Iterable[tuple[int, bytes, int]]) -> Iterator[CommittedTransaction]:
        """Decode the ``(offset, buf, stop)`` blocks of whole events (``buf[:stop]``) of one binlog
        file offline (``begin_file``, every block, ``cut_off``; see ``io.binlog_file.iter_raw_spans``)
        and yield the transactions it commits."""
        self.begin_file(file, label)
        feed_block = self.feed_block
        for offset, buf, stop in spans:
            yield from feed_block(file, offset, buf, stop)
        self.cut_off()

    def begin_file(self, file: str, label: str | None = None) -> None:
        """Offline decoding moves on to another file: transactions and GTIDs start over there (the
        files may come from different servers); the schema carries on. ``label`` names the file in
        errors (e.g. its full path) where records carry only ``file``."""
        self.assembler.cut_off()
        self.assembler = TransactionAssembler(Checkpoint(file, 4))
        self.label = label

    def cut_off(self) -> None:
        """The input ended: a transaction still open was cut off and emits nothing."""
        self.assembler.cut_off()
