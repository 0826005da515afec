"""What the capture's ``lines`` and ``columns`` modes make of a committed transaction.

``transaction_lines``: the JSON lines of its records (``CaptureConfig.lines``), event by event with
``event_lines_into``; ``count_rows``: how many row changes it has; ``transaction_columns``:
its records as change-log rows, the compiled core's ``ChangeRows`` (``CaptureConfig.columns``);
``hold_columns``: an open transaction's rows so far handed out as a part (``HeldRows``). Rows
events are written by the compiled core (runs of them already were, by ``EventRun``: their
``WrittenLines`` / ``ChangeRows`` sit in the transaction's events); every other record (DDL,
partial JSON, payload events, a system-versioned table's rows, whose op is decided row by row)
goes through the record path. ``line_spec`` / ``column_spec`` give the core what it needs to write
a table's rows itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sluice.binlog.absent import ABSENT
from sluice.binlog.constants import ColumnType
from sluice.binlog.events import RowsEvent, TableMapEvent, TransactionPayloadEvent
from sluice.cdc.change_rows import Meta, kind_metas, record_row
from sluice.cdc.committed import CountedRows, DdlRecord, HeldRows, WrittenLines
from sluice.cdc.held import HeldLines, finish, hold
from sluice.cdc.jsonl import KIND_CODES, line_parts, record_line, rows_event_lines, value_bytes
from sluice.cdc.records import RowChange, RowChangeBuilder
from sluice.cdc.txstate import Transaction
from sluice.errors import SluiceError

__all__ = [
    "LineSpec", "column_spec", "count_rows", "event_lines_into", "hold_columns", "hold_lines", "line_spec",
    "rows_so_far",
    "transaction_columns", "transaction_lines",
]

LineSpec = tuple[tuple[bytes, ...], tuple[bytes, ...], bytes]  # heads per kind, "name": keys, mid
EventRecords = Callable[[Any, str, int, Any], Iterator[RowChange | DdlRecord]]
_PARTIAL_UPDATE = 39  # PARTIAL_UPDATE_ROWS_EVENT: its JSON diffs take the records' path


def line_spec(builder: RowChangeBuilder, table_map: TableMapEvent, file: str, pos: int) -> LineSpec | None:
    """What the compiled core needs to write a table's JSON lines (``EventRun.write_lines``);
    None when the table's columns are not known (the record path then says so) or its rows take the
    record path (a system-versioned table)."""
    try:
        names, pk = builder.columns_of(table_map, file, pos)
        if builder.record_path(table_map, file, pos):
            return None
    except SluiceError:
        return None
    parts = [line_parts(kind, table_map.schema, table_map.table, names, pk, file)
             for kind in ("write", "update", "delete")]
    return tuple(head for head, _, _ in parts), parts[0][1], parts[0][2]


def column_spec(builder: RowChangeBuilder, table_map: TableMapEvent, file: str,
                pos: int) -> tuple[tuple[Meta, ...], tuple[bytes, ...]] | None:
    """What the compiled core needs to put a table's rows into change-log columns
    (``EventRun.write_columns``); None when the table's columns are not known or its rows take the
    record path."""
    try:
        names, pk = builder.columns_of(table_map, file, pos)
        if builder.record_path(table_map, file, pos):
            return None
    except SluiceError:
        return None
    return kind_metas(table_map.schema, table_map.table, pk, file), line_parts(
        "write", table_map.schema, table_map.table, names, pk, file)[1]


def transaction_lines(tx: Transaction, builder: RowChangeBuilder, event_records: EventRecords,
                      write_rows: Any) -> tuple[Iterable[bytes], int]:
    """The JSON lines of a transaction's records and their number of row changes (``builder.gtid``
    set to the transaction's); ``write_rows`` is the core's ``rows_jsonl``, None without the core.
    The lines of a transaction held while it was open (``hold_lines``) are its ``HeldLines``."""
    held = finish(tx.events, lambda out, file, pos, event: event_lines_into(
        out, file, pos, event, tx, builder, event_records, write_rows))
    if held is not None:
        return held, held.rows
    out: list[bytes] = []
    count = 0
    for file, pos, event in tx.events:
        count += event_lines_into(out, file, pos, event, tx, builder, event_records, write_rows)
    return out, count


def hold_lines(tx: Any, builder: RowChangeBuilder, event_records: EventRecords, write_rows: Any,
               make_buffer: Callable[[], Any]) -> None:
    """Move the JSON lines of the open transaction ``tx`` so far into its ``HeldLines`` (``cdc.held``)."""
    builder.gtid = tx.rows_gtid
    hold(tx.events, lambda out, file, pos, event: event_lines_into(
        out, file, pos, event, tx, builder, event_records, write_rows), make_buffer)


def event_lines_into(out: list[bytes], file: str, pos: int, event: Any, tx: Any, builder: RowChangeBuilder,
                     event_records: EventRecords, write_rows: Any) -> int:
    """Append the JSON lines of one of ``tx``'s events to ``out`` (as ``transaction_lines``); returns
    its number of row changes."""
    if type(event) is WrittenLines:
        out.append(event.data)
        return event.rows
    if (write_rows is not None and type(event) is RowsEvent and event.header.type_code != _PARTIAL_UPDATE
            and not builder.record_path(event.table, file, pos)):
        kinds = builder.kinds
        if kinds is None or event.kind in kinds:
            names, pk = builder.columns_of(event.table, file, pos)
            out.append(rows_event_lines(write_rows, event, names, pk, file, pos, builder.gtid))
            return len(event.rows)
        return 0
    count = 0
    for record in event_records(tx, file, pos, event):
        out.append(f"{record_line(record)}\n".encode())
        if record.op != "ddl":
            count += 1
    return count


def hold_columns(tx: Any, builder: RowChangeBuilder, event_records: EventRecords, core: Any,
                 hand_out: Callable[[Any, str | None], Any], *, typed: bool = False) -> None:
    """Hand the change-log rows of the open transaction ``tx``'s events since its last part to
    ``hand_out(rows, gtid)`` and put a ``HeldRows`` of what it returns in their place: the
    transaction's events are then its parts and what came after them. The rows are the ones its
    commit would make of those events (``transaction_columns``), each event being made into rows
    on its own, in order."""
    events = tx.events
    first = next((i for i in range(len(events) - 1, -1, -1) if type(events[i][2]) is HeldRows), -1) + 1
    if first >= len(events):
        return
    file, pos = events[first][0], events[first][1]
    builder.gtid = tx.rows_gtid
    rows, count, _ = _columns_of(tx, events[first:], builder, event_records, core, typed)
    if not rows.length:
        return
    events[first:] = [(file, pos, HeldRows(hand_out(rows, tx.rows_gtid), count))]


def transaction_columns(tx: Transaction, builder: RowChangeBuilder, event_records: EventRecords,
                        core: Any, *, typed: bool = False) -> tuple[Any, int, tuple[Any, ...]]:
    """A transaction's records as change-log rows (the core's ``ChangeRows``), their number of row
    changes, and the parts handed out before (``hold_columns``; their rows come first); rows events
    go in through the core, other records one by one. ``typed``: the rows events the parser
    decoded get typed images too, as the event runs' do."""
    return _columns_of(tx, tx.events, builder, event_records, core, typed)


