"""The change-capture core: raw binlog events in, committed transactions of change records out.

``ChangeCapture`` owns the pieces that must move in lock-step for one stream of events: the
``EventParser`` (checksums, TABLE_MAPs, row decoding), the ``SchemaTracker`` through
``CapturedTables`` (DDL replay and the column facts every row plan is compiled with), the
``TransactionAssembler`` (only committed transactions come out, each with the checkpoints before and
after it) and the row-change builder. It is sans-I/O: the caller feeds ``(file, pos, next_pos,
bytes)`` from a binlog file or a replication stream and gets a ``CommittedTransaction`` whenever one
completes.

DDL is applied to the tracked schema the moment its QUERY event is decoded, so the rows that
follow are decoded with the table's new layout; a DDL statement is its own transaction.
"""

from __future__ import annotations

import enum
import logging
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sluice.binlog import rowplan
from sluice.binlog.absent import ABSENT
from sluice.binlog.constants import ChecksumAlgorithm
from sluice.binlog.events import (
    FormatDescriptionEvent,
    IncidentEvent,
    QueryEvent,
    RowsEvent,
    TableMapEvent,
    TransactionPayloadEvent,
)
from sluice.binlog.header import build_header, frozen_builder
from sluice.binlog.parser import EventParser, ParserConfig
from sluice.binlog.position import Checkpoint
from sluice.cdc import capture_out as out
from sluice.cdc.captured_tables import CapturedTables
from sluice.cdc.committed import CommittedTransaction, CountedRows, DdlRecord, WrittenLines
from sluice.cdc.held import HOLD_AFTER, TX_MEMORY, MemoryBuffer
from sluice.cdc.jsonl import gtid_ts, value_bytes
from sluice.cdc.records import RowChange, RowChangeBuilder
from sluice.cdc.schema import ResolvedTable, SchemaTracker
from sluice.cdc.transactions import Transaction, TransactionAssembler
from sluice.dsn import flavor_of
from sluice.errors import DataLossError, MalformedEventError

if TYPE_CHECKING:
    from sluice.cdc.schema.ddl import DdlOutcome

__all__ = [
    "PART_BYTES", "CaptureConfig", "CaptureOutput", "ChangeCapture", "CommittedTransaction", "DdlRecord", "on_incident",
]

log = logging.getLogger(__name__)

#: ``Incident`` codes of the server (sql/rpl_constants.h): 0 is none, 1 the only one logged.
INCIDENT_NAMES = {1: "LOST_EVENTS"}

_SIZE = struct.Struct("<I").unpack_from
_build_rows = frozen_builder(RowsEvent)


class CaptureOutput(enum.Enum):
    """What a capture makes of a committed transaction's row changes (``CommittedTransaction``)."""

    #: ``records``: ``RowChange``s, and ``DdlRecord``s when ``CaptureConfig.ddl`` asks for them.
    RECORDS = "records"
    #: ``counted`` only: the compiled core counts the rows events it takes by walking their row
    #: images' lengths, decoding no value (the Python path decodes them all the same).
    COUNTS = "counts"
    #: ``counted`` only, every value of the counted rows decoded (``sluice dump --format none``).
    DECODED_COUNTS = "decoded_counts"
    #: ``lines``: the records' JSON lines.
    LINES = "lines"
    #: ``columns``: change-log rows (the compiled core's ``ChangeRows``) where the core is in use;
    #: ``records`` without it.
    COLUMNS = "columns"
    #: ``columns``, with each table's images kept as typed columns too (``ChangeRows.typed``): the
    #: pipeline's staging tasks build their MERGE sources from them; nothing else reads them.
    TYPED_COLUMNS = "typed_columns"


_COUNTING = frozenset({CaptureOutput.COUNTS, CaptureOutput.DECODED_COUNTS})
_COLUMNS = frozenset({CaptureOutput.COLUMNS, CaptureOutput.TYPED_COLUMNS})
#: The default part of ``hold_columns``: bytes of binlog of an open transaction handed out at once.
PART_BYTES = 8 << 20


