"""``--route`` of ``sluice run`` (the option given several times, ``route`` in the config file),
and of ``sluice snapshot`` and ``sluice verify``, which follow the routes the lake records and
refuse others (no server)."""

from __future__ import annotations

import argparse

import pytest

from sluice.cli import build_parser
from sluice.commands.route_options import routes_of_lake
from sluice.commands.run import load_config
from sluice.errors import ConfigError

pytestmark = pytest.mark.unit

SHARDS = r"shop_[0-9]+\.orders=shop.orders"


def test_run_snapshot_and_verify_take_the_same_routes(tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text('source = "mysql://repl@db/"\nlake = "/lake"\nroute = [\'a_[0-9]\\.t=a.t\']\n')
    from_file = load_config(build_parser().parse_args(["run", "--config", str(config)]))
    assert from_file.routes.texts == [r"a_[0-9]\.t=a.t"]
    given = load_config(build_parser().parse_args(["run", "--config", str(config), "--route", SHARDS,
                                                   "--route", r"eu_(\d+)\.(\w+)=eu.\2"]))
    assert given.routes.texts == [SHARDS, r"eu_(\d+)\.(\w+)=eu.\2"]  # the command line wins, in its order
    assert load_config(build_parser().parse_args(["run", "--source", "mysql://r@db/", "--lake", "/l"])).routes is None
    config.write_text('source = "mysql://repl@db/"\nlake = "/lake"\nroute = "a=b.c"\n')
    with pytest.raises(ConfigError, match="list of 'REGEX=TARGET'"):
        load_config(build_parser().parse_args(["run", "--config", str(config)]))
    recorded = {"tables": None, "exclude_tables": None, "routes": [SHARDS]}
    assert routes_of_lake(None, recorded).texts == [SHARDS]
    assert routes_of_lake([SHARDS], recorded).texts == [SHARDS]
    with pytest.raises(ConfigError, match="is not what the lake's sluice run routes"):
        routes_of_lake([r"x\.y=a.b"], recorded)
    with pytest.raises(ConfigError, match="no route"):
        routes_of_lake([SHARDS], {"tables": None, "exclude_tables": None})
    assert routes_of_lake(None, None) is None
    args: argparse.Namespace = build_parser().parse_args(["verify", "--source", "mysql://r@db/", "--lake", "/l",
                                                          "--route", SHARDS])
    assert args.routes == [SHARDS]
    snap = build_parser().parse_args(["snapshot", "--source", "mysql://r@db/", "--lake", "/l", "--tables", ".*"])
    assert snap.routes is None
