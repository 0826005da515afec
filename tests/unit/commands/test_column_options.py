"""The column rules a lake records (``capture.json``) and the commands that read a lake: ``verify``
and ``snapshot`` take the lake's rules when given none and refuse others, a ``sluice run`` with
other rules than a written lake's is refused before anything is written, and the record never holds
the key."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from sluice.cdc.column_rules import column_rules, rules_difference, rules_record
from sluice.commands.column_options import rules_for_lake
from sluice.errors import ConfigError
from sluice.lake.layout import Lake, open_lake
from sluice.spark.pipeline.lake_state import LakeState

pytestmark = pytest.mark.unit

KEY = "a-column-hash-key-never-shown-42"


def _args(tmp_path: Path, exclude: str | None = None, hashed: str | None = None, key: str | None = KEY):
    config = tmp_path / "sluice.toml"
    config.write_text(f'[columns]\nhash_key = "{key}"\n' if key else "")
    return argparse.Namespace(config=str(config), exclude_columns=exclude, hash_columns=hashed)


def _recorded_lake(tmp_path: Path, rules) -> Lake:
    store = open_lake(tmp_path / "lake")
    store.put_json(Lake.CAPTURE, {"tables": None, "exclude_tables": None, "columns": rules_record(rules)})
    return store


def test_the_record_holds_the_regexes_and_a_check_of_the_key_never_the_key() -> None:
    rules = column_rules(r"s\.t\.ssn", r"s\.t\.email", KEY.encode())
    doc = rules_record(rules)
    assert doc["exclude"] == r"s\.t\.ssn" and doc["hash"] == r"s\.t\.email"
    assert len(doc["key_check"]) == 16 and KEY not in json.dumps(doc)
    assert rules_record(None) == {"exclude": None, "hash": None, "key_check": None}
    assert rules_record(column_rules(r"s\.t\.ssn", None, None))["key_check"] is None
    assert rules_difference(doc, rules) is None
    other_key = column_rules(r"s\.t\.ssn", r"s\.t\.email", b"another-key-of-16-bytes")
    assert rules_difference(doc, other_key) == "another hash key than the lake's"
    said = rules_difference(doc, column_rules(None, r"s\.t\.email", KEY.encode()))
    assert said == r"--exclude-columns none (the lake's: 's\\.t\\.ssn')"
    assert "--hash-columns 's\\\\.t\\\\.email' (the lake's: none)" in rules_difference(rules_record(None), rules)


def test_verify_and_snapshot_take_the_lakes_rules_and_refuse_others(tmp_path) -> None:
    written = column_rules(r"s\.t\.ssn", r"s\.t\.email", KEY.encode())
    store = _recorded_lake(tmp_path, written)
    taken = rules_for_lake(_args(tmp_path), store)
    assert (taken.exclude.pattern, taken.hashed.pattern, taken.key) == (r"s\.t\.ssn", r"s\.t\.email", KEY.encode())
    same = rules_for_lake(_args(tmp_path, r"s\.t\.ssn", r"s\.t\.email"), store)
    assert same == taken
    with pytest.raises(ConfigError, match=r"other column rules: --hash-columns 's\\\\.t\\\\.(email|x)'"):
        rules_for_lake(_args(tmp_path, r"s\.t\.ssn", r"s\.t\.x"), store)
    with pytest.raises(ConfigError, match="another hash key") as wrong:
        rules_for_lake(_args(tmp_path, key="another-key-of-16-bytes"), store)
    assert "another-key" not in str(wrong.value)
    with pytest.raises(ConfigError, match=r"give the same key in the config file's \[columns\]"):
        rules_for_lake(_args(tmp_path, key=None), store)
    plain = _recorded_lake(tmp_path / "plain", None)
    assert rules_for_lake(_args(tmp_path), plain) is None
    with pytest.raises(ConfigError, match=r"--exclude-columns 's.t.ssn' \(the lake's: none\)"):
        rules_for_lake(_args(tmp_path, "s.t.ssn"), plain)
    old = open_lake(tmp_path / "old")  # a lake that records no rules: the options as given
    old.put_json(Lake.CAPTURE, {"tables": None, "exclude_tables": None})
    assert rules_for_lake(_args(tmp_path, "s.t.ssn"), old).exclude.pattern == "s.t.ssn"


def test_a_run_with_other_rules_is_refused_once_the_lake_holds_a_table(tmp_path) -> None:
    written = column_rules(None, r"s\.t\.email", KEY.encode())
    lake = tmp_path / "lake"
    store = open_lake(lake)
    LakeState(store, tmp_path / "cp", "mysql://u@h/", columns=written)
    assert json.loads((lake / "_sluice" / "capture.json").read_text())["columns"] == rules_record(written)
    other = column_rules(None, r"s\.t\.(email|name)", KEY.encode())
    LakeState(store, tmp_path / "cp", "mysql://u@h/", columns=other)  # nothing written yet: the new rules
    assert json.loads((lake / "_sluice" / "capture.json").read_text())["columns"] == rules_record(other)
    (lake / "s" / "t" / "_delta_log").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"other column rules than this run's: --hash-columns 's\\\\.t\\\\.email'"):
        LakeState(store, tmp_path / "cp", "mysql://u@h/", columns=written)
    LakeState(store, tmp_path / "cp", "mysql://u@h/", columns=other)
