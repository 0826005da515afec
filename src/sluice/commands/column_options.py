"""``--exclude-columns``, ``--hash-columns`` and the hash key, for every command that writes or prints
rows (``tail``, ``dump``, ``run``, ``snapshot``, ``verify``), declared once with their help text.

The regexes may also be given in a config file's ``[columns]`` table (``exclude``, ``hash``); the
key only there: ``hash_key = "..."`` or ``hash_key_env = "NAME"``, an environment variable holding
it. A key is never an option: a command line shows in ``ps`` and in shell histories. Nothing prints
the key, and an error about it names the setting, never the value (``sluice.cdc.column_rules``).

A command that reads what a lake's ``sluice run`` wrote (``verify``, ``snapshot``) takes the rules the
lake records (``capture.json``) when it is given none, and refuses others (``rules_for_lake``).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from sluice.commands.config_file import read_config
from sluice.errors import ConfigError

__all__ = ["COLUMNS_HELP", "add_column_options", "column_settings", "rules_for_lake", "rules_from_args"]

COLUMNS_HELP = """\
--exclude-columns and --hash-columns match 'db.table.column' in full. An excluded column is in no
output; a hashed one holds HMAC-SHA-256 hex of its value (as the JSON lines print it) under the key
of the config file's [columns] table: hash_key = "...", or hash_key_env = "NAME" for an environment
variable that holds it. NULL stays NULL. A column added later by DDL follows the same rule.
"""

_KNOWN = {"exclude", "hash", "hash_key", "hash_key_env"}


def add_column_options(parser: argparse.ArgumentParser | Any, *, config: bool = True) -> None:
    """Add ``--exclude-columns``, ``--hash-columns`` (and ``--config``, unless the command has one)."""
    parser.add_argument("--exclude-columns", metavar="REGEX",
                        help="leave columns whose 'db.table.column' matches this regex in full out of every output")
    parser.add_argument("--hash-columns", metavar="REGEX",
                        help="replace the values of columns whose 'db.table.column' matches this regex in full "
                        "by their HMAC-SHA-256 (hex) under the config file's key (see below)")
    if config:
        parser.add_argument("--config", metavar="FILE",
                            help="a TOML file whose [columns] table holds exclude, hash, hash_key or hash_key_env")


def column_settings(table: Any, where: str, exclude: str | None, hashed: str | None,
                    ) -> tuple[str | None, str | None, bytes | None]:
    """``(exclude, hash, key)`` from a ``[columns]`` table (None: none) and the options, which win."""
    table = table or {}
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table: exclude, hash, hash_key or hash_key_env")
    unknown = set(table) - _KNOWN
    if unknown:
        raise ConfigError(f"{where}: unknown settings {sorted(unknown)}; known: {sorted(_KNOWN)}")
    for name in table:
        if not isinstance(table[name], str):
            raise ConfigError(f"{where}: {name} must be a string")
    if "hash_key" in table and "hash_key_env" in table:
        raise ConfigError(f"{where}: give hash_key or hash_key_env, not both")
    key: bytes | None = None
    if "hash_key" in table:
        key = table["hash_key"].encode("utf-8")
    elif "hash_key_env" in table:
        name = table["hash_key_env"]
        value = os.environ.get(name)
        if not value:
            raise ConfigError(f"{where}: hash_key_env names the environment variable {name}, which is not set "
                              "or empty: export the key in it")
        key = value.encode("utf-8")
    if key is not None and len(key) < 16:
        raise ConfigError(f"{where}: the hash key is shorter than 16 bytes; use a long random one "
                          "(e.g. from `openssl rand -hex 32`)")
    return exclude or table.get("exclude"), hashed or table.get("hash"), key


def rules_from_args(args: argparse.Namespace) -> Any:
    """The ``ColumnRules`` of a command's parsed arguments (None: no column is excluded or hashed)."""
    from sluice.cdc.column_rules import column_rules

    return column_rules(*_settings(args))


def rules_for_lake(args: argparse.Namespace, store: Any) -> Any:
    """The ``ColumnRules`` of a command that reads the lake ``store`` (a ``sluice.lake.layout.Lake``):
    the lake's recorded rules when the arguments give none, with the key of the config file; rules
    other than the lake's are a ``ConfigError``. A lake that records none takes the arguments'."""
    from sluice.cdc.column_rules import column_rules, rules_difference

    exclude, hashed, key = _settings(args)
    doc = store.get_json(store.CAPTURE)
    recorded = doc.get("columns") if isinstance(doc, dict) else None
    if not isinstance(recorded, dict):
        return column_rules(exclude, hashed, key)
    if exclude is None and hashed is None:
        exclude, hashed = recorded.get("exclude"), recorded.get("hash")
        if hashed is not None and key is None:
            raise ConfigError(
                f"the lake {store.uri} hashes the columns its sluice run's --hash-columns {hashed!r} matches: give "
                "the same key in the config file's [columns] table (hash_key, or hash_key_env naming an "
                "environment variable that holds it) with --config")
    rules = column_rules(exclude, hashed, key)
    differ = rules_difference(recorded, rules)
    if differ:
        raise ConfigError(f"the lake {store.uri} is written with other column rules: {differ}. Give the options "
                          "and key its sluice run was given, or none of the options to take the lake's")
    return rules


def _settings(args: argparse.Namespace) -> tuple[str | None, str | None, bytes | None]:
    path = getattr(args, "config", None)
    table = read_config(path).get("columns")
    return column_settings(table, f"{path}: [columns]" if path else "[columns]", args.exclude_columns,
                           args.hash_columns)
