"""``sluice tail``: follow a server's binlog live and print its row changes, one JSON line each.

Only committed transactions are printed, in binlog order. With ``--checkpoint DIR`` the position
after each printed transaction is saved atomically (with the schema history beside it) and a
restart resumes there; with ``--output FILE`` as well, a restart first cuts the file back to the
last checkpointed transaction, so the file holds every change exactly once even after a kill -9.
With ``--events`` every binlog event is printed instead (the low-level view of what a server
writes).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from sluice.binlog.position import parse_position, position_key
from sluice.commands.column_options import COLUMNS_HELP, add_column_options, rules_from_args
from sluice.commands.debezium_format import DEBEZIUM_HELP, add_debezium_options, debezium_chunks
from sluice.commands.filter_options import add_filter_options
from sluice.commands.memory_options import MEMORY_HELP, add_memory_options, memory_settings
from sluice.dsn import parse_dsn
from sluice.errors import ConfigError
from sluice.eventjson import event_summary, inspection_plan
from sluice.io.output_file import CheckpointedOutput
from sluice.io.replication import ReplicationStream, StreamConfig

HELP = """\
Follow the binary log of a running MySQL or MariaDB server as a replica does and print one JSON
object per changed row of every committed transaction (see README: "The change record").

examples:
  sluice tail mysql://repl:secret@db:3306/ --from-now                   from the current end on
  sluice tail mysql://repl@db/ --checkpoint state/ --output changes.jsonl   resumable, exactly once
  sluice tail mysql://repl@db/ --from binlog.000007:4 --tables 'shop\\..*' --ops insert,update
  sluice tail mysql://repl@db/ --from binlog.000007 --until binlog.000009 --until-end     a range
  sluice tail mysql://repl@db/ --gtid 3E11FA47-71CA-11E1-9E33-C80AA9429562:1-77 --ddl
  sluice tail mariadb://repl@db/ --gtid 0-1-100 --until-end --events    every event, low level

Where it starts: the checkpoint in --checkpoint DIR if there is one; else --from, --gtid or
--from-now; else the earliest binlog still on the server. Column names come from the binlog
(binlog_row_metadata=FULL) or from the schema read from information_schema at the start and
kept up to date from the DDL in the binlog (saved in DIR/schema-history.jsonl).

Delivery: with --checkpoint and --output, exactly once across restarts and kill -9. With
--checkpoint and standard output, at least once: after a crash the last transaction may be
printed again, with the same (file, pos, row), so a consumer drops lines it has already seen.

