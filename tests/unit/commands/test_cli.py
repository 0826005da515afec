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


@pytest.mark.parametrize("argv, verbose", [
    (["run", "--source", "mysql://h", "--lake", "l"], 0),
    (["-v", "run", "--source", "mysql://h", "--lake", "l"], 1),
    (["run", "--source", "mysql://h", "--lake", "l", "-vv"], 2),
    (["tail", "--verbose", "mysql://h"], 1),
    (["-vv", "dump", "f"], 2),
    (["dump", "--verbose", "f"], 1),
])
def test_verbose_is_taken_before_and_after_the_command(argv, verbose):
    assert build_parser().parse_args(argv).verbose == verbose


def test_dumps_own_v_stays_values():
    args = build_parser().parse_args(["dump", "-v", "--events", "f"])
    assert args.values is True and args.verbose == 0


# The filter options each command takes (sluice.commands.filter_options): the same words everywhere.
FILTERS_OF = {
    "tail": ("--tables", "--exclude-tables", "--ops", "--ddl", "--skip-incidents"),
    "dump": ("--tables", "--exclude-tables", "--ops", "--ddl", "--skip-incidents"),
    "run": ("--tables", "--exclude-tables", "--skip-incidents"),
    "verify": ("--tables", "--exclude-tables"),
}


def _help(command: str, capsys) -> str:
    with pytest.raises(SystemExit):
        build_parser(command).parse_args([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def _option_help(text: str, flag: str) -> str:
    """The help of ``flag`` in a normalised ``--help`` text: from after the flag (and its value's
    name) to the next option of the listing."""
    import re

    m = re.search(rf"(?:^| ){re.escape(flag)}(?: [A-Z_|.]+)? (.*?)(?= --?[a-z][\w-]*,?(?: [A-Z_|.]+| \{{)? |$)",
                  text[text.index("options:"):])
    assert m, f"{flag} is not in the listing"
    return m.group(1)


def test_every_command_lists_its_filter_options_with_the_same_text(capsys):
    from sluice.commands.filter_options import FILTER_OPTIONS

    declared = {o.flag: " ".join(o.help.split()) for o in FILTER_OPTIONS}
    said: dict[str, dict[str, str]] = {}
    for command, flags in FILTERS_OF.items():
        text = _help(command, capsys)
        for flag in flags:
            said.setdefault(flag, {})[command] = _option_help(text, flag)
    assert set(said) == set(declared)
    for flag, by_command in said.items():
        assert set(by_command.values()) == {declared[flag]}, (flag, by_command)
