"""Columns kept out or hashed: the regex on ``db.table.column``, the HMAC and its text, the records
masked, and ``sluice dump`` of the golden binlogs (JSON lines and Debezium events, on the compiled
core and its twin) with the key in none of the output, the errors or ``--help``."""

from __future__ import annotations

import hashlib
import hmac
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sluice.cdc.column_rules import ColumnRules, column_rules, hash_value
from sluice.cdc.records import RowChange
from sluice.cli import main as sluice_main
from sluice.commands.column_options import column_settings
from sluice.errors import ConfigError, SchemaError
from tests.conftest import core_or_twin

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"
KEY = "k3y-that-is-never-printed-0123456789"


@pytest.fixture(params=[True, False], ids=["compiled", "python"])
def row_core(request: pytest.FixtureRequest) -> Any:
    yield from core_or_twin(request.param)


def test_the_regexes_match_db_table_column_in_full_and_exclusion_wins() -> None:
    rules = column_rules(r"shop\.users\.(ssn|note)", r"shop\..*\.(email|ssn)", KEY.encode())
    assert rules is not None
    assert rules.rule("shop", "users", "ssn") == "exclude"  # both match: kept out
    assert rules.rule("shop", "users", "email") == "hash"
    assert rules.rule("shop", "orders", "email") == "hash"
    assert rules.rule("shop", "users", "email2") is None  # a match in part is no match
    assert rules.rule("shopx", "users", "note") is None
    assert rules.rule("other", "users", "email") is None
    assert rules.of("shop", "users", ("id", "email", "ssn", "note"), "exclude") == {"ssn", "note"}
    assert column_rules(None, None, None) is None
    with pytest.raises(ConfigError, match="--hash-columns '\\(' is not a regular expression"):
        column_rules(None, "(", KEY.encode())
    with pytest.raises(ConfigError, match="--hash-columns needs a key"):
        column_rules(None, ".*", None)


