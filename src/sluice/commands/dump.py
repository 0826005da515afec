"""``sluice dump``: decode binlog files and print their row changes as JSON lines.

Files are streamed (memory does not grow with their size); ``-`` reads standard input. A file that
is not a binlog, ends mid-event or fails its checksum stops the dump with a one-line error naming
the file and offset, and a non-zero exit.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from sluice.commands.column_options import COLUMNS_HELP, add_column_options, rules_from_args
from sluice.commands.debezium_format import DEBEZIUM_HELP, add_debezium_options, debezium_chunks
from sluice.commands.filter_options import add_filter_options
from sluice.commands.memory_options import MEMORY_HELP, add_memory_options, memory_settings

HELP = """\
Decode binlog files (as written by a MySQL or MariaDB server, or archived copies) and print one
JSON object per changed row, in binlog order (see README: "The change record").

examples:
  sluice dump /var/lib/mysql/binlog.000042
  sluice dump --tables 'shop\\.(orders|customers)' binlog.0000*
  sluice dump --format none big-binlog.000001        decode everything, print only counts
  sluice dump --count-only big-binlog.000001         count row changes, decode no value
  cat binlog.000003 | sluice dump -

  sluice dump --schema mysql://user@db/ binlog.000042   names from a live server's tables
  sluice dump --schema shop.sql binlog.000042           names from mysqldump --no-data output
  sluice dump --positional binlog.000042                columns by position: @1, @2, ...
  sluice dump --events -v binlog.000042                 every event, rows by position
  sluice dump --format parquet --out changes/ binlog.0000*   typed Parquet per table

--format parquet writes each table's changes in part files, in order (a DDL that changes a table's
columns starts its next part; so does a table written again after its file was closed, at most 64
being open), a row per change: op; before and after as structs of the
table's columns, typed as in the table's Delta mirror (DECIMAL exact, DATETIME / TIMESTAMP as
timestamps, zero dates as null; docs/spark-types.md); absent, the columns a minimal image left out
(before.NAME / after.NAME); json_diffs; file, pos, row, gtid, ts, commit_ts. A column whose values
the binlog leaves unsure (read by position) holds each value's JSON text, marks included, and the
file's metadata says so. Read it with DuckDB (read_parquet('DIR/tables/*/*/*.parquet',
union_by_name=true)), Polars, pandas or Spark.

