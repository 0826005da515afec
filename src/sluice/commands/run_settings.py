"""``sluice run``'s settings, each declared once in ``SETTINGS``: the ``PipelineConfig`` field it sets,
its key in the TOML file, its command-line option and how a value becomes the field's.

``add_run_options`` builds the command's options from them and ``pipeline_config`` builds the
``PipelineConfig``: a key of the file that no setting declares is refused, an option given on the
command line wins over the file, and a setting given in neither is left to the field's default
(``sluice.spark.pipeline.config.PipelineConfig``, and ``MaintenanceConfig`` / ``MirrorCadence`` for
the ``[maintenance]`` and ``[mirror]`` tables). A help text shows a default from there: ``{trigger}``
or ``{mirror.max_lag:g}`` name a field (and an attribute of its value) and a format (``MiB``: a
size in MiB); ``RunHelp`` fills them in when ``--help`` is printed. The one default of sluice run's
own is the snapshot mode's: ``initial``, unless a start (``from``) is given.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sluice.binlog.position import start_checkpoint
from sluice.commands.config_file import lake_settings, maintenance_config, read_config, settings_table
from sluice.commands.filter_options import EXCLUDE_TABLES, SKIP_INCIDENTS, TABLES, FilterOption
from sluice.dsn import DEFAULT_READ_TIMEOUT
from sluice.errors import ConfigError
from sluice.spark.pipeline.modes import SNAPSHOT_MODES

__all__ = ["SETTINGS", "RunHelp", "Setting", "add_run_options", "field_defaults", "pipeline_config"]


def _same(value: Any, _where: str) -> Any:
    return value


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting: where it is read from and how its value becomes ``PipelineConfig``'s."""

    field: str  # the PipelineConfig field it sets, and the parsed option's attribute
    flag: str | None = None  # the command-line option; None: in the TOML file only
    help: str = ""
    toml: str | None = None  # the key in the TOML file, when it is not the field's name
    metavar: str | None = None
    value_type: Callable[[str], Any] = str  # what the option's text becomes (argparse's type)
    choices: tuple[str, ...] | None = None
    switch: bool | None = None  # an option without a value: the value it sets
    repeat: bool = False  # an option given several times: its values in a list (a TOML array)
    option: FilterOption | None = None  # an option declared with the other commands' filter options
    into: str | None = None  # a TOML table of settings: the key of it the command-line option sets
    convert: Callable[[Any, str], Any] = _same  # (value, where) -> the field's value; None: its default
    fields: tuple[str, ...] = ()  # the fields convert's tuple sets, when it sets more than ``field``
    required: bool = False
    run_default: Callable[[Mapping[str, Any]], Any] | None = None  # from the fields set, when not given

    @property
    def key(self) -> str:
        """The setting's key in the TOML file."""
        return self.toml or self.field

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Add the setting's option to ``parser``; an option not given leaves the attribute None."""
        if self.option is not None:
            self.option.add(parser, default=None)
        elif self.flag is None:
            return
        elif self.switch is not None:
            parser.add_argument(self.flag, dest=self.field, action="store_true" if self.switch else "store_false",
                                default=None, help=self.help)
        else:
            parser.add_argument(self.flag, dest=self.field, metavar=self.metavar, type=self.value_type,
                                choices=self.choices, help=self.help, action="append" if self.repeat else "store")

    @property
    def dest(self) -> str:
        """The parsed arguments' attribute that holds the option's value."""
        return self.option.dest if self.option is not None else self.field

    def values(self, from_file: Any, given: Any, where: str) -> dict[str, Any]:
        """The fields this setting sets from the file's value and the command line's (None: not given)."""
        if given is None:
            value = from_file
        elif self.into is not None and (from_file is None or isinstance(from_file, dict)):
            value = {**(from_file or {}), self.into: given}  # the option sets one key of the table
        elif self.into is not None and not isinstance(from_file, str):
            value = from_file  # neither a table nor its short form (``lake = "..."``): convert refuses it
        else:
            value = given
        if value is None:
            return {}
        converted = self.convert(value, where)
        if self.fields:
            return dict(zip(self.fields, converted, strict=True))
        return {} if converted is None else {self.field: converted}


