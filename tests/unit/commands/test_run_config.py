"""``sluice run`` settings: command line, TOML file, and what wins."""

import argparse

import pytest

from sluice.cli import build_parser
from sluice.commands.run import load_config
from sluice.errors import ConfigError
from sluice.spark.pipeline.config import interval as _interval

pytestmark = pytest.mark.unit


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["run", *argv])


def test_toml_file_with_command_line_overrides(tmp_path):
    cfg = tmp_path / "pipeline.toml"
    cfg.write_text(
        'source = "mysql://repl@db:3306/?password_env=DB_PASSWORD"\n'
        'lake = "/data/lake"\n'
        'tables = "shop\\\\..*"\n'
        'trigger = "5s"\n'
        '[spark]\n"spark.driver.memory" = "4g"\n'
    )
    config = load_config(_args("--config", str(cfg), "--trigger", "once", "--master", "local[2]"))
    assert config.source.startswith("mysql://repl@db:3306/")
    assert config.lake == "/data/lake"
    assert config.tables == r"shop\..*"
    assert config.trigger == "once"
    assert config.master == "local[2]"
    assert config.conf == (("spark.driver.memory", "4g"),)
    assert config.starting_position == "earliest"


def test_missing_source_and_unknown_settings_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="--source"):
        load_config(_args("--lake", "x"))
    cfg = tmp_path / "bad.toml"
    cfg.write_text('source = "mysql://a@b/"\nlake = "x"\nsurce = 1\n')
    with pytest.raises(ConfigError, match="unknown settings"):
        load_config(_args("--config", str(cfg)))
    cfg.write_text("source = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(_args("--config", str(cfg)))


@pytest.mark.parametrize(
    ("text", "interval"),
    [("1s", "1 seconds"), ("500ms", "500 milliseconds"), ("2m", "2 minutes"), ("0.5s", "0.5 seconds")],
)
def test_trigger_intervals(text, interval):
    assert _interval(text) == interval


def test_bad_trigger_is_a_config_error():
    with pytest.raises(ConfigError, match="--trigger"):
        _interval("soon")


def test_skip_incidents_from_the_command_line_or_the_file(tmp_path):
    assert not load_config(_args("--source", "mysql://u@h/", "--lake", "x")).skip_incidents
    assert load_config(_args("--source", "mysql://u@h/", "--lake", "x", "--skip-incidents")).skip_incidents
    cfg = tmp_path / "p.toml"
    cfg.write_text('source = "mysql://u@h/"\nlake = "x"\nskip_incidents = true\n')
    assert load_config(_args("--config", str(cfg))).skip_incidents


def test_source_option_skip_incidents():
    from sluice.spark.source.datasource import SourceOptions

    assert not SourceOptions.parse({}).capture_config().skip_incidents
    assert SourceOptions.parse({"skipIncidents": "true"}).capture_config().skip_incidents
    assert not SourceOptions.parse({"skipincidents": "False"}).skip_incidents
    with pytest.raises(ConfigError, match="skipIncidents is true or false"):
        SourceOptions.parse({"skipIncidents": "maybe"})


def test_metrics_port_from_the_command_line_or_the_file(tmp_path):
    config = load_config(_args("--source", "mysql://u@h/", "--lake", "x", "--metrics-port", "9108"))
    assert (config.metrics_port, config.metrics_host) == (9108, "0.0.0.0")
    assert load_config(_args("--source", "mysql://u@h/", "--lake", "x")).metrics_port is None
    cfg = tmp_path / "pipeline.toml"
    cfg.write_text('source = "mysql://u@h/"\nlake = "x"\nmetrics_port = 0\nmetrics_host = "127.0.0.1"\n')
    config = load_config(_args("--config", str(cfg)))
    assert (config.metrics_port, config.metrics_host) == (0, "127.0.0.1")
    for bad in ('"9108"', "70000", "-1", "true"):
        cfg.write_text(f'source = "mysql://u@h/"\nlake = "x"\nmetrics_port = {bad}\n')
        with pytest.raises(ConfigError, match="--metrics-port takes a port number"):
            load_config(_args("--config", str(cfg)))


def test_only_the_staging_tasks_keep_typed_images():
    """The tasks that stage for the pipeline build its MERGE sources from the typed images; a plain
    read of the source does not pay for them."""
    from sluice.cdc.capture import CaptureOutput
    from sluice.spark.source.datasource import SourceOptions

    assert SourceOptions.parse({"stageTo": "/lake"}).capture_config().output is CaptureOutput.TYPED_COLUMNS
    assert SourceOptions.parse({}).capture_config().output is CaptureOutput.COLUMNS


def test_maintenance_and_change_feed_settings(tmp_path):
    from sluice.lake.maintenance.steps import MaintenanceConfig

    config = load_config(_args("--source", "mysql://a@b/", "--lake", "x"))
    assert config.maintenance == MaintenanceConfig() and config.change_feed is True
    cfg = tmp_path / "pipeline.toml"
    cfg.write_text('source = "mysql://a@b/"\nlake = "x"\nchange_feed = false\n'
                   '[maintenance]\nmin_small_files = 4\ncheckpoint_interval = 10\nbudget = 2.5\n')
    config = load_config(_args("--config", str(cfg), "--no-maintenance"))
    assert config.change_feed is False
    assert config.maintenance == MaintenanceConfig(enabled=False, min_small_files=4, checkpoint_interval=10,
                                                   budget=2.5)
    assert load_config(_args("--config", str(cfg))).maintenance.enabled is True
    assert load_config(_args("--source", "mysql://a@b/", "--lake", "x", "--no-change-feed")).change_feed is False
    for text, match in (("[maintenance]\nretention_hours = 1\n", "below Delta's default of 168 hours"),
                        ("[maintenance]\nbudjet = 1\n", r"unknown settings \['budjet'\]"),
                        ("[maintenance]\nmin_small_files = 'many'\n", "min_small_files must be a whole number"),
                        ('change_feed = "no"\n', "change_feed is true or false")):
        cfg.write_text(f'source = "mysql://a@b/"\nlake = "x"\n{text}')
        with pytest.raises(ConfigError, match=match):
            load_config(_args("--config", str(cfg)))
