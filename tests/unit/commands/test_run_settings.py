"""``sluice run``'s settings are declared once (``sluice.commands.run_settings``): the TOML file and
the command line name the same settings and give the same config, a setting given nowhere is the
``PipelineConfig`` field's default, and what ``--help`` says of a default is that default."""

import argparse
import dataclasses
import tomllib

import pytest

from sluice.cli import build_parser
from sluice.commands.run import load_config
from sluice.commands.run_settings import SETTINGS, field_defaults
from sluice.errors import ConfigError
from sluice.lake.maintenance.steps import MaintenanceConfig
from sluice.lake.mirror.pending import MirrorCadence
from sluice.spark.pipeline.config import PipelineConfig

pytestmark = pytest.mark.unit

BASE = ["--source", "mysql://u@h/", "--lake", "x"]
BASE_FILE = {"source": 'source = "mysql://u@h/"', "lake": 'lake = "x"'}

# Each setting with an option, given on the command line and the same in the TOML file.
BOTH_WAYS = {
    "source": (["--source", "mysql://other@h/"], 'source = "mysql://other@h/"'),
    "lake": (["--lake", "s3://bucket/lake"], 'lake = "s3://bucket/lake"'),
    "checkpoint_dir": (["--checkpoint-dir", "/state/cp"], 'checkpoint_dir = "/state/cp"'),
    "tables": (["--tables", r"shop\..*"], r'tables = "shop\\..*"'),
    "exclude_tables": (["--exclude-tables", r"shop\.audit"], r'exclude_tables = "shop\\.audit"'),
    "trigger": (["--trigger", "5s"], 'trigger = "5s"'),
    "master": (["--master", "local[2]"], 'master = "local[2]"'),
    "starting_position": (["--from", "binlog.000003:120"], 'from = "binlog.000003:120"'),
    "max_rows_per_batch": (["--max-rows-per-batch", "5000"], "max_rows_per_batch = 5000"),
    "snapshot": (["--snapshot", "only"], 'snapshot = "only"'),
    "chunk_rows": (["--chunk-rows", "20000"], "chunk_rows = 20000"),
    "snapshot_connections": (["--snapshot-connections", "3"], "snapshot_connections = 3"),
    "skip_incidents": (["--skip-incidents"], "skip_incidents = true"),
    "metrics_port": (["--metrics-port", "9108"], "metrics_port = 9108"),
    "metrics_host": (["--metrics-host", "127.0.0.1"], 'metrics_host = "127.0.0.1"'),
    "maintenance": (["--no-maintenance"], "[maintenance]\nenabled = false"),
    "change_feed": (["--no-change-feed"], "change_feed = false"),
    "mirror": (["--mirror-max-lag", "30"], "[mirror]\nmax_lag = 30"),
    "stall_timeout": (["--stall-timeout", "5"], "stall_timeout = 5"),
    "writer_lease": (["--writer-lease", "12.5"], "writer_lease = 12.5"),
    "part_bytes": (["--part-size", "512K"], 'part_size = "512K"'),
    "columns": (["--exclude-columns", r".*\.ssn"], "[columns]\nexclude = '.*\\.ssn'"),
    "history": (["--history", r"shop\.orders"], r'history = "shop\\.orders"'),
    "routes": (["--route", r"shop_1\.t=shop.t", "--route", r"(\w+)_2\.t=\1.t"],
               "route = ['shop_1\\.t=shop.t', '(\\w+)_2\\.t=\\1.t']"),
}


def _config(tmp_path, argv: list[str], toml: str = "") -> PipelineConfig:
    """The config of ``argv`` and a file of ``toml`` after the source and the lake (unless it sets them)."""
    base = [line for key, line in BASE_FILE.items() if not toml.startswith(f"{key} =")]
    path = tmp_path / "pipeline.toml"
    path.write_text("\n".join([*base, toml]) + "\n")
    return load_config(build_parser("run").parse_args(["run", *argv, "--config", str(path)]))


def test_every_setting_is_declared_once_with_its_key_and_option():
    keys = [s.key for s in SETTINGS]
    assert sorted(keys) == sorted({"source", "lake", "tables", "exclude_tables", "trigger", "master", "from",
                                   "max_rows_per_batch", "spark", "snapshot", "chunk_rows", "snapshot_connections",
                                   "skip_incidents", "metrics_port", "metrics_host", "checkpoint_dir", "change_feed",
                                   "maintenance", "mirror", "stall_timeout", "writer_lease", "part_size",
                                   "columns", "history", "route"})
    fields = {f for s in SETTINGS for f in (s.fields or (s.field,))}
    config_fields = {f.name for f in dataclasses.fields(PipelineConfig)}
    assert fields <= config_fields and config_fields - fields == {"max_bytes_per_batch"}  # not a user's setting
    assert {s.field for s in SETTINGS if s.flag or s.option} == set(BOTH_WAYS)