def test_hmac_sha256_vectors_and_the_text_hashed() -> None:
    # RFC 4231, test case 2
    assert hash_value(b"Jefe", "what do ya want for nothing?") == (
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    key = KEY.encode()

    def mac(text: str) -> str:
        return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()

    assert hash_value(key, None) is None  # NULL stays NULL
    assert hash_value(key, 7) == mac("7") == hash_value(key, "7")  # as the JSON lines print it: joins work
    assert hash_value(key, 2**64 - 1) == mac("18446744073709551615")
    assert hash_value(key, "alice@example.com") == mac("alice@example.com")
    assert hash_value(key, "é") == mac("é")
    assert hash_value(key, Decimal("10.50")) == mac("10.50")
    assert hash_value(key, {"a": [1, "x"]}) == mac('{"a":[1,"x"]}')  # a JSON document: its text
    assert hash_value(key, b"\x00\xff") == mac("AP8=")  # a binary string: its base64, as printed
    assert hash_value(b"another key of 16+ bytes", 7) != hash_value(key, 7)
    assert len(hash_value(key, 7) or "") == 64


def test_a_record_is_masked_and_a_key_column_may_be_hashed_not_excluded() -> None:
    rules = column_rules(r"s\.t\.secret", r"s\.t\.(id|email)", KEY.encode())
    assert rules is not None
    change = RowChange("update", "s", "t", {"id": 1, "email": "a@b", "secret": "x", "n": None},
                       {"id": 1, "email": None, "secret": "y", "n": 2}, ("id",), "binlog.000001", 4, 0, None, 0)
    masked = rules.mask(change)
    assert masked.before == {"id": hash_value(KEY.encode(), 1), "email": hash_value(KEY.encode(), "a@b"), "n": None}
    assert masked.after == {"id": hash_value(KEY.encode(), 1), "email": None, "n": 2}
    assert masked.pk == ("id",)
    keyless = column_rules(r"s\.t\.id", None, None)
    assert keyless is not None
    with pytest.raises(ConfigError, match=r"primary key column id of s\.t"):
        keyless.mask(change)
    diffs = RowChange("update", "s", "t", None, {"id": 1}, ("id",), "binlog.000001", 9, 0, None, 0,
                      {"email": [object()]})
    with pytest.raises(SchemaError, match="partial JSON update"):
        rules.mask(diffs)


def test_the_key_comes_from_the_config_or_the_variable_it_names_and_is_never_shown(monkeypatch) -> None:
    assert column_settings({"hash_key": KEY}, "[columns]", None, ".*") == (None, ".*", KEY.encode())
    monkeypatch.setenv("SLUICE_TEST_HASH_KEY", KEY)
    assert column_settings({"hash_key_env": "SLUICE_TEST_HASH_KEY", "exclude": "a"}, "[columns]", "b", None) == (
        "b", None, KEY.encode())  # the option wins over the file
    monkeypatch.delenv("SLUICE_TEST_HASH_KEY")
    with pytest.raises(ConfigError, match="SLUICE_TEST_HASH_KEY, which is not set") as missing:
        column_settings({"hash_key_env": "SLUICE_TEST_HASH_KEY"}, "[columns]", None, ".*")
    with pytest.raises(ConfigError, match="shorter than 16 bytes") as short:
        column_settings({"hash_key": "short"}, "[columns]", None, ".*")
    assert "short" not in str(short.value).replace("shorter", "")
    with pytest.raises(ConfigError, match="unknown settings"):
        column_settings({"key": KEY}, "[columns]", None, None)
    rules = column_rules(None, ".*", KEY.encode())
    assert KEY not in repr(rules) and KEY not in str(missing.value)
    assert isinstance(rules, ColumnRules)


def _dump(capsysbinary: Any, *argv: str) -> list[dict[str, Any]]:
    capsysbinary.readouterr()
    code = sluice_main(["dump", *argv])
    out, err = capsysbinary.readouterr()
    assert code == 0, err
    assert KEY.encode() not in out + err
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("name", ["mysql-multitable", "mariadb-multitable", "mysql-matrix", "mariadb-compressed"])
def test_dump_leaves_out_and_hashes_in_json_lines_and_debezium(capsysbinary, tmp_path, row_core, name) -> None:
    config = tmp_path / "sluice.toml"
    config.write_text(f'[columns]\nhash_key = "{KEY}"\n')
    binlog = str(DATA / f"{name}.binlog")
    plain = _dump(capsysbinary, binlog)
    exclude, hashed = r"[^.]+\.[^.]+\.(note|c_.*char.*)", r"[^.]+\.[^.]+\.(id|name|amount|c_int.*)"
    masked = _dump(capsysbinary, binlog, "--config", str(config), "--exclude-columns", exclude,
                   "--hash-columns", hashed)
    rules = column_rules(exclude, hashed, KEY.encode())
    assert rules is not None and len(plain) == len(masked) > 0
    touched = 0
    for want, got in zip(plain, masked, strict=True):
        assert {k: v for k, v in got.items() if k not in ("before", "after")} == \
            {k: v for k, v in want.items() if k not in ("before", "after")}
        for image in ("before", "after"):
            if want[image] is None:
                assert got[image] is None
                continue
            expected = {}
            for column, value in want[image].items():
                rule = rules.rule(want["db"], want["table"], column)
                if rule is None:
                    expected[column] = value
                elif rule == "hash":
                    expected[column] = None if value is None else hash_value(KEY.encode(), value)
            touched += expected != want[image]
            assert got[image] == expected
    assert touched, "no column of the file matched the rules"
    events = _dump(capsysbinary, binlog, "--config", str(config), "--exclude-columns", exclude,
                   "--hash-columns", hashed, "--format", "debezium")
    assert len(events) == len(masked)
    for event, line in zip(events, masked, strict=True):
        for image in ("before", "after"):
            if line[image] is not None:
                assert set(event[image]) == set(line[image])  # nothing excluded comes back
                for column, value in line[image].items():
                    if rules.rule(line["db"], line["table"], column) == "hash":
                        assert event[image][column] == value  # the hash as it is, whatever the column's type


def test_dump_refuses_what_would_print_the_columns_anyway(capsys, tmp_path) -> None:
    binlog = str(DATA / "mysql-multitable.binlog")
    for extra in (["--events"], ["--positional"], ["--format", "parquet", "--out", str(tmp_path / "o")]):
        code = sluice_main(["dump", binlog, "--exclude-columns", ".*", *extra])
        assert code != 0
        assert "--exclude-columns / --hash-columns" in capsys.readouterr().err
    code = sluice_main(["dump", binlog, "--hash-columns", ".*"])
    err = capsys.readouterr().err
    assert code != 0 and "needs a key" in err and "Traceback" not in err
