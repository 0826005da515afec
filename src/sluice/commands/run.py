"""``sluice run``: the pipeline from a server's binlog into a Delta lake, on Spark."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sluice.commands.run_settings import RunHelp, add_run_options, pipeline_config

HELP = """\
Run the change-data pipeline on Spark: follow the server's binlog and keep, in the lake (a
directory, or s3://, abfss://, gs:// on object storage), a Delta table per captured table
(LAKE/<db>/<table>, typed columns, one row per primary key) and a change log of every change
(LAKE/_sluice/changes). Exactly once: stop it, kill it, restart it — the mirror ends equal to the
source.

examples:
  sluice run --source mysql://repl:secret@db:3306/ --lake ./lake
  sluice run --source mariadb://repl@db/ --lake s3://bucket/lake --tables 'shop\\..*' --trigger 5s
  sluice run --source mysql://repl@db/ --lake ./lake --trigger once      everything so far, then stop
  sluice run --config pipeline.toml
  sluice run --source mysql://repl@db/ --lake ./lake --metrics-port 9108   Prometheus metrics on :9108/metrics
  sluice run --source mysql://repl@db/ --lake ./lake --route 'shop_[0-9]+\\.orders=shop.orders'
                                                  shards into one mirror, keyed with _source_db, _source_table

The same settings in a TOML file (command-line options win):
  source = "mysql://repl@db:3306/?password_env=DB_PASSWORD"
  lake = "/data/lake"
  tables = "shop\\\\..*"
  trigger = "1s"
  master = "local[*]"
  [spark]
  "spark.driver.memory" = "4g"
A lake on object storage, with options for delta-rs and sluice alike (the AWS_*, AZURE_* and
GOOGLE_* environment works too; the config's options win):
  [lake]
  uri = "s3://bucket/lake"
  [lake.storage]
  AWS_REGION = "eu-west-1"
  AWS_ENDPOINT_URL = "https://minio.example:9000"
Spark's checkpoint needs a file system: --checkpoint-dir (default LAKE/_sluice/checkpoint for a
lake on a file system, ~/.local/state/sluice/checkpoints/<lake digest> for object storage).

Where it starts: on the first run it snapshots every captured table (primary-key chunks read in
parallel on Spark, each reconciled with the binlog between its watermarks; resumable chunk by
chunk) and then streams from the position taken before the first chunk, so nothing is missed or
applied twice (--snapshot never streams from --from or the earliest binlog instead); afterwards
it resumes where it stopped (Spark's checkpoint, else the lake's last batch). When the server
purged the binlog it would resume from (binlog_expire_logs_seconds while it was stopped), it stops
with an error naming what is missing, and the lake as it was: sluice snapshot of every captured
table, then sluice run goes on from that snapshot; --snapshot when-needed does both itself. A table
without a primary key goes to the change log only and is reported as not mirrorable. The mirror
follows every DDL in the batch that carries it (added columns get the value the server gave
existing rows; dropped columns and tables leave the mirror, their data archived under
LAKE/_sluice/archive; what it cannot follow exactly is read again). Between batches it compacts,
checkpoints and vacuums the lake's tables a little at a time ([maintenance], see sluice maintain
--help), and mirrors write Delta's change data feed. Ctrl-C (or SIGTERM) stops at the next batch
boundary (in the snapshot, after the wave of chunks being read) and prints what the run did; a
second Ctrl-C stops at once, and the next run does the unfinished batch again.
--history 'shop\\.orders' keeps every version of each row beside the mirror too, in
LAKE/shop/orders__history (__start_at, __end_at, __start_seq, __end_seq; the current version's
__end_at is NULL). Read a mirror with e.g.
  python -c "import deltalake; print(deltalake.DeltaTable('lake/shop/orders').to_pandas())"
A mirror over 1 MiB is MERGEd once its pending changes pay for the rewrite (--mirror-max-lag); its
state as of the last batch, pending changes included:
  python -c "from sluice.lake.mirror.pending import read_mirror; print(read_mirror('lake', 'shop', 'orders'))"
"""


def register(sub: Any) -> None:
    """Add ``sluice run`` and its options (``sluice.commands.run_settings``) to the command subparsers."""
    parser = sub.add_parser(
        "run",
        help="run the pipeline into a Delta lake on Spark",
        description=HELP,
        formatter_class=RunHelp,
    )
    add_run_options(parser)
    parser.add_argument("--config", metavar="FILE", help="read these settings from a TOML file")
    parser.set_defaults(handler=run)


def load_config(args: argparse.Namespace) -> Any:
    """The ``PipelineConfig`` from ``--config`` TOML, command-line options taking precedence."""
    return pipeline_config(args)


def run(args: argparse.Namespace) -> int:
    """``sluice run``: run the pipeline (and its metrics endpoint) until stopped, then print what it did."""
    from sluice.spark.pipeline.runner import Pipeline

    config = load_config(args)

    def say(text: str) -> None:
        print(f"sluice run: {text}", file=sys.stderr, flush=True)

    pipeline = Pipeline(config, progress=say)
    metrics = None
    if config.metrics_port is not None:
        from sluice.spark.pipeline.metrics import PipelineMetrics

        metrics = pipeline.metrics = PipelineMetrics(pipeline.app_id)
        port = metrics.serve(config.metrics_port, config.metrics_host)
        say(f"metrics on http://{config.metrics_host}:{port}/metrics")
    if config.snapshot == "never" and config.starting_position == "earliest" and not pipeline.checkpoint_path.exists():
        say("first run without a snapshot: streaming from the earliest binlog still on the server")
    where = f"lake {pipeline.store.uri}"
    if pipeline.store.remote:
        where += f", checkpoint {pipeline.checkpoint_path}"
    say(f"{where}, pipeline {pipeline.app_id}; Ctrl-C stops at the next batch boundary")
    try:
        stats = pipeline.run()
    finally:
        if metrics is not None:
            metrics.close()
    say(f"stopped: {stats.line()}; {stats.inserted} inserted, {stats.updated} updated, {stats.deleted} deleted; "
        f"{stats.batch_seconds:.1f}s from the first batch with changes to the end of the last "
        f"({stats.driver_seconds:.1f}s of it the driver's DDL, MERGEs and commits)")
    return 0
