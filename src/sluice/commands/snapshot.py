"""``sluice snapshot``: read tables of a lake again from the source, on demand."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from sluice.commands.column_options import add_column_options, rules_for_lake
from sluice.commands.route_options import add_route_option, routes_of_lake
from sluice.errors import ConfigError

HELP = """\
Snapshot tables of a lake again: their Delta mirrors are dropped and read anew from the source in
primary-key chunks on Spark, consistent with the binlog (the same method as the first start of
sluice run). Stop the pipeline first; when it starts again it streams on from where it stopped and
skips, for these tables, the changes the new snapshot already holds. Ctrl-C stops after the wave of
chunks being read (a second Ctrl-C at once); the next sluice run resumes the snapshot there.
Columns follow the rules the lake records (its sluice run's --exclude-columns / --hash-columns):
give the config file that holds the hash key with --config, and no column options or the same.

When the binlog the pipeline would go on from was purged while it was stopped (sluice run stops
with an error naming the missing binlog file or GTIDs), the changes in between are gone and this
is the remedy: --tables must then take every captured table (the pipeline's own --tables, or
'.*'); all of them are read again from a new start, and the next sluice run streams on from this
snapshot, not from its old position. (sluice run --snapshot when-needed does the same by itself.)

examples:
  sluice snapshot --source mysql://repl@db/ --lake ./lake --tables 'shop\\.orders'
  sluice snapshot --source mysql://repl@db/ --lake ./lake --tables 'shop\\..*' --chunk-rows 20000
  sluice snapshot --source mysql://repl@db/ --lake ./lake --tables '.*'     after binlogs were purged
"""


def register(sub: Any) -> None:
    """Add ``sluice snapshot`` and its options to the command subparsers."""
    parser = sub.add_parser(
        "snapshot", help="re-snapshot tables of a lake from the source", description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--source", metavar="DSN", required=True, help="the pipeline's source")
    parser.add_argument("--lake", metavar="DIR", required=True, help="the pipeline's lake directory")
    parser.add_argument("--tables", metavar="REGEX", required=True, help="the tables ('db.table' regex) to read again")
    parser.add_argument("--chunk-rows", type=int, metavar="N",
                        help="rows per chunk (default: 64 MiB of the table's average row, 1,000 to 1,000,000 rows)")
    parser.add_argument("--connections", type=int, metavar="N",
                        help="chunks read from the source at once, each on a connection of its own (default: one "
                        "per Spark core, at most 8)")
    parser.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    add_column_options(parser)  # the lake's by default (capture.json): the tables read again follow them
    add_route_option(parser)  # the lake's by default (capture.json), as sluice run gave them
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """``sluice snapshot``: forget the matching tables' snapshot and mirror, then read them again;
    every captured table, from a new start, when the stream's position was purged from the server."""
    from dataclasses import replace

    from sluice.cdc.filters import table_filter
    from sluice.lake.layout import Lake, open_lake
    from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
    from sluice.spark.pipeline.stream_resume import captured_names, start_over
    from sluice.spark.snapshot.state import SnapshotState, forget_tables

    try:
        pattern = re.compile(args.tables)
    except re.error as exc:
        raise ConfigError(f"bad --tables regex: {exc}") from None

    def say(text: str) -> None:
        print(f"sluice snapshot: {text}", file=sys.stderr, flush=True)

    # The pipeline's own table filter (what its runs capture) stays the lake's record.
    lake = open_lake(args.lake)
    recorded = lake.get_json(Lake.CAPTURE)
    tables, exclude = ((recorded.get("tables"), recorded.get("exclude_tables")) if isinstance(recorded, dict)
                       else (args.tables, None))
    config = PipelineConfig(source=args.source, lake=args.lake, tables=tables, exclude_tables=exclude,
                            snapshot="only", chunk_rows=args.chunk_rows, snapshot_connections=args.connections,
                            master=args.master, columns=rules_for_lake(args, lake),
                            routes=routes_of_lake(getattr(args, "routes", None), recorded))
    pipeline = Pipeline(config, progress=say)
    _, purged = pipeline.purged()
    if purged is None:
        pipeline.config = replace(config, tables=args.tables, exclude_tables=None)
        state = SnapshotState.load(pipeline.store)
        names = [n for n in state.tables if pattern.fullmatch(n)]
        dropped = forget_tables(pipeline.lake, names)
        say(f"reading again: {', '.join(dropped) or 'no snapshotted table matches; new tables only'}")
    else:
        captured = captured_names(args.source, table_filter(tables, exclude))
        missing = [n for n in captured if not pattern.fullmatch(n)]
        if missing:
            raise purged.with_remedy(
                "Only a snapshot of every captured table can replace it, and --tables leaves out "
                f"{', '.join(missing)}: nothing was read. Run sluice snapshot again with --tables "
                f"'{tables or '.*'}'")
        start_over(pipeline.lake, table_filter(tables, exclude))
        say(f"{purged.facts}: reading every captured table again ({len(captured)}) from a new start; the next "
            "sluice run streams on from this snapshot")
    pipeline.run(label="sluice snapshot")  # Ctrl-C: at the end of a wave of chunks; twice: now
    return 0