@dataclass(frozen=True, slots=True)
class CaptureConfig:
    """What to capture: ``table_filter(db, table)`` (rows of other tables are never decoded),
    ``ops`` (a subset of ``records.ROW_OPS``; None = all), ``ddl`` (emit DDL records), and
    ``output``, what is made of the row changes."""

    table_filter: Callable[[str, str], bool] | None = None
    ops: frozenset[str] | None = None
    ddl: bool = False
    verify_checksum: bool = True
    initial_checksum: ChecksumAlgorithm | None = None
    output: CaptureOutput = CaptureOutput.RECORDS
    # An INCIDENT event says the server failed to log some changes there. By default capture stops
    # with DataLossError (as a replica does); True logs a warning, counts it and goes on.
    skip_incidents: bool = False
    #: ``LINES``: bytes of JSON lines an open transaction keeps in memory until its commit, and what
    #: makes the buffer that holds them given those bytes (the shell's ``io.spill.SpillBuffer``,
    #: which spills past them to a temporary file; None: ``cdc.held.MemoryBuffer``, all in memory).
    memory: int = TX_MEMORY
    spill: Callable[[int], Any] | None = None
    #: Columns kept out or hashed (``sluice.cdc.column_rules.ColumnRules``; None: none).
    columns: Any = None
    #: ``COLUMNS`` with the compiled core: ``hold_columns(rows, gtid)`` takes an open transaction's
    #: change-log rows each time ``part_bytes`` more of its binlog was read, before its commit, and
    #: returns what stands for them (``capture_out.hold_columns``; the commit's ``held``).
    hold_columns: Callable[[Any, str | None], Any] | None = None
    part_bytes: int = PART_BYTES


