"""The ``binlog`` data source's options: Spark's option strings checked once on the driver.

``SourceOptions.parse`` reads the options as Spark hands them (case-insensitive camelCase names;
the list is in ``sluice.spark.source.datasource``) and says what each number or flag must be;
``capture_config`` and ``follow_config`` turn them into the capture's and the follower's settings;
``start_checkpoint`` reads ``startingPosition`` by the one rule of ``sluice.binlog.position``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from sluice.binlog.position import Checkpoint, start_checkpoint
from sluice.cdc.capture import PART_BYTES, CaptureConfig, CaptureOutput
from sluice.cdc.column_rules import ColumnRules, column_rules
from sluice.cdc.filters import parse_ops, table_filter
from sluice.cdc.follow import FollowConfig
from sluice.dsn import parse_dsn
from sluice.errors import ConfigError

__all__ = ["SourceOptions", "column_options"]


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """The data source's options, checked once on the driver."""

    dsn: str | None = None
    tables: str | None = None
    exclude_tables: str | None = None
    ops: frozenset[str] | None = None
    starting: str = "earliest"
    max_rows: int | None = None
    max_bytes: int | None = None
    rows_per_partition: int = 100_000
    bytes_per_partition: int = 16 << 20
    schema_history: str | None = None
    paths: tuple[str, ...] = ()
    segment_bytes: int = 128 << 20
    skip_incidents: bool = False
    include_ddl: bool = False  # rows with op "ddl" for schema changes on captured tables (the pipeline's)
    stage_to: str | None = None  # a lake: tasks write its files and yield descriptors (sluice.spark.source.staging)
    in_flight_to: str | None = None  # a local file the planner writes what it reads to (sluice.spark.source.in_flight)
    part_bytes: int = PART_BYTES  # stageTo: a task's range in parts of about this many bytes (source.parts)
    schema: str | None = None  # archived files: the tables' definitions, a DSN or a SQL file
    positional: bool = False  # archived files: every table by position
    exclude_columns: str | None = None  # columns kept out (sluice.cdc.column_rules)
    hash_columns: str | None = None  # columns hashed, under the key in the environment variable hash_key_env
    hash_key_env: str | None = None  # the name of that variable: the key itself is never an option
    hash_key_file: str | None = None  # or a file holding the key (what sluice run hands its tasks)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """Check Spark's options (case-insensitive names) into ``SourceOptions``."""
        lower = {k.lower(): v for k, v in options.items()}

        def number(name: str) -> int | None:
            text = lower.get(name.lower())
            if text is None or text == "":
                return None
            try:
                value = int(text)
            except ValueError:
                raise ConfigError(f"option {name} must be a whole number, found {text!r}") from None
            if value <= 0:
                raise ConfigError(f"option {name} must be positive, found {value}")
            return value

        paths: tuple[str, ...] = ()
        if "paths" in lower:
            paths = tuple(json.loads(lower["paths"]))
        elif "path" in lower:
            paths = (lower["path"],)
        parsed = cls(
            dsn=lower.get("dsn"),
            tables=lower.get("tables"),
            exclude_tables=lower.get("excludetables"),
            ops=parse_ops(lower.get("ops")),
            starting=lower.get("startingposition", "earliest"),
            max_rows=number("maxRowsPerBatch"),
            max_bytes=number("maxBytesPerBatch"),
            rows_per_partition=number("rowsPerPartition") or 100_000,
            bytes_per_partition=number("bytesPerPartition") or 16 << 20,
            schema_history=lower.get("schemahistory"),
            paths=paths,
            segment_bytes=number("segmentBytes") or 128 << 20,
            skip_incidents=_flag("skipIncidents", lower.get("skipincidents")),
            include_ddl=_flag("includeDdl", lower.get("includeddl")),
            stage_to=lower.get("stageto") or None,
            in_flight_to=lower.get("inflightto") or None,
            part_bytes=number("partBytes") or PART_BYTES,
            schema=lower.get("schema") or None,
            positional=_flag("positional", lower.get("positional")),
            exclude_columns=lower.get("excludecolumns") or None,
            hash_columns=lower.get("hashcolumns") or None,
            hash_key_env=lower.get("hashkeyenv") or None,
            hash_key_file=lower.get("hashkeyfile") or None,
        )
        parsed.start_checkpoint()  # a start that does not parse fails here, before any connection
        parsed.column_rules()  # and so do a bad regex or a missing key
        return parsed

    def start_checkpoint(self) -> Checkpoint | None:
        """Where ``startingPosition`` starts when it names the place (``FILE:POS`` or a GTID set);
        None for ``earliest`` and ``latest``, which the server's binlogs answer."""
        if self.starting.strip().lower() in ("earliest", "latest"):
            return None
        return start_checkpoint(self.starting, 'option("startingPosition")')

    def capture_config(self) -> CaptureConfig:
        """How executors decode: table and ops filters, DDL rows, column-wise records (typed images
        too when the tasks stage for the pipeline)."""
        return CaptureConfig(table_filter=table_filter(self.tables, self.exclude_tables), ops=self.ops,
                             skip_incidents=self.skip_incidents, ddl=self.include_ddl,
                             output=CaptureOutput.TYPED_COLUMNS if self.stage_to else CaptureOutput.COLUMNS,
                             columns=self.column_rules())

    def column_rules(self) -> ColumnRules | None:
        """The columns kept out or hashed (options ``excludeColumns``, ``hashColumns``), the key read
        from the environment variable option ``hashKeyEnv`` names (or the file ``hashKeyFile``), in
        the process that asks."""
        key = None
        if self.hash_key_file:
            try:
                with open(self.hash_key_file, "rb") as f:
                    key = f.read() or None
            except OSError as exc:
                raise ConfigError(f'option("hashKeyFile"): cannot read {self.hash_key_file} ({exc.strerror}): it '
                                  "must be readable wherever the source's tasks run") from None
        elif self.hash_key_env:
            key = os.environ.get(self.hash_key_env, "").encode("utf-8") or None
            if key is None:
                raise ConfigError(f'option("hashKeyEnv") names the environment variable {self.hash_key_env}, which '
                                  "is not set or empty here: set it wherever the source's tasks run")
        elif self.hash_columns:
            raise ConfigError('option("hashColumns") needs option("hashKeyEnv"), the name of an environment '
                              'variable holding the key, or option("hashKeyFile"): the key itself is never an option')
        return column_rules(self.exclude_columns, self.hash_columns, key)

    def follow_config(self, *, until_end: bool = True) -> FollowConfig:
        """How to follow the server of option ``dsn`` (to its current end by default). A failover is
        logged by the planner and the tasks, except for sluice run's pipeline (``stageTo``), which says
        it once, as it commits the first batch read on the new server."""
        if not self.dsn:
            raise ConfigError('the binlog stream needs option("dsn", "mysql://user:password@host:port/")')
        return FollowConfig(parse_dsn(self.dsn), until_end=until_end, heartbeat_period=0, retries=8,
                            say_moved=not self.stage_to)


def column_options(rules: ColumnRules | None) -> tuple[dict[str, str], str | None]:
    """The source's options for ``rules`` (``excludeColumns``, ``hashColumns``, ``hashKeyFile``) and
    the file that holds the key, made here readable by this user alone (the caller removes it): the
    options, which Spark shows in plans, name the file, never the key."""
    if rules is None:
        return {}, None
    out = {}
    if rules.exclude is not None:
        out["excludeColumns"] = rules.exclude.pattern
    path = None
    if rules.hashed is not None:
        import tempfile

        fd, path = tempfile.mkstemp(prefix="sluice-key-")  # mode 0600
        with os.fdopen(fd, "wb") as f:
            f.write(rules.key)
        out |= {"hashColumns": rules.hashed.pattern, "hashKeyFile": path}
    return out, path


def _flag(name: str, text: str | None) -> bool:
    if text is None or text.strip().lower() in ("", "false", "0", "no"):
        return False
    if text.strip().lower() in ("true", "1", "yes"):
        return True
    raise ConfigError(f"option {name} is true or false, found {text!r}")
