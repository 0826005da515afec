"""``sluice run``: the pipeline from a server's binlog into a Delta lake, on Spark."""

from __future__ import annotations

import argparse
import sys
import tomllib
from typing import Any

from sluice.commands.filter_options import EXCLUDE_TABLES, SKIP_INCIDENTS, TABLES
from sluice.errors import ConfigError

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
it resumes where it stopped (Spark's checkpoint, else the lake's last batch). A table
without a primary key goes to the change log only and is reported as not mirrorable. The mirror
follows every DDL in the batch that carries it (added columns get the value the server gave
existing rows; dropped columns and tables leave the mirror, their data archived under
LAKE/_sluice/archive; what it cannot follow exactly is read again). Between batches it compacts,
checkpoints and vacuums the lake's tables a little at a time ([maintenance], see sluice maintain
--help), and mirrors write Delta's change data feed. Ctrl-C (or SIGTERM) stops at the next batch
boundary (in the snapshot, after the wave of chunks being read) and prints what the run did; a
second Ctrl-C stops at once, and the next run does the unfinished batch again.
Read a mirror with e.g.
  python -c "import deltalake; print(deltalake.DeltaTable('lake/shop/orders').to_pandas())"
"""


def register(sub: Any) -> None:
    """Add ``sluice run`` and its options to the command subparsers."""
    parser = sub.add_parser(
        "run",
        help="run the pipeline into a Delta lake on Spark",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--source", metavar="DSN", help="mysql://user[:password]@host[:port]/ or mariadb://...")
    parser.add_argument("--lake", metavar="DIR|URI",
                        help="directory of the Delta tables (created if missing), or s3://, abfss://, gs:// URI")
    parser.add_argument("--checkpoint-dir", metavar="DIR",
                        help="Spark's streaming checkpoint, on a file system (default: see above)")
    TABLES.add(parser)
    EXCLUDE_TABLES.add(parser)
    parser.add_argument(
        "--trigger", metavar="EVERY", help="micro-batch interval (1s, 500ms, 2m) or 'once' (default 1s)"
    )
    parser.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    parser.add_argument(
        "--from", dest="starting", metavar="POSITION",
        help="where a new lake starts: earliest (default), latest, FILE:POS or a GTID set",
    )
    parser.add_argument(
        "--max-rows-per-batch", type=int, metavar="N",
        help="cap on the changes in one micro-batch (default: batches of up to 256 MiB of binlog)"
    )
    parser.add_argument(
        "--snapshot", choices=("initial", "never", "only"),
        help="initial (default without --from): copy every captured table first, in primary-key chunks on "
        "Spark, then stream from the right position; never: stream only; only: snapshot and stop",
    )
    parser.add_argument(
        "--chunk-rows", type=int, metavar="N",
        help="rows per snapshot chunk (default: 64 MiB of the table's average row, 1,000 to 1,000,000 rows; "
        "a running chunk holds its rows a few times over in its task's memory)",
    )
    SKIP_INCIDENTS.add(parser, default=None)  # not given: the config file says
    parser.add_argument(
        "--metrics-port", type=int, metavar="N",
        help="serve Prometheus metrics on http://HOST:N/metrics: lag (seconds, bytes), changes per table and op, "
        "batches and their duration, snapshot progress, errors, the last committed position",
    )
    parser.add_argument("--metrics-host", metavar="ADDR", help="address the metrics listen on (default 0.0.0.0)")
    parser.add_argument(
        "--no-maintenance", dest="maintenance", action="store_false", default=None,
        help="do not compact, checkpoint or vacuum the lake's tables between batches ([maintenance] in the config "
        "sets the schedule; sluice maintain --help)",
    )
    parser.add_argument(
        "--no-change-feed", dest="change_feed", action="store_false", default=None,
        help="create mirrors without Delta's change data feed (on by default: load_cdf, readChangeFeed)",
    )
    parser.add_argument(
        "--mirror-max-lag", type=float, metavar="SECONDS",
        help="MERGE a table's pending changes into its Delta mirror at least this often (default 600; 0: every "
        "batch). A large mirror is MERGEd once its pending changes pay for rewriting it ([mirror] in the config); "
        "the change log and sluice.lake.read_mirror are current after every batch",
    )
    parser.add_argument("--config", metavar="FILE", help="read these settings from a TOML file")
    parser.set_defaults(handler=run)


def load_config(args: argparse.Namespace) -> Any:
    """The ``PipelineConfig`` from ``--config`` TOML, command-line options taking precedence."""
    from sluice.commands.maintain import maintenance_config, settings_table
    from sluice.spark.lake.pending import MirrorCadence
    from sluice.spark.pipeline.runner import PipelineConfig

    settings: dict[str, Any] = {}
    if args.config:
        try:
            with open(args.config, "rb") as f:
                settings = tomllib.load(f)
        except OSError as exc:
            raise ConfigError(f"cannot read {args.config}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{args.config} is not valid TOML: {exc}") from None
    known = {"source", "lake", "tables", "exclude_tables", "trigger", "master", "from", "max_rows_per_batch", "spark",
             "snapshot", "chunk_rows", "skip_incidents", "metrics_port", "metrics_host", "checkpoint_dir",
             "change_feed", "maintenance", "mirror"}
    unknown = set(settings) - known
    if unknown:
        raise ConfigError(f"{args.config}: unknown settings {sorted(unknown)}; known: {sorted(known)}")
    lake, storage = lake_settings(settings.get("lake"), args.config)
    settings["lake"] = lake
    for key in ("source", "lake", "tables", "exclude_tables", "trigger", "master", "max_rows_per_batch", "snapshot",
                "chunk_rows", "skip_incidents", "metrics_port", "metrics_host", "checkpoint_dir", "change_feed"):
        value = getattr(args, key, None)
        if value is not None:
            settings[key] = value
    if args.starting is not None:
        settings["from"] = args.starting
    for key in ("source", "lake"):
        if not settings.get(key):
            raise ConfigError(f"sluice run needs --{key} (or '{key} = ...' in --config)")
    spark_conf = settings.get("spark") or {}
    if not isinstance(spark_conf, dict):
        raise ConfigError("[spark] in the config file must be a table of Spark settings")
    return PipelineConfig(
        source=settings["source"],
        lake=settings["lake"],
        tables=settings.get("tables"),
        exclude_tables=settings.get("exclude_tables"),
        trigger=settings.get("trigger", "1s"),
        master=settings.get("master"),
        starting_position=settings.get("from", "earliest"),
        max_rows_per_batch=int(settings["max_rows_per_batch"]) if settings.get("max_rows_per_batch") else None,
        snapshot=settings.get("snapshot") or ("never" if "from" in settings else "initial"),
        chunk_rows=int(settings["chunk_rows"]) if settings.get("chunk_rows") is not None else None,
        conf=tuple((str(k), str(v)) for k, v in spark_conf.items()),
        skip_incidents=bool(settings.get("skip_incidents", False)),
        metrics_port=_port(settings.get("metrics_port")),
        metrics_host=str(settings.get("metrics_host") or "0.0.0.0"),
        storage=storage,
        checkpoint_dir=settings.get("checkpoint_dir"),
        change_feed=_flag(settings.get("change_feed", True), "change_feed"),
        maintenance=maintenance_config(settings.get("maintenance"), f"{args.config}: [maintenance]",
                                       enabled=getattr(args, "maintenance", None)),
        mirror=settings_table(MirrorCadence, settings.get("mirror"), f"{args.config}: [mirror]", "mirror",
                              max_lag=getattr(args, "mirror_max_lag", None)),
    )


def lake_settings(value: Any, config: str | None) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """``lake = "..."`` or a ``[lake]`` table (``uri``, ``[lake.storage]``): the lake and its options."""
    if value is None or isinstance(value, str):
        return value, ()
    if not isinstance(value, dict):
        raise ConfigError(f"{config}: lake is a path or URI, or a [lake] table with uri = \"...\"")
    unknown = set(value) - {"uri", "storage"}
    if unknown:
        raise ConfigError(f"{config}: unknown settings in [lake]: {sorted(unknown)}; known: ['storage', 'uri']")
    storage = value.get("storage") or {}
    if not isinstance(storage, dict):
        raise ConfigError(f"{config}: [lake.storage] must be a table of storage options (name = value)")
    for name, option in storage.items():
        if not isinstance(option, str | int | float | bool):
            raise ConfigError(f"{config}: [lake.storage] {name} must be a string, number or boolean")
    text = {str(k): (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in storage.items()}
    return value.get("uri"), tuple(sorted(text.items()))


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} is true or false; found {value!r}")
    return value


def _port(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise ConfigError(f"--metrics-port takes a port number 0..65535 (0: any free port); found {value!r}")
    return value


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
        f"{stats.batch_seconds:.1f}s from the first batch with changes to the end of the last")
    return 0