Only committed transactions are printed; a transaction cut off at the end of a file prints
nothing. Column names come from the binlog when the server ran with binlog_row_metadata=FULL;
otherwise from the CREATE/ALTER TABLE statements found earlier in the same files (give the files
in order, from the one that created the tables), or from --schema: a live server's current
definitions (as the user given may read them in information_schema) or a SQL file of CREATE
TABLE statements (mysqldump --no-data, mariadb-dump --no-data). Every TABLE_MAP is checked against
the definition used. A table whose columns none of these knows, or whose definition does not fit
the binlog (the table changed since), is printed by position instead: columns "@1" ... "@n" with
the binlog's types, "pk" empty, text only where the binlog gives its charset, and a warning on
stderr naming the table; --positional prints every table so. A value that cannot be read for
sure is marked: {"hex": "..."} for text of an unknown charset, {"signed": ..., "unsigned": ...}
for an integer of unknown signedness with its top bit set (see README); so is the text of a column
that declares no character set in a database created before the first file (its default is not in
the files), with a warning naming the columns: sluice does not guess a character set.
"""


def register(sub: Any) -> None:
    """Add ``sluice dump`` and its options to the command subparsers."""
    parser = sub.add_parser(
        "dump",
        help="decode binlog files into JSON lines",
        description=HELP + "\n" + MEMORY_HELP + "\n" + DEBEZIUM_HELP + "\n" + COLUMNS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="binlog files, in order; - for stdin")
    add_filter_options(parser)
    add_column_options(parser)
    add_memory_options(parser)
    parser.add_argument(
        "--format",
        choices=("jsonl", "debezium", "parquet", "none"),
        default="jsonl",
        help="jsonl (default): one JSON object per row change; debezium: Debezium's change events (see below); "
        "parquet: typed Parquet files per table under --out (see below); none: decode all, print counts",
    )
    add_debezium_options(parser)
    parser.add_argument(
        "--out", metavar="DIR",
        help="with --format parquet: the folder to write (new or empty): DIR/tables/DB/TABLE/part-NNNNN.parquet, "
        "and DIR/ddl.parquet with --ddl",
    )
    parser.add_argument(
        "--count-only",
        action="store_true",
        help="count the row changes without decoding their values (fastest; a value the server could "
        "not have written goes unnoticed); implies --format none",
    )
    names = parser.add_mutually_exclusive_group()
    names.add_argument(
        "--schema", metavar="DSN|FILE.sql",
        help="table definitions for files whose binlog does not name the columns: a live server "
        "(mysql://user:pw@host/) or a mysqldump --no-data file; checked against every TABLE_MAP",
    )
    names.add_argument(
        "--positional", action="store_true",
        help="print every table's columns by position (@1, @2, ...) with the binlog's types, no primary key",
    )
    parser.add_argument(
        "--events",
        action="store_true",
        help="print every event instead of row changes: type, position, size and its fields (a TABLE_MAP's "
        "columns with their types and metadata, a rows event's table, flags and row count)",
    )
    parser.add_argument(
        "-v", "--values", action="store_true",
        help="with --events, also each rows event's rows, by position (@1, @2, ...) as mysqlbinlog -vv prints them",
    )
    parser.add_argument("--no-verify-checksum", action="store_true", help="do not check event CRC32s")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """``sluice dump``: decode binlog files into JSON lines on stdout (or only counts, or the raw events)."""
    from sluice.errors import ConfigError

    if args.values and not args.events:
        raise ConfigError("-v/--values prints the rows of --events: add --events (or drop -v)")
    if args.events and (args.schema or args.positional):
        raise ConfigError("--events lists every table's rows by position already: drop --schema / --positional")
    parquet = args.format == "parquet"
    if parquet and (args.count_only or args.events):
        raise ConfigError("--format parquet writes the row changes: drop --count-only / --events")
    if parquet and not args.out:
        raise ConfigError("--format parquet needs --out DIR, the folder to write the Parquet files to")
    if args.out and not parquet:
        raise ConfigError("--out is where --format parquet writes: add --format parquet (or drop --out)")
    columns = rules_from_args(args)
    if columns is not None and (args.events or args.positional or parquet):
        raise ConfigError("--exclude-columns / --hash-columns go with the JSON lines and Debezium's events, whose "
                          "columns have names: drop --events / --positional / --format parquet")
    if args.events:
        return _run_events(args)
    from sluice.binlog.position import Checkpoint
    from sluice.cdc.capture import CaptureConfig, CaptureOutput, ChangeCapture
    from sluice.cdc.filters import parse_ops, table_filter
    from sluice.cdc.schema.given import archived_tracker, load_schema
    from sluice.io.binlog_file import iter_raw_spans

    keep = table_filter(args.tables, args.exclude_tables)
    given = load_schema(args.schema, keep) if args.schema else None
    for warning in given.warnings if given is not None else ():
        print(f"sluice dump: warning: {warning}", file=sys.stderr)
    if parquet:
        return _run_parquet(args, keep, given)
    if args.format == "debezium" and (args.count_only or args.positional):
        raise ConfigError("--format debezium prints each change with its columns' types: drop --count-only / "
                          "--positional (give --schema for files whose binlog does not name the columns)")
    jsonl = args.format in ("jsonl", "debezium") and not args.count_only
    # --format none decodes every event and every value of the captured tables but prints only
    # counts, so it builds no change records.
    output = (CaptureOutput.LINES if jsonl else CaptureOutput.COUNTS if args.count_only
              else CaptureOutput.DECODED_COUNTS)
    memory, spill = memory_settings(args)
    config = CaptureConfig(
        table_filter=keep, ops=parse_ops(args.ops), ddl=args.ddl, verify_checksum=not args.no_verify_checksum,
        skip_incidents=args.skip_incidents, output=output, memory=memory, spill=spill, columns=columns,
    )
    sys.stdout.flush()
    out = sys.stdout.buffer
    started = time.perf_counter()
    n_changes = n_transactions = 0
    capture: ChangeCapture | None = None
    write = out.write  # a transaction's lines go out as the core wrote them; small ones are buffered
    debezium = None
    for path in args.files:
        source = sys.stdin.buffer if path == "-" else path
        name = "stdin" if path == "-" else path.rsplit("/", 1)[-1]
        if capture is None:
            capture = ChangeCapture(config, Checkpoint(name, 4),
                                    archived_tracker(given, positional=args.positional, named=columns is not None))
            if args.format == "debezium":
                debezium = debezium_chunks(capture, args.topic_prefix)
        for committed in capture.feed_file(name, "<stdin>" if path == "-" else path, iter_raw_spans(source)):
            # feed_file cuts off at the end a transaction still open: it never spans two files
            n_transactions += 1
            n_changes += committed.row_count
            lines = committed.lines
            if lines:
                for chunk in lines if debezium is None else debezium(committed, lines):
                    write(chunk)
                if type(lines) is not list:
                    lines.close()  # a held transaction's buffer: its memory and file go now
    out.flush()
    if capture is not None:
        for file, pos, sql, message in capture.tracker.unparsed:
            print(f"sluice dump: warning: DDL at {file}:{pos} not understood ({message}): {sql[:200]}", file=sys.stderr)
    if not jsonl:
        seconds = time.perf_counter() - started
        rate = n_changes / seconds if seconds > 0 else 0.0
        n_events = capture.events_read if capture is not None else 0
        print(
            f"{n_events} events, {n_transactions} transactions, {n_changes} row changes in {seconds:.2f}s "
            f"({rate:,.0f} rows/s)"
        )
    return 0


def _run_parquet(args: argparse.Namespace, keep: Any, given: Any) -> int:
    """``--format parquet``: the row changes as typed Parquet files under ``--out``."""
    from sluice.binlog.position import Checkpoint
    from sluice.cdc.capture import CaptureConfig, CaptureOutput, ChangeCapture
    from sluice.cdc.filters import parse_ops
    from sluice.cdc.schema.given import archived_tracker
    from sluice.commands.dump_parquet import dump, output_folder
    from sluice.io.binlog_file import iter_raw_spans
    from sluice.io.heap import keep_batch_memory

    out = output_folder(args.out)
    keep_batch_memory()  # this process writes batch after batch of big buffers
    config = CaptureConfig(
        table_filter=keep, ops=parse_ops(args.ops), ddl=args.ddl, verify_checksum=not args.no_verify_checksum,
        skip_incidents=args.skip_incidents, output=CaptureOutput.TYPED_COLUMNS,
    )
    first = args.files[0]
    capture = ChangeCapture(config, Checkpoint("stdin" if first == "-" else first.rsplit("/", 1)[-1], 4),
                            archived_tracker(given, positional=args.positional))

    progress = Progress(args.files) if sys.stderr.isatty() else None

    def transactions() -> Any:
        for path in args.files:
            source = sys.stdin.buffer if path == "-" else path
            name = "stdin" if path == "-" else path.rsplit("/", 1)[-1]
            spans = iter_raw_spans(source) if progress is None else progress.follow(iter_raw_spans(source))
            yield from capture.feed_file(name, "<stdin>" if path == "-" else path, spans)

    started = time.perf_counter()
    try:
        written = dump(capture, transactions(), out)
    finally:
        if progress is not None:
            progress.end()
    for file, pos, sql, message in capture.tracker.unparsed:
        print(f"sluice dump: warning: DDL at {file}:{pos} not understood ({message}): {sql[:200]}", file=sys.stderr)
    seconds = time.perf_counter() - started
    rate = written.changes / seconds if seconds > 0 else 0.0
    print(f"{written.changes} row changes of {written.tables} tables in {written.files} Parquet files under "
          f"{args.out} in {seconds:.2f}s ({rate:,.0f} rows/s)")
    return 0


class Progress:
    """One line on standard error (a terminal), redrawn at most once a second: the bytes read of
    the files and how fast."""

    def __init__(self, files: list[str]) -> None:
        import os

        sizes = [os.path.getsize(f) if f != "-" and os.path.isfile(f) else 0 for f in files]
        self.total = sum(sizes)
        self.done = 0  # bytes of the files read through
        self.started = self.shown = time.monotonic()

    def follow(self, spans: Any) -> Any:
        """``spans`` (``iter_raw_spans``), counting the bytes they cover."""
        base = self.done
        for offset, buf, stop in spans:
            yield offset, buf, stop
            self.done = base + offset + stop
            now = time.monotonic()
            if now - self.shown >= 1.0:
                self.shown = now
                self._show(now)

    def _show(self, now: float) -> None:
        rate = self.done / max(now - self.started, 1e-9) / 1e6
        share = f" of {self.total / 1e6:,.0f} MB ({100 * self.done / self.total:.0f}%)" if self.total else ""
        sys.stderr.write(f"\rsluice dump: {self.done / 1e6:,.0f} MB read{share}, {rate:,.0f} MB/s ")
        sys.stderr.flush()

    def end(self) -> None:
        """Clear the line (the summary follows on standard output)."""
        if self.shown > self.started:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _run_events(args: argparse.Namespace) -> int:
    from sluice.binlog.parser import EventParser, ParserConfig
    from sluice.cdc.filters import table_filter
    from sluice.cdc.jsonl import encode, unmark
    from sluice.eventjson import event_summary, inspection_plan
    from sluice.io.binlog_file import iter_events

    config = ParserConfig(
        verify_checksum=not args.no_verify_checksum,
        table_filter=table_filter(args.tables, args.exclude_tables),
        plan_for=inspection_plan,
    )
    out = sys.stdout
    for path in args.files:
        source = sys.stdin.buffer if path == "-" else path
        name = "stdin" if path == "-" else path.rsplit("/", 1)[-1]
        buffer = [unmark(encode(event_summary(event, name, offset, values=args.values)))
                  for offset, event in iter_events(source, EventParser(config))]
        if buffer:
            out.write("\n".join(buffer) + "\n")
    out.flush()
    return 0