The user needs REPLICATION SLAVE, REPLICATION CLIENT and SELECT (for the schema). Passwords may
come from the environment: mysql://repl@db/?password_env=DB_PASSWORD, or SLUICE_PASSWORD.
"""

log = logging.getLogger(__name__)


def register(sub: Any) -> None:
    """Add ``sluice tail`` and its options to the command subparsers."""
    parser = sub.add_parser(
        "tail",
        help="follow a server's binlog and print row changes",
        description=HELP + "\n" + MEMORY_HELP + "\n" + DEBEZIUM_HELP + "\n" + COLUMNS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dsn", help="mysql://user[:password]@host[:port]/ or mariadb://...")
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--from", dest="start", metavar="FILE:POS", help="start at this binlog file and offset")
    start.add_argument(
        "--gtid",
        metavar="SET",
        help="start after these GTIDs: a MySQL GTID set (uuid:1-100,...) or a MariaDB position (0-1-100,...)",
    )
    start.add_argument("--from-now", action="store_true", help="start at the current end of the binlog")
    parser.add_argument(
        "--checkpoint",
        metavar="DIR",
        help="save the position after every printed transaction (and the schema history) here; resume from it",
    )
    parser.add_argument(
        "--output", metavar="FILE", help="append the JSON lines to FILE instead of standard output"
    )
    add_filter_options(parser)
    add_column_options(parser)
    add_memory_options(parser)
    parser.add_argument(
        "--format", choices=("jsonl", "debezium"), default="jsonl",
        help="jsonl (default): sluice's JSON lines; debezium: Debezium's change events (see below)",
    )
    add_debezium_options(parser)
    parser.add_argument(
        "--until-end", action="store_true", help="stop at the current end of the binlog instead of waiting"
    )
    parser.add_argument(
        "--until", metavar="FILE:POS",
        help="stop before the first transaction that starts at or after this position (as mysqlbinlog's "
        "--stop-position; a bare FILE means FILE:4)",
    )
    parser.add_argument("--events", action="store_true", help="print every binlog event instead of row changes")
    parser.add_argument(
        "--heartbeat",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="ask the server for a heartbeat after this much idle time (default 5; 0 = off)",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=None,
        metavar="N",
        help="give up after N failed reconnects in a row (default: keep trying, with backoff up to 30 s)",
    )
    parser.add_argument(
        "--no-verify-checksum", action="store_true", help="do not check the CRC32 of each event"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """``sluice tail``: follow a server's binlog and print committed row changes as JSON lines."""
    columns = rules_from_args(args)
    if args.events:
        if columns is not None:
            raise ConfigError("--events prints raw events, values and all: drop --exclude-columns / --hash-columns")
        return _run_events(args)
    from sluice.cdc.capture import CaptureConfig, CaptureOutput, ChangeCapture
    from sluice.cdc.capture_start import StartRequest, prepare_capture
    from sluice.cdc.filters import parse_ops, table_filter
    from sluice.cdc.follow import FollowConfig, follow

    connection = parse_dsn(args.dsn)
    keep = table_filter(args.tables, args.exclude_tables)
    ops = parse_ops(args.ops)
    if args.output and not args.checkpoint:
        log.info("--output without --checkpoint: a restart starts again from the chosen position")
    file, pos = parse_position(args.start, "--from") if args.start else (None, 4)
    request = StartRequest(file=file, pos=pos, gtid=args.gtid, from_now=args.from_now)
    begin = prepare_capture(connection, request, checkpoint_dir=args.checkpoint, include=keep)
    print(f"sluice tail: {begin.how}", file=sys.stderr)
    saved = begin.extra.get("output_bytes") if begin.resumed else None
    output = CheckpointedOutput(args.output, None if saved is None else int(saved)) if args.output else None
    memory, spill = memory_settings(args)
    capture = ChangeCapture(
        CaptureConfig(table_filter=keep, ops=ops, ddl=args.ddl, verify_checksum=not args.no_verify_checksum,
                      skip_incidents=args.skip_incidents, output=CaptureOutput.LINES, memory=memory,
                      spill=spill, columns=columns),
        begin.start,
        begin.tracker,
    )
    config = FollowConfig(
        connection=connection,
        until_end=args.until_end,
        heartbeat_period=args.heartbeat,
        retries=args.retries,
    )
    debezium = debezium_chunks(capture, args.topic_prefix) if args.format == "debezium" else None
    checkpoint = begin.checkpoint
    stop = position_key(*parse_position(args.until, "--until")) if args.until else None
    stopped = False
    try:
        for committed in follow(config, capture):
            if stop is not None and position_key(committed.start.file, committed.start.pos) >= stop:
                stopped = True
                break
            lines = committed.lines
            if lines:  # each chunk as the core made it (or read back from a held transaction's file)
                chunks = lines if debezium is None else debezium(committed, lines)
                if output is not None:
                    output.write_lines(chunks)
                else:
                    sys.stdout.buffer.writelines(chunks)
                    sys.stdout.buffer.flush()
                if type(lines) is not list:
                    lines.close()  # a held transaction's buffer: its memory and file go now
            if checkpoint is not None:
                checkpoint.save(committed.end, None if output is None else {"output_bytes": output.written})
        if checkpoint is not None and not stopped:
            # Events after the last transaction (heartbeats, rotations) moved the boundary on.
            checkpoint.save(capture.boundary, None if output is None else {"output_bytes": output.written})
    finally:
        if output is not None:
            output.close()
    for file_, pos_, sql, message in capture.tracker.unparsed:
        print(f"sluice tail: warning: DDL at {file_}:{pos_} not understood ({message}): {sql[:200]}", file=sys.stderr)
    return 0


def _run_events(args: argparse.Namespace) -> int:
    from sluice.binlog.parser import EventParser, ParserConfig

    if args.checkpoint or args.output or args.from_now or args.until:
        raise ConfigError("--events prints raw events only: drop --checkpoint, --output, --from-now and --until")
    connection = parse_dsn(args.dsn)
    file, pos = parse_position(args.start, "--from") if args.start else (None, 4)
    config = StreamConfig(
        connection=connection,
        file=file,
        pos=pos,
        gtid=args.gtid,
        until_end=args.until_end,
        heartbeat_period=args.heartbeat,
    )
    out = sys.stdout
    with ReplicationStream(config) as stream:
        parser: EventParser | None = None
        for raw in stream:
            if parser is None:
                parser = EventParser(
                    ParserConfig(
                        verify_checksum=not args.no_verify_checksum, initial_checksum=stream.checksum_algorithm,
                        plan_for=inspection_plan,  # rows are counted; no value stops the listing
                    )
                )
            event = parser.parse(raw.data, file=raw.file, offset=raw.pos)
            out.write(json.dumps(event_summary(event, raw.file, raw.pos), default=str))
            out.write("\n")
            out.flush()
    return 0
