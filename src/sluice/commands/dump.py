"""``sluice dump``: decode binlog files and print their row changes as JSON lines.

Files are streamed (memory does not grow with their size); ``-`` reads standard input. A file that
is not a binlog, ends mid-event or fails its checksum stops the dump with a one-line error naming
the file and offset, and a non-zero exit.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from typing import Any

from sluice.errors import ConfigError

HELP = """\
Decode binlog files (as written by a MySQL or MariaDB server, or archived copies) and print one
JSON object per changed row, in binlog order (see README: "The change record").

examples:
  sluice dump /var/lib/mysql/binlog.000042
  sluice dump --tables 'shop\\.(orders|customers)' binlog.0000*
  sluice dump --format none big-binlog.000001        decode everything, print only counts
  cat binlog.000003 | sluice dump -

Column names come from the binlog when the server runs with binlog_row_metadata=FULL.
"""


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "dump",
        help="decode binlog files into JSON lines",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="binlog files, in order; - for stdin")
    parser.add_argument(
        "--tables", metavar="REGEX", help="only tables whose 'db.table' matches (others are not decoded)"
    )
    parser.add_argument("--exclude-tables", metavar="REGEX", help="skip tables whose 'db.table' matches")
    parser.add_argument(
        "--format",
        choices=("jsonl", "none"),
        default="jsonl",
        help="jsonl (default): one JSON object per row change; none: decode all, print counts",
    )
    parser.add_argument("--events", action="store_true", help="print every event instead of row changes")
    parser.add_argument("--no-verify-checksum", action="store_true", help="do not check event CRC32s")
    parser.set_defaults(handler=run)


def table_filter(include: str | None, exclude: str | None) -> Callable[[str, str], bool] | None:
    """A predicate on (db, table) from --tables / --exclude-tables regexes (full match on 'db.table')."""
    if include is None and exclude is None:
        return None
    try:
        inc = re.compile(include) if include is not None else None
        exc = re.compile(exclude) if exclude is not None else None
    except re.error as err:
        raise ConfigError(f"bad table regex: {err}") from None
    cache: dict[tuple[str, str], bool] = {}

    def keep(db: str, table: str) -> bool:
        key = (db, table)
        hit = cache.get(key)
        if hit is None:
            name = f"{db}.{table}"
            hit = (inc is None or inc.fullmatch(name) is not None) and (
                exc is None or exc.fullmatch(name) is None
            )
            cache[key] = hit
        return hit

    return keep


def run(args: argparse.Namespace) -> int:
    from sluice.binlog.parser import EventParser, ParserConfig
    from sluice.cdc.jsonl import change_line
    from sluice.cdc.records import RowChangeBuilder
    from sluice.eventjson import event_summary
    from sluice.io.binlog_file import iter_events

    config = ParserConfig(
        verify_checksum=not args.no_verify_checksum,
        table_filter=table_filter(args.tables, args.exclude_tables),
    )
    out = sys.stdout
    started = time.perf_counter()
    n_events = n_changes = 0
    builder = RowChangeBuilder()
    buffer: list[str] = []
    for path in args.files:
        parser = EventParser(config)
        source = sys.stdin.buffer if path == "-" else path
        name = "stdin" if path == "-" else path.rsplit("/", 1)[-1]
        for offset, event in iter_events(source, parser):
            n_events += 1
            if args.events:
                import json

                buffer.append(json.dumps(event_summary(event, name, offset), default=str))
            else:
                for change in builder.feed(event, name, offset):
                    n_changes += 1
                    if args.format == "jsonl":
                        buffer.append(change_line(change))
            if len(buffer) >= 512:
                buffer.append("")
                out.write("\n".join(buffer))
                buffer.clear()
    if buffer:
        buffer.append("")
        out.write("\n".join(buffer))
    out.flush()
    if args.format == "none":
        seconds = time.perf_counter() - started
        rate = n_changes / seconds if seconds > 0 else 0.0
        print(f"{n_events} events, {n_changes} row changes in {seconds:.2f}s ({rate:,.0f} rows/s)")
    return 0
