"""``sluice verify``: compare every Delta mirror of a lake with its table on the source server."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from sluice.commands.column_options import add_column_options, rules_for_lake
from sluice.commands.filter_options import EXCLUDE_TABLES, TABLES, add_filter_options
from sluice.commands.route_options import add_route_option, routes_of_lake

HELP = """\
Compare every mirrored table of a lake (LAKE/<db>/<table>, as sluice run writes them) and every
source table the lake's pipeline captures (the --tables / --exclude-tables of its last sluice run)
with its table on the source server: the row count, and a checksum of every row over all its
columns in sluice's canonical encoding, matched by primary key. A captured table whose mirror is
missing or unreadable differs; one without a primary key has no mirror by design (its rows are in
the change log) and is listed as not compared. --tables / --exclude-tables here narrow the
comparison. A lake written before sluice recorded its run's filter has none until its next run:
verify then compares the lake's mirrors (and the source tables --tables takes) and says so.
Columns the lake's sluice run kept out or hashed (--exclude-columns / --hash-columns, recorded in
the lake) are left out or compared as hashes: give the config file with the hash key (--config),
and no column options, or the same ones.
Prints one line per table and a summary; exits 0 when every table is equal, 1 when any differs (or
cannot be compared).

examples:
  sluice verify --source mysql://root:secret@db:3306/ --lake ./lake
  sluice verify --source mariadb://app@db/?password_env=DB_PASSWORD --lake /data/lake --tables 'shop\\..*'

output:
  ok   shop.customers  1234 rows
  DIFF shop.orders  source 10 rows, mirror 9: 1 missing, 0 extra, 2 different (first keys: id=7 (missing), ...)
  --   shop.audit  not compared
       note: no primary key: not mirrored by design; its rows and changes are in the change log (_sluice/changes)

  missing    rows on the source that the mirror lacks
  extra      rows in the mirror that the source no longer has
  different  rows whose key is on both sides but whose values differ

The source is read with one consistent snapshot (SELECT, streamed), so the user needs SELECT on
the tables and on information_schema. Compare when the pipeline has caught up (sluice run
--trigger once, or a quiet source): changes not mirrored yet show up as differences. Columns that
only the mirror has (dropped at the source since) are ignored; a source column the mirror lacks
makes the table differ. Without a primary key, rows are compared as multisets (no 'different').
"""


def register(sub: Any) -> None:
    """Add ``sluice verify`` and its options to the command subparsers."""
    parser = sub.add_parser(
        "verify",
        help="compare the Delta mirrors of a lake with the source tables",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--source", metavar="DSN", required=True,
                        help="the server the lake mirrors: mysql://user[:password]@host[:port]/ or mariadb://...")
    parser.add_argument("--lake", metavar="DIR|URI", required=True,
                        help="the lake sluice run writes to: a directory, or s3://, abfss://, gs:// (options from "
                        "the AWS_* / AZURE_* / GOOGLE_* environment)")
    add_filter_options(parser, TABLES, EXCLUDE_TABLES)
    add_column_options(parser)  # the lake's by default: excluded columns not compared, hashed ones hashed
    add_route_option(parser)  # the lake's by default: a routed table compared with its share
    parser.set_defaults(handler=run)


def verdict_line(v: Any) -> str:
    """One line of output for a ``TableVerdict``."""
    if not v.compared:
        line = f"--   {v.name}  not compared"
    elif v.ok:
        line = f"ok   {v.name}  {v.source_rows} rows"
    else:
        line = (f"DIFF {v.name}  source {v.source_rows} rows, mirror {v.mirror_rows}: {v.missing} missing, "
                f"{v.extra} extra, {v.different} different")
        if v.first_keys:
            line += f" (first keys: {', '.join(v.first_keys)})"
    if v.note:
        line += f"\n     note: {v.note}"
    return line


def unknown_capture_line(verdicts: list[Any], narrowed: bool) -> str:
    """What a lake without a recorded table filter (written before sluice kept one) leaves unseen,
    and which tables were compared instead."""
    names = [v.name for v in verdicts]
    shown = ", ".join(names[:10]) + (f", ... ({len(names)} in all)" if len(names) > 10 else "")
    took = ("the lake's mirrors and the source tables --tables / --exclude-tables take" if narrowed
            else "only the lake's mirrors")
    return (f"capture filter unknown: the lake records no --tables / --exclude-tables of its sluice run (it was "
            f"written before sluice kept them; its next sluice run records them), so verify compared {took}: "
            f"{shown}. A captured table without a mirror is not seen; give --tables to name what it must hold")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``sluice verify``: compare each mirror with the source, one line per table; 1 when any differs."""
    from sluice.cdc.filters import table_filter
    from sluice.dsn import parse_dsn
    from sluice.lake.layout import open_lake
    from sluice.spark.verify.check import verify_lake
    from sluice.spark.verify.scope import capture_recorded

    out = sys.stdout if out is None else out
    connection = parse_dsn(args.source)
    store = open_lake(args.lake)
    narrowed = table_filter(args.tables, args.exclude_tables)
    routes = routes_of_lake(getattr(args, "routes", None), store.get_json(store.CAPTURE))
    verdicts = verify_lake(connection, store, tables=narrowed, columns=rules_for_lake(args, store), routes=routes)
    for v in verdicts:
        print(verdict_line(v), file=out)
    if not capture_recorded(store):
        print(unknown_capture_line(verdicts, narrowed is not None), file=out)
    differ = sum(1 for v in verdicts if not v.ok)
    # A routed mirror's line repeats the rows of its tables' lines: counted once, on theirs.
    mirrors = {t for v in verdicts if routes is not None and (t := routes.target(v.db, v.table)) is not None}
    rows = sum(v.source_rows for v in verdicts if (v.db, v.table) not in mirrors)
    if differ:
        print(f"{differ} of {len(verdicts)} tables differ from the source", file=out)
    else:
        skipped = sum(1 for v in verdicts if not v.compared)
        aside = f"; {skipped} not mirrored (no primary key)" if skipped else ""
        print(f"all {len(verdicts) - skipped} tables equal the source ({rows} rows){aside}", file=out)
    out.flush()
    return 1 if differ else 0
