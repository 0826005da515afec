"""Columns kept out or hashed in the lake (no server): the masked table a mirror is typed from, the
mirror steps a DDL gets under the rules, the ``binlog`` source's options and the key's way to its
tasks, and ``sluice run``'s settings, the key in none of their text."""

from __future__ import annotations

import argparse
import os
import stat

import pytest

from sluice.cdc.column_rules import column_rules
from sluice.cdc.schema import Catalog, apply_ddl
from sluice.cli import build_parser
from sluice.commands.run import load_config
from sluice.errors import ConfigError
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.ddl.plan import plan_ddl
from sluice.spark.source.options import SourceOptions, column_options

pytestmark = pytest.mark.unit

KEY = "unit-key-that-stays-hidden-4242"


def _catalog(*statements: str) -> Catalog:
    cat = Catalog(databases={"shop": ("utf8mb4", None)}, flavor="mysql")
    for sql in statements:
        cat, outcome = apply_ddl(cat, sql, "shop")
        assert outcome.understood, outcome.message
    return cat


BASE = _catalog("CREATE TABLE users (id INT PRIMARY KEY, email VARCHAR(80), ssn CHAR(11), age INT)")
RULES = column_rules(r"shop\.users\.(ssn|phone)", r"shop\.users\.(email|email2|age2)", KEY.encode())


def _plan(sql: str) -> list[tuple[str, str]]:
    return [(s.kind, s.table) for s in plan_ddl(BASE, sql, "shop", lambda _d, _t: True, "mysql", RULES)]


def test_the_mirror_is_typed_from_the_masked_table() -> None:
    assert RULES is not None
    users = BASE.get("shop", "users")
    assert users is not None
    columns = mirror_columns_for_schema(RULES.mask_schema(users), "mysql")
    assert [(c.name, str(c.arrow_type)) for c in columns] == [("id", "int32"), ("email", "string"), ("age", "int32")]
    hashed_key = column_rules(None, r"shop\.users\.id", KEY.encode())  # the mirror is then keyed on the hash
    assert hashed_key is not None
    assert hashed_key.mask_schema(users).columns[0].data_type == "varchar"
    assert hashed_key.mask_schema(users).primary_key == ("id",)
    excluded_key = column_rules(r"shop\.users\.id", None, None)
    assert excluded_key is not None
    with pytest.raises(ConfigError, match=r"primary key column id of shop\.users"):
        excluded_key.mask_schema(users)


def test_ddl_under_the_rules() -> None:
    assert _plan("ALTER TABLE users ADD COLUMN phone VARCHAR(20)") == []  # kept out: nothing in the mirror moves
    assert _plan("ALTER TABLE users ADD COLUMN email2 VARCHAR(80)") == [("reread", "users")]  # hashed on a read
    assert _plan("ALTER TABLE users MODIFY email VARCHAR(120)") == []  # still hashed alike: a string as before
    assert _plan("ALTER TABLE users MODIFY age BIGINT") == [("rewrite", "users")]  # not masked: as ever
    assert _plan("ALTER TABLE users RENAME COLUMN ssn TO ssn_old") == [("reread", "users")]  # out of the rule
    steps = plan_ddl(BASE, "ALTER TABLE users ADD COLUMN note VARCHAR(20)", "shop", lambda _d, _t: True,
                     "mysql", RULES)
    assert [c.name for c in steps[0].columns] == ["id", "email", "age", "note"]
    created = plan_ddl(BASE, "CREATE TABLE shop.users2 (id INT PRIMARY KEY, ssn CHAR(11))", "shop",
                       lambda _d, _t: True, "mysql", column_rules(r"shop\..*\.ssn", None, None))
    assert [c.name for c in created[-1].columns] == ["id"]


def test_the_source_takes_the_key_from_a_variable_or_a_file_never_an_option(monkeypatch, tmp_path) -> None:
    with pytest.raises(ConfigError, match="hashKeyEnv"):
        SourceOptions.parse({"hashColumns": ".*"})
    monkeypatch.delenv("SLUICE_UNIT_KEY", raising=False)
    with pytest.raises(ConfigError, match="SLUICE_UNIT_KEY, which is not set"):
        SourceOptions.parse({"hashColumns": ".*", "hashKeyEnv": "SLUICE_UNIT_KEY"})
    monkeypatch.setenv("SLUICE_UNIT_KEY", KEY)
    rules = SourceOptions.parse({"hashColumns": ".*", "hashKeyEnv": "SLUICE_UNIT_KEY"}).capture_config().columns
    assert rules is not None and rules.key == KEY.encode()
    options, path = column_options(RULES)
    try:
        assert path is not None and KEY not in repr(options)
        assert options == {"excludeColumns": RULES.exclude.pattern, "hashColumns": RULES.hashed.pattern,
                           "hashKeyFile": path}
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        from_file = SourceOptions.parse(options).column_rules()
        assert from_file is not None and from_file.key == KEY.encode()
    finally:
        os.unlink(path)
    assert column_options(None) == ({}, None)
    with pytest.raises(ConfigError, match="cannot read"):
        SourceOptions.parse({"hashColumns": ".*", "hashKeyFile": str(tmp_path / "gone")})


def test_run_settings_read_the_columns_table_and_show_no_key(tmp_path, capsys) -> None:
    config = tmp_path / "run.toml"
    config.write_text(f'source = "mysql://repl@db/"\nlake = "/lake"\n[columns]\nhash_key = "{KEY}"\n'
                      'exclude = \'.*\\.ssn\'\n')
    args: argparse.Namespace = build_parser().parse_args(["run", "--config", str(config), "--hash-columns",
                                                          r".*\.email"])
    pipeline = load_config(args)
    assert pipeline.columns.rule("a", "b", "email") == "hash" and pipeline.columns.rule("a", "b", "ssn") == "exclude"
    assert KEY not in repr(pipeline)
    only_exclude = load_config(build_parser().parse_args(["run", "--source", "mysql://r@db/", "--lake", "/l",
                                                          "--exclude-columns", r".*\.ssn"]))
    assert only_exclude.columns.hashed is None
    with pytest.raises(ConfigError, match="needs a key"):
        load_config(build_parser().parse_args(["run", "--source", "mysql://r@db/", "--lake", "/l",
                                               "--hash-columns", r".*\.email"]))
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    assert KEY not in capsys.readouterr().out