def on_incident(event: IncidentEvent, where: str, *, skip: bool) -> None:
    """An INCIDENT event at ``where``: a ``DataLossError`` (as a replica stops), or with ``skip`` a
    warning."""
    name = INCIDENT_NAMES.get(event.incident, f"code {event.incident}")
    message = f" ({event.message!r})" if event.message else ""
    if not skip:
        raise DataLossError(
            f"the server logged an incident at {where}: {name}{message}. It failed to write some changes "
            "to the binlog there, so changes made around that time may be missing from the capture (a "
            "replica stops here too). Re-snapshot the tables written at that time, then go on past the "
            "incident with --skip-incidents"
        )
    log.warning("skipped the incident %s%s logged at %s: changes around it may be missing", name, message, where)


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
        counted_ops = config.output in _COUNTING and config.ops is not None
        self._run = core.EventRun(self.parser, build_header, _build_rows) if core and not counted_ops else None
        self._core = core
        self._run_types: frozenset[int] = core.RUN_TYPES if core is not None else frozenset()
        output = config.output
        self._counting = output in _COUNTING
        self._lines_out = output is CaptureOutput.LINES
        self._hold_after = min(HOLD_AFTER, config.memory // 4) if self._lines_out else None
        self._columns_out = core is not None and output in _COLUMNS
        self._part_after = config.part_bytes if self._columns_out and config.hold_columns else None
        self._parted: tuple[Any, int] = (None, 0)  # (the open transaction's start, where its last part ended)
        if self._run is not None and self._lines_out:
            self._run.write_lines(lambda table_map, file: out.line_spec(self.builder, table_map, file, self._pos),
                                  self.builder.kinds, ABSENT, value_bytes, WrittenLines)
        elif self._run is not None and output is CaptureOutput.COUNTS:
            self._run.skip_values = True
        elif self._run is not None and self._columns_out:
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
        self._parted = (None, 0)
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
        count = self._counting
        gtid = None
        if self._lines_out:
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
            elif self._hold_after is not None:
                self._hold(base + stop)
            elif self._part_after is not None:
                self._hold_part(base + stop)
            self._read_to = base + stop
        return stop

    def _feed(self, file: str, pos: int, next_pos: int, data: bytes | memoryview) -> CommittedTransaction | None:
        self._fed += 1
        self._file, self._pos = file, pos
        self.tables.at(file, pos)
        event: Any = self.parser.parse(data, file=self.label or file, offset=pos)
        kind = type(event)
        if kind is QueryEvent:
            self.tables.on_query(event, file, pos, self.assembler.open_gtid)
        elif kind is IncidentEvent and event.incident:
            on_incident(event, f"{self.label or file}:{pos}", skip=self.config.skip_incidents)
            self.incidents_skipped += 1
        elif kind is FormatDescriptionEvent:
            self.tracker.learn_flavor(flavor_of(event.is_mariadb))
        self._read_to = next_pos
        tx = self.assembler.feed(file, pos, next_pos, event)
        if tx is None:
            if self._hold_after is not None:
                self._hold(next_pos)
            elif self._part_after is not None:
                self._hold_part(next_pos)
            return None
        if self._counting:
            return CommittedTransaction(tx, [], out.count_rows(self.builder, tx.events))
        if self._lines_out:
            lines, count = self._lines(tx)
            return CommittedTransaction(tx, [], count, lines)
        if self._columns_out:
            rows, count, held = self._columns(tx)
            return CommittedTransaction(tx, [], count, columns=rows, held=held)
        return CommittedTransaction(tx, list(self._records(tx)))

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

    # -- records -------------------------------------------------------------------------------
    def _records(self, tx: Transaction) -> Iterator[RowChange | DdlRecord]:
        self.builder.gtid = tx.rows_gtid
        for file, pos, event in tx.events:
            yield from self._event_records(tx, file, pos, event)

    def _lines(self, tx: Transaction) -> tuple[Any, int]:
        self.builder.gtid = tx.rows_gtid
        return out.transaction_lines(tx, self.builder, self._event_records,
                                 None if self._core is None else self._core.rows_jsonl)

    def _hold(self, pos: int) -> None:
        """``LINES``: an open transaction past ``_hold_after`` bytes of binlog moves its lines into
        its bounded buffer (``cdc.held``) as they come."""
        tx = self.assembler.open_transaction
        if tx is None or pos - tx.pos < self._hold_after:  # type: ignore[operator]
            return
        make, memory = self.config.spill or MemoryBuffer, self.config.memory
        out.hold_lines(tx, self.builder, self._event_records, None if self._core is None else self._core.rows_jsonl,
                   lambda: make(memory))

    def _hold_part(self, pos: int) -> None:
        """``COLUMNS`` with ``hold_columns``: hand out an open transaction's rows each ``part_bytes``."""
        tx, hand_out = self.assembler.open_transaction, self.config.hold_columns
        if tx is None or hand_out is None:
            return
        at = (tx.file, tx.pos)
        if pos - (self._parted[1] if self._parted[0] == at else tx.pos) < self._part_after:  # type: ignore[operator]
            return
        self._parted = (at, pos)
        out.hold_columns(tx, self.builder, self._event_records, self._core, hand_out,
                         typed=self.config.output is CaptureOutput.TYPED_COLUMNS)

    def _columns(self, tx: Transaction) -> tuple[Any, int, tuple[Any, ...]]:
        self.builder.gtid = tx.rows_gtid
        typed = self.config.output is CaptureOutput.TYPED_COLUMNS
        return out.transaction_columns(tx, self.builder, self._event_records, self._core, typed=typed)

    def _event_records(self, tx: Transaction, file: str, pos: int, event: Any) -> Iterator[RowChange | DdlRecord]:
        kind = type(event)
        if kind is RowsEvent or kind is TransactionPayloadEvent:
            yield from self.builder.feed(event, file, pos)
        elif kind is QueryEvent:
            outcome = self.tables.ddl_at(file, pos)
            if outcome is not None and self.config.ddl and self._captured(outcome):
                yield DdlRecord(
                    db=outcome.db or event.schema,
                    sql=event.sql,
                    kind=outcome.kind,
                    tables=outcome.tables,
                    understood=outcome.understood,
                    file=file,
                    pos=pos,
                    gtid=tx.rows_gtid,
                    ts=event.header.timestamp,
                    default_db=event.schema,
                )

    def _captured(self, outcome: DdlOutcome) -> bool:
        keep = self.config.table_filter
        if keep is None or not outcome.tables:
            return True
        return any(keep(db, table) for db, table in outcome.tables)
