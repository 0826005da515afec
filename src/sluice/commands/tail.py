"""``sluice tail``: follow a server's binlog live and print what happens, one JSON line each.

With ``--events`` every binlog event is printed (type, file, position, size and the decoded
fields of ROTATE, GTID, QUERY and XID events); this is the low-level view for checking what a
server writes.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sluice.dsn import parse_dsn
from sluice.errors import ConfigError
from sluice.eventjson import event_summary
from sluice.io.replication import ReplicationStream, StreamConfig

HELP = """\
Follow the binary log of a running MySQL or MariaDB server as a replica does.

examples:
  sluice tail mysql://repl:secret@db:3306/ --events              every event, from the earliest binlog
  sluice tail mysql://repl@db/ --from binlog.000007:4 --events    from a file and position
  sluice tail mysql://repl@db/ --gtid 3E11FA47-71CA-11E1-9E33-C80AA9429562:1-77 --events
  sluice tail mariadb://repl@db/ --gtid 0-1-100 --until-end --events

The user needs REPLICATION SLAVE and REPLICATION CLIENT (and SELECT for schema look-ups).
Passwords may come from the environment: mysql://repl@db/?password_env=DB_PASSWORD, or
SLUICE_PASSWORD when the DSN has none.
"""


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "tail",
        help="follow a server's binlog and print events",
        description=HELP,
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
    parser.add_argument(
        "--until-end", action="store_true", help="stop at the current end of the binlog instead of waiting"
    )
    parser.add_argument("--events", action="store_true", help="print every binlog event (required for now)")
    parser.add_argument(
        "--heartbeat",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="ask the server for a heartbeat after this much idle time (default 5; 0 = off)",
    )
    parser.add_argument(
        "--no-verify-checksum", action="store_true", help="do not check the CRC32 of each event"
    )
    parser.set_defaults(handler=run)


def parse_start(text: str) -> tuple[str, int]:
    """``FILE:POS`` -> (file, pos); a bare FILE starts at offset 4."""
    file, sep, pos_text = text.rpartition(":")
    if not sep:
        return text, 4
    try:
        pos = int(pos_text)
    except ValueError:
        raise ConfigError(f"--from expects FILE:POS such as binlog.000003:4, found {text!r}") from None
    if pos < 4:
        raise ConfigError(f"--from position must be 4 or more (the binlog header), found {pos}")
    return file, pos


def run(args: argparse.Namespace) -> int:
    from sluice.binlog.parser import EventParser, ParserConfig

    connection = parse_dsn(args.dsn)
    file, pos = parse_start(args.start) if args.start else (None, 4)
    config = StreamConfig(
        connection=connection,
        file=file,
        pos=pos,
        gtid=args.gtid,
        until_end=args.until_end,
        heartbeat_period=args.heartbeat,
    )
    if not args.events:
        raise ConfigError("sluice tail prints binlog events for now: add --events")
    out = sys.stdout
    with ReplicationStream(config) as stream:
        parser: EventParser | None = None
        for raw in stream:
            if parser is None:
                parser = EventParser(
                    ParserConfig(
                        verify_checksum=not args.no_verify_checksum, initial_checksum=stream.checksum_algorithm
                    )
                )
            event = parser.parse(raw.data, file=raw.file, offset=raw.pos)
            out.write(json.dumps(event_summary(event, raw.file, raw.pos), default=str))
            out.write("\n")
            out.flush()
    return 0
