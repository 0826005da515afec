"""``sluice maintain``: compact, checkpoint and vacuum every Delta table of a lake now, with the
``lake`` and ``[maintenance]`` settings of sluice run's TOML file (``sluice.commands.config_file``)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

from sluice.commands.config_file import lake_settings, maintenance_config, read_config
from sluice.errors import ConfigError, SluiceError
from sluice.lake.layout import Lake, open_lake

HELP = """\
Maintain every Delta table of a lake now: the mirrors (LAKE/<db>/<table>), the change log
(LAKE/_sluice/changes) and the archived mirrors (LAKE/_sluice/archive/...). On each table, in
this order:

  compact     rewrite its small files into files of about --target-file-size (one commit that
              changes no row: readers, the change data feed and exactly-once replays are unaffected)
  checkpoint  write a Delta checkpoint, then delete log entries past the table's
              delta.logRetentionDuration (30 days unless set)
  vacuum      delete the files no version within --retention needs (Delta's 7 days by default),
              and the files of writes that never committed (a killed run's) once as old

sluice run does the same on its own between micro-batches, a little at a time (see
[maintenance] below); sluice maintain is for a lake whose pipeline is stopped, or to catch up
at once. With the pipeline running, a compaction can meet the pipeline's MERGE on the same
table: one of the two commits fails, and a failed batch is replayed exactly once at restart.
Killing sluice maintain at any moment leaves every table valid.

examples:
  sluice maintain --lake ./lake                 every step on every table, one line per table
  sluice maintain --lake ./lake --dry-run       what it would do, changing nothing
  sluice maintain --lake ./lake --retention 720                 keep 30 days of versions
  sluice maintain --lake ./lake --retention 1 --allow-short-retention   (only with nothing else reading)

The schedule of sluice run, in its TOML config file (these are the defaults):
  change_feed = true              # mirrors write Delta's change data feed
  [maintenance]
  enabled = true
  target_file_size = 33554432     # bytes (32 MiB): the second tier of compaction
  small_file_size = 4194304       # bytes (an eighth of the target): the first tier
  min_small_files = 16            # compact a tier once the table has this many files in it
  checkpoint_interval = 100       # commits between two checkpoints
  retention_hours = 168           # VACUUM keeps this much history
  vacuum_interval = 86400         # seconds between two VACUUMs of a table
  budget = 0.5                    # seconds of steps started between two micro-batches
  rescan_interval = 60            # seconds between two listings of the lake's tables
  look_interval = 30              # seconds before a table that needed nothing is looked at again
"""

def register(sub: Any) -> None:
    """Add ``sluice maintain`` and its options to the command subparsers."""
    parser = sub.add_parser(
        "maintain",
        help="compact, checkpoint and vacuum every Delta table of a lake now",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--lake", metavar="DIR|URI",
                        help="the lake sluice run writes: a directory or s3://, abfss://, gs:// (or in --config)")
    parser.add_argument("--dry-run", action="store_true", help="say what each step would do; change nothing")
    parser.add_argument("--retention", type=float, metavar="HOURS",
                        help="VACUUM keeps the files versions this recent need (default 168, Delta's 7 days)")
    parser.add_argument("--allow-short-retention", action="store_true", default=None,
                        help="allow --retention below 168 hours: a reader or writer still on an older version "
                        "(time travel, a change-feed read, a running pipeline's batch) may lose its files")
    parser.add_argument("--target-file-size", type=int, metavar="BYTES",
                        help="size compaction aims its files at (default 33554432, 32 MiB)")
    parser.add_argument("--config", metavar="FILE", help="read 'lake' and [maintenance] from sluice run's TOML file")
    parser.set_defaults(handler=run)


def _settings(args: argparse.Namespace) -> tuple[Lake, Any]:
    file = read_config(args.config)
    lake, storage = lake_settings(file.get("lake"), args.config)
    lake = args.lake or lake
    if not lake:
        raise ConfigError("sluice maintain needs --lake (or 'lake = ...' / a [lake] table in --config)")
    config = maintenance_config(file.get("maintenance"), f"{args.config}: [maintenance]",
                                retention_hours=args.retention, allow_short_retention=args.allow_short_retention,
                                target_file_size=args.target_file_size)
    return open_lake(lake, dict(storage)), config


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``sluice maintain``: every step on every table, one line per table, then a summary."""
    from sluice.lake.maintenance.steps import STEPS, run_step

    out = sys.stdout if out is None else out
    try:
        store, config = _settings(args)
    except ConfigError as exc:
        if args.retention is not None and "below Delta's default" in str(exc):
            raise ConfigError(
                f"--retention {args.retention:g} is below Delta's default of 168 hours (7 days): a reader or "
                "writer still using an older version (a time-travel or change-feed read, a running pipeline's "
                "batch) would find its files deleted. Add --allow-short-retention to do it anyway"
            ) from None
        raise
    lake = store.uri
    tables = store.tables()
    if not tables:
        raise ConfigError(f"--lake {lake}: no Delta tables there (is it the directory sluice run writes?)")
    started = time.monotonic()
    failed = 0
    verb = "would maintain" if args.dry_run else "maintaining"
    print(f"{verb} {len(tables)} tables of {lake}", file=out, flush=True)
    for n, table in enumerate(tables, 1):
        parts = []
        for step in STEPS:
            try:
                parts.append(run_step(step, table, config, store.delta_options(), dry_run=args.dry_run).summary)
            except SluiceError as exc:
                failed += 1
                parts.append(f"{step} FAILED: {exc}")
        print(f"[{n}/{len(tables)}] {table.name}: {'; '.join(parts)}", file=out, flush=True)
    took = time.monotonic() - started
    if args.dry_run:
        print(f"dry run: nothing changed ({len(tables)} tables, {took:.1f}s)", file=out)
    elif failed:
        print(f"{failed} steps failed on {len(tables)} tables ({took:.1f}s); run sluice maintain again", file=out)
    else:
        print(f"maintained {len(tables)} tables ({took:.1f}s)", file=out)
    out.flush()
    return 1 if failed else 0
