"""The options that say what a command reads: ``--tables``, ``--exclude-tables``, ``--ops``, ``--ddl``
and ``--skip-incidents``, each declared once with its help text.

``add_filter_options`` adds those a command takes to its parser; ``sluice.cdc.filters`` reads their
values. ``sluice run`` declares its settings from the same ``FilterOption``s
(``sluice.commands.run_settings``), so every command's ``--help`` says the same of each.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

__all__ = ["DDL", "EXCLUDE_TABLES", "FILTER_OPTIONS", "OPS", "SKIP_INCIDENTS", "TABLES", "FilterOption",
           "add_filter_options"]


@dataclass(frozen=True, slots=True)
class FilterOption:
    """One option: its flag, its help text and, for an option that takes a value, the value's name."""

    flag: str
    help: str
    metavar: str | None = None  # None: a switch, true when given

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments that holds the value (``exclude_tables``)."""
        return self.flag.removeprefix("--").replace("-", "_")

    def add(self, parser: argparse.ArgumentParser | Any, *, default: Any = None) -> None:
        """Add the option to ``parser``; a switch not given is ``default`` (None for a value)."""
        if self.metavar is None:
            parser.add_argument(self.flag, action="store_true", default=default, help=self.help)
        else:
            parser.add_argument(self.flag, metavar=self.metavar, help=self.help)


TABLES = FilterOption("--tables", "only tables whose 'db.table' matches this regex in full; the others are not read",
                      "REGEX")
EXCLUDE_TABLES = FilterOption("--exclude-tables", "skip tables whose 'db.table' matches this regex in full", "REGEX")
OPS = FilterOption("--ops", "only these operations, comma-separated: insert,update,delete, and history,"
                   "delete_history of system-versioned tables (default all)", "LIST")
DDL = FilterOption("--ddl", 'also print schema changes as {"op": "ddl", ...}')
SKIP_INCIDENTS = FilterOption(
    "--skip-incidents",
    "go on past INCIDENT events (the server failed to log some changes there) with a warning instead of stopping",
)
FILTER_OPTIONS = (TABLES, EXCLUDE_TABLES, OPS, DDL, SKIP_INCIDENTS)


def add_filter_options(parser: argparse.ArgumentParser | Any, *options: FilterOption) -> None:
    """Add ``options`` (all of ``FILTER_OPTIONS`` when none are named) to a command's parser."""
    for option in options or FILTER_OPTIONS:
        option.add(parser, default=False)
