"""Command-line parsing that needs no server: table filters, help texts (start positions: test_start_positions)."""

import subprocess
import sys

import pytest

from sluice.cdc.filters import table_filter
from sluice.cli import build_parser
from sluice.errors import ConfigError

pytestmark = pytest.mark.unit


def test_table_filter_full_match_and_exclude():
    keep = table_filter(r"shop\..*", r"shop\.audit_.*")
    assert keep("shop", "orders") and not keep("shop", "audit_log") and not keep("shopx", "orders")
    assert table_filter(None, None) is None
    with pytest.raises(ConfigError, match="regex"):
        table_filter("(", None)


@pytest.mark.parametrize("command", ["tail", "dump", "demo", "sandbox"])
def test_every_command_has_help(command):
    out = subprocess.run([sys.executable, "-m", "sluice.cli", command, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "usage:" in out.stdout


def test_errors_are_one_line_and_exit_1(tmp_path):
    bogus = tmp_path / "not-a-binlog"
    bogus.write_bytes(b"hello world, not a binlog")
    out = subprocess.run([sys.executable, "-m", "sluice.cli", "dump", str(bogus)], capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.startswith("sluice: error:") and "Traceback" not in out.stderr
    assert str(bogus.name) in out.stderr


def test_parser_builds():
    assert build_parser().prog == "sluice"