@pytest.mark.parametrize("field", sorted(BOTH_WAYS))
def test_the_file_and_the_command_line_give_the_same_config(tmp_path, field):
    argv, toml = BOTH_WAYS[field]
    given = _config(tmp_path, argv)
    assert given == _config(tmp_path, [], toml)
    assert given != _config(tmp_path, []), f"{argv} changed nothing"


def test_a_setting_given_nowhere_is_the_fields_default():
    config = load_config(build_parser("run").parse_args(["run", *BASE]))
    assert config == PipelineConfig(source="mysql://u@h/", lake="x", snapshot="initial")  # sluice run's own default
    assert load_config(build_parser("run").parse_args(["run", *BASE, "--from", "latest"])).snapshot == "never"


def _help() -> str:
    parser = build_parser("run")
    run = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["run"]
    return " ".join(run.format_help().split())


def test_the_help_shows_the_defaults_of_the_config():
    text, defaults = _help(), field_defaults()
    assert defaults["trigger"] == PipelineConfig.__dataclass_fields__["trigger"].default
    assert f"'once' (default {defaults['trigger']})" in text
    assert f"(default {defaults['metrics_host']})" in text
    assert f"(default {defaults['starting_position']})" in text
    assert f"(default {MirrorCadence().max_lag:g}; 0: every batch)" in text
    assert f"batches of up to {defaults['max_bytes_per_batch'] >> 20} MiB of binlog" in text
    assert "{" not in text.replace('{"op": "ddl", ...}', "").replace("{initial,never,only,when-needed}", "")


def test_sluice_maintains_help_lists_the_maintenance_defaults():
    """The schedule ``sluice maintain --help`` prints as 'the defaults' is ``MaintenanceConfig``'s."""
    from sluice.commands.maintain import HELP

    block = HELP[HELP.index("(these are the defaults):") + len("(these are the defaults):"):]
    listed = tomllib.loads("\n".join(line.strip() for line in block.splitlines()))
    assert listed["change_feed"] == field_defaults()["change_feed"]
    defaults = dataclasses.asdict(MaintenanceConfig())
    assert listed["maintenance"] == {k: v for k, v in defaults.items() if k != "allow_short_retention"}


def test_the_mirror_table_sets_how_many_mirrors_commit_at_once(tmp_path):
    assert _config(tmp_path, []).mirror.commits_at_once == 4
    assert _config(tmp_path, [], "[mirror]\ncommits_at_once = 1").mirror.commits_at_once == 1
    with pytest.raises(ConfigError, match="commits_at_once"):
        _config(tmp_path, [], "[mirror]\ncommits_at_once = 0")


def test_the_stall_timeout_becomes_the_source_s_read_timeout_unless_it_has_one():
    from sluice.dsn import parse_dsn

    config = PipelineConfig(source="mysql://u@h/", lake="x", stall_timeout=5)
    assert parse_dsn(config.source).deadline == 5.0
    own = PipelineConfig(source="mysql://u@h/?read_timeout=60", lake="x", stall_timeout=5)
    assert parse_dsn(own.source).deadline == 60.0
    with pytest.raises(ConfigError, match="stall-timeout"):
        PipelineConfig(source="mysql://u@h/", lake="x", stall_timeout=-1)


def test_snapshot_when_needed_is_a_mode_of_the_file_and_the_command_line(tmp_path):
    given = _config(tmp_path, ["--snapshot", "when-needed"])
    assert given.snapshot == "when-needed" and given == _config(tmp_path, [], 'snapshot = "when-needed"')
    assert "when-needed: as initial, and when the binlog the stream would go on from was purged" in _help()
    with pytest.raises(ConfigError, match="initial, never, only or when-needed"):
        _config(tmp_path, [], 'snapshot = "when_needed"')


@pytest.mark.parametrize("value", ["lots", "12", "0K", "true"])
def test_a_part_size_that_is_no_size_or_under_a_kibibyte_is_refused(tmp_path, value):
    with pytest.raises(ConfigError, match="--part-size"):
        _config(tmp_path, ["--part-size", value])


def test_history_is_a_regex_checked_before_spark_starts(tmp_path):
    assert _config(tmp_path, []).history is None
    assert "LAKE/<db>/<table>__history" in _help()
    with pytest.raises(ConfigError, match=r"--history 'shop\(' is not a regular expression"):
        _config(tmp_path, ["--history", "shop("])
    with pytest.raises(ConfigError, match="history is a regex"):
        _config(tmp_path, [], "history = 3")