# -- how the file's and the command line's values become the fields ---------------------------------

def _whole(name: str, *, zero_is_default: bool = False) -> Callable[[Any, str], int | None]:
    def convert(value: Any, where: str) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ConfigError(f"{name} is a whole number; found {value!r}")
        try:
            number = int(value)
        except ValueError:
            raise ConfigError(f"{name} is a whole number; found {value!r}") from None
        return None if zero_is_default and number == 0 else number

    return convert


def _seconds(name: str) -> Callable[[Any, str], float]:
    def convert(value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ConfigError(f"{name} is a number of seconds; found {value!r}")
        try:
            return float(value)
        except ValueError:
            raise ConfigError(f"{name} is a number of seconds; found {value!r}") from None

    return convert


def _flag(name: str) -> Callable[[Any, str], bool]:
    def convert(value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{name} is true or false; found {value!r}")
        return value

    return convert


def _size(name: str) -> Callable[[Any, str], int]:
    def convert(value: Any, where: str) -> int:
        from sluice.io.spill import parse_size

        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ConfigError(f"{name} is a size (8M, 512K, or bytes); found {value!r}")
        size = value if isinstance(value, int) else parse_size(value, name)
        if size < 1024:
            raise ConfigError(f"{name} is at least 1K; found {value!r}")
        return size

    return convert


def _port(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise ConfigError(f"--metrics-port takes a port number 0..65535 (0: any free port); found {value!r}")
    return value


def _start(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"from is earliest, latest, FILE:POS or a GTID set; found {value!r}")
    if value.strip().lower() not in ("earliest", "latest"):
        start_checkpoint(value, "--from")  # a start that does not parse fails here, not in the Spark query
    return value


def _lake(value: Any, where: str) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    return lake_settings(value, where)


def _spark(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise ConfigError("[spark] in the config file must be a table of Spark settings")
    return tuple((str(k), str(v)) for k, v in value.items())


def _maintenance(value: Any, where: str) -> Any:
    return maintenance_config(value, f"{where}: [maintenance]")


def _mirror(value: Any, where: str) -> Any:
    from sluice.lake.mirror.pending import MirrorCadence

    return settings_table(MirrorCadence, value, f"{where}: [mirror]", "mirror")


def _columns(value: Any, where: str) -> Any:
    from sluice.cdc.column_rules import column_rules
    from sluice.commands.column_options import column_settings

    return column_rules(*column_settings(value, f"{where}: [columns]", None, None))


def _history(value: Any, where: str) -> str:
    from sluice.spark.pipeline.history_feed import history_pattern

    if not isinstance(value, str):
        raise ConfigError(f"history is a regex on 'db.table'; found {value!r}")
    history_pattern(value)  # a bad regex fails here, before Spark starts
    return value


def _routes(value: Any, where: str) -> Any:
    from sluice.cdc.routes import parse_routes

    return parse_routes(value, f"{where}: route" if where != "None" else "--route")


def _snapshot_default(fields: Mapping[str, Any]) -> str:
    return "never" if "starting_position" in fields else "initial"


#: Every setting of sluice run, in the order ``--help`` lists them.
SETTINGS: tuple[Setting, ...] = (
    Setting("source", "--source", "mysql://user[:password]@host[:port]/ or mariadb://...", metavar="DSN",
            required=True),
    Setting("lake", "--lake", "directory of the Delta tables (created if missing), or s3://, abfss://, gs:// URI",
            metavar="DIR|URI", into="uri", convert=_lake, fields=("lake", "storage"), required=True),
    Setting("checkpoint_dir", "--checkpoint-dir", "Spark's streaming checkpoint, on a file system (default: see above)",
            metavar="DIR"),
    Setting("tables", option=TABLES),
    Setting("exclude_tables", option=EXCLUDE_TABLES),
    Setting("trigger", "--trigger", "micro-batch interval (1s, 500ms, 2m) or 'once' (default {trigger})",
            metavar="EVERY"),
    Setting("master", "--master", "Spark master (default local[*])", metavar="URL"),
    Setting("starting_position", "--from", "where a new lake starts: earliest, latest, FILE:POS or a GTID set "
            "(default {starting_position})", toml="from", metavar="POSITION", convert=_start),
    Setting("max_rows_per_batch", "--max-rows-per-batch", "cap on the changes in one micro-batch (default: "
            "batches of up to {max_bytes_per_batch:MiB} of binlog)", metavar="N", value_type=int,
            convert=_whole("max_rows_per_batch", zero_is_default=True)),
    Setting("part_bytes", "--part-size", "a task writes its share of a batch to the lake in parts of about this "
            "many bytes of binlog, a transaction larger than that too, before its commit; a running task holds about "
            "a few parts' worth of memory (default {part_bytes:MiB})", toml="part_size", metavar="SIZE",
            convert=_size("--part-size")),
    Setting("snapshot", "--snapshot", "initial (default without --from): copy every captured table first, in "
            "primary-key chunks on Spark, then stream from the right position; never: stream only; only: snapshot "
            "and stop; when-needed: as initial, and when the binlog the stream would go on from was purged "
            "(binlog_expire_logs_seconds while sluice was stopped), say so, snapshot every captured table again and "
            "stream on from that snapshot, instead of stopping with the error",
            choices=SNAPSHOT_MODES, run_default=_snapshot_default),
    Setting("chunk_rows", "--chunk-rows", "rows per snapshot chunk (default: 64 MiB of the table's average row, "
            "1,000 to 1,000,000 rows; a running chunk holds its rows a few times over in its task's memory)",
            metavar="N", value_type=int, convert=_whole("chunk_rows")),
    Setting("snapshot_connections", "--snapshot-connections", "snapshot chunks read from the source at once, each "
            "on a connection of its own (default: one per Spark core, at most 8; the source server, not Spark, is "
            "most often the limit)", metavar="N", value_type=int, convert=_whole("snapshot_connections")),
    Setting("skip_incidents", option=SKIP_INCIDENTS, convert=_flag("skip_incidents")),
    Setting("metrics_port", "--metrics-port", "serve Prometheus metrics on http://HOST:N/metrics: lag (seconds, "
            "bytes), changes per table and op, batches and their duration, snapshot progress, errors, the last "
            "committed position", metavar="N", value_type=int, convert=_port),
    Setting("metrics_host", "--metrics-host", "address the metrics listen on (default {metrics_host})",
            metavar="ADDR", convert=lambda value, where: str(value) if value else None),
    Setting("maintenance", "--no-maintenance", "do not compact, checkpoint or vacuum the lake's tables between "
            "batches ([maintenance] in the config sets the schedule; sluice maintain --help)", switch=False,
            into="enabled", convert=_maintenance),
    Setting("change_feed", "--no-change-feed", "create mirrors without Delta's change data feed (on by default: "
            "load_cdf, readChangeFeed)", switch=False, convert=_flag("change_feed")),
    Setting("mirror", "--mirror-max-lag", "MERGE a table's pending changes into its Delta mirror at least this "
            "often (default {mirror.max_lag:g}; 0: every batch). A large mirror is MERGEd once its pending changes "
            "pay for rewriting it ([mirror] in the config); the change log and read_mirror are current after every "
            "batch", metavar="SECONDS", value_type=float, into="max_lag", convert=_mirror),
    Setting("stall_timeout", "--stall-timeout", "seconds a connection to the source may stay silent (a dead network "
            "path sends nothing) before sluice drops it and connects again, resuming exactly where it was; the "
            "replication streams ask the server for a heartbeat four times as often "
            f"(default {DEFAULT_READ_TIMEOUT:g}; 0: none; the DSN's read_timeout wins)",
            metavar="SECONDS", value_type=float, convert=_seconds("stall_timeout")),
    Setting("writer_lease", "--writer-lease", "one writer at a time: a second sluice run on the lake stops at once, "
            "unless this one stopped renewing its lease for this long (default {writer_lease:g}); hosts' clocks "
            "must agree within it", metavar="SECONDS", value_type=float),
    Setting("columns", "--exclude-columns", "leave columns whose 'db.table.column' matches this regex in full out "
            "of the mirrors, the change log and the snapshot ([columns] in the config: exclude, hash, hash_key or "
            "hash_key_env; see sluice tail --help)", metavar="REGEX", into="exclude", convert=_columns),
    Setting("history", "--history", "keep every version of the rows of tables whose 'db.table' matches this regex "
            "in full, beside the mirror, in the Delta table LAKE/<db>/<table>__history (SCD type 2: __start_at, "
            "__end_at, __start_seq, __end_seq; the current version's __end_at is NULL)", metavar="REGEX",
            convert=_history),
    Setting("routes", "--route", "merge the tables whose 'db.table' matches REGEX in full into one mirror, TARGET "
            "(db.table; \\1 or \\g<name> take the regex's groups), beside two columns _source_db and _source_table "
            "that join its key; given several times, the first route that matches wins (route = [...] in the "
            "config)", toml="route", metavar="REGEX=TARGET", repeat=True, convert=_routes),
    Setting("conf", toml="spark", convert=_spark),
)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Add every setting's option to sluice run's parser."""
    for setting in SETTINGS:
        setting.add_to(parser)
    parser.add_argument("--hash-columns", metavar="REGEX",
                        help="keep the HMAC-SHA-256 (hex) of columns whose 'db.table.column' matches this regex in "
                        "full instead of their values, under the key of the config's [columns] table")


def pipeline_config(args: argparse.Namespace) -> Any:
    """The ``PipelineConfig`` of the TOML file ``args.config`` and the command line (which wins)."""
    from sluice.spark.pipeline.config import PipelineConfig

    file = read_config(args.config)
    columns = file.get("columns")
    if getattr(args, "hash_columns", None) and (columns is None or isinstance(columns, dict)):
        file["columns"] = {**(columns or {}), "hash": args.hash_columns}  # the [columns] table's other option
    known = {s.key for s in SETTINGS}
    unknown = set(file) - known
    if unknown:
        raise ConfigError(f"{args.config}: unknown settings {sorted(unknown)}; known: {sorted(known)}")
    fields: dict[str, Any] = {}
    for s in SETTINGS:  # the required ones first: a missing source is said before a bad value
        given = getattr(args, s.dest, None) if s.flag or s.option else None
        fields |= s.values(file.get(s.key), given, str(args.config))
        if s.required and not fields.get(s.field):
            raise ConfigError(f"sluice run needs {s.flag} (or '{s.key} = ...' in --config)")
    for s in SETTINGS:
        if s.run_default is not None and s.field not in fields:
            fields[s.field] = s.run_default(fields)
    return PipelineConfig(**fields)


def field_defaults() -> dict[str, Any]:
    """Each ``PipelineConfig`` field's default (a default factory's value)."""
    from sluice.spark.pipeline.config import PipelineConfig

    out = {}
    for f in dataclasses.fields(PipelineConfig):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


_DEFAULT = re.compile(r"\{([a-z_]+)(?:\.([a-z_]+))?(?::([^{}]*))?\}")


class RunHelp(argparse.RawDescriptionHelpFormatter):
    """sluice run's help: an option's ``{field}`` shows that field's default (module docstring)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = super()._get_help_string(action)
        if not text or "{" not in text:
            return text
        defaults = field_defaults()

        def fill(m: re.Match[str]) -> str:
            name, attribute, spec = m.groups()
            if name not in defaults:
                return m.group(0)
            value = defaults[name] if attribute is None else getattr(defaults[name], attribute)
            return f"{value / (1 << 20):g} MiB" if spec == "MiB" else format(value, spec or "")

        return _DEFAULT.sub(fill, text)