def _columns_of(tx: Any, events: Any, builder: RowChangeBuilder, event_records: EventRecords, core: Any,
                typed: bool) -> tuple[Any, int, tuple[Any, ...]]:
    if len(events) == 1 and type(events[0][2]) is core.ChangeRows and events[0][2].keep_typed == typed:
        return events[0][2], events[0][2].length, ()  # one run's columns (runs go on in them): no copy
    rows = core.ChangeRows()
    rows.keep_typed = typed
    kinds = builder.kinds
    count = 0
    held: list[Any] = []
    for file, pos, event in events:
        kind = type(event)
        if kind is HeldRows:
            held.append(event.part)
            count += event.rows
            continue
        if kind is core.ChangeRows:
            rows.extend(event)
            count += event.length
            continue
        if (kind is RowsEvent and event.header.type_code != _PARTIAL_UPDATE
                and not builder.record_path(event.table, file, pos)):
            if kinds is None or event.kind in kinds:
                table = event.table
                names, pk = builder.columns_of(table, file, pos)
                k = KIND_CODES[event.kind]
                meta = kind_metas(table.schema, table.table, pk, file)[k]
                keys = line_parts("write", table.schema, table.table, names, pk, file)[1]
                json = sum(1 << i for i, t in enumerate(table.column_types) if t == ColumnType.JSON) if typed else 0
                count += rows.add_rows(k, keys, event.rows, rows.meta_id(meta), pos,
                                       event.header.timestamp * 1_000_000, ABSENT, value_bytes, json)
            continue
        for record in event_records(tx, file, pos, event):
            meta, before, after, diffs, at, row, ts = record_row(record)
            rows.add(rows.meta_id(meta), before, after, diffs, at, row, ts)
            if record.op != "ddl":
                count += 1
        if typed and kind is RowsEvent and builder.record_path(event.table, file, pos):
            # Its ops are not the typed images' three, or its values are not the table's: its MERGE
            # source is built from its JSON images.
            key = (event.table.schema, event.table.table)
            images = rows.typed.get(key)
            if images is None:
                images = rows.typed[key] = core.TypedImages(())
            images.failed = True
    return rows, count, tuple(held)


def count_rows(builder: RowChangeBuilder, events: Any) -> int:
    """The row changes of a transaction's events the capture counted (``CaptureOutput.COUNTS`` and
    ``DECODED_COUNTS``): rows events, the core's ``CountedRows``, and those inside payloads."""
    kinds = builder.kinds
    n = 0
    for item in events:
        file, pos, event = item if type(item) is tuple else ("", 0, item)
        kind = type(event)
        if kind is RowsEvent:
            if builder.versioned(event.table, file, pos):
                n += sum(1 for _ in builder.feed(event, file, pos))
            elif kinds is None or event.kind in kinds:
                n += len(event.rows)
        elif kind is CountedRows:
            n += event.total(kinds)
        elif kind is TransactionPayloadEvent:
            n += count_rows(builder, event.events)
    return n


def rows_so_far(events: Any) -> int:
    """The row changes an open transaction's events hold so far, whatever the capture made of them
    (counts, lines, change-log rows, rows events), for progress only: read while another thread may
    be adding to them."""
    n = 0
    for item in list(events):
        event = item[2]
        kind = type(event)
        if kind is CountedRows:
            n += event.write + event.update + event.delete
        elif kind is WrittenLines or kind is HeldLines or kind is HeldRows:
            n += event.rows
        elif kind is RowsEvent:
            n += len(event.rows)
        else:
            n += getattr(event, "length", 0) if kind.__name__ == "ChangeRows" else 0
    return n
