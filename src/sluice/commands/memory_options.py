"""The options that bound the memory a transaction takes in ``sluice tail`` and ``sluice dump``:
``--transaction-memory`` and ``--spill-dir``, declared once with their help text, read into the
capture's ``memory`` and ``spill`` (``sluice.cdc.capture.CaptureConfig``)."""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Callable
from typing import Any

from sluice.cdc.held import TX_MEMORY
from sluice.errors import ConfigError
from sluice.io.spill import SpillBuffer, parse_size

__all__ = ["MEMORY_HELP", "add_memory_options", "memory_settings"]

MEMORY_HELP = f"""\
Memory: a transaction's changes are printed only after its COMMIT, so they wait until then. Up to
--transaction-memory ({TX_MEMORY >> 20}M by default) they wait in memory; a bigger transaction (a
purge or a backfill of millions of rows) goes on into a temporary file in --spill-dir (TMPDIR by
default), which needs room for the JSON lines of the largest transaction. The file has no name
(it is unlinked as it is made): nothing is left behind, whether the transaction commits, rolls
back, or sluice stops (Ctrl-C, kill -9).
"""


def add_memory_options(parser: argparse.ArgumentParser | Any) -> None:
    """Add ``--transaction-memory`` and ``--spill-dir`` to a command's parser."""
    parser.add_argument(
        "--transaction-memory", metavar="SIZE", default=f"{TX_MEMORY >> 20}M",
        help=f"JSON lines of one uncommitted transaction held in memory before they go to a temporary file "
        f"(default {TX_MEMORY >> 20}M; K, M, G units)",
    )
    parser.add_argument(
        "--spill-dir", metavar="DIR",
        help="where a transaction larger than --transaction-memory waits for its COMMIT (default: TMPDIR, else /tmp)",
    )


def memory_settings(args: argparse.Namespace) -> tuple[int, Callable[[int], SpillBuffer]]:
    """The capture's ``memory`` (bytes) and ``spill`` (``SpillBuffer``s in ``--spill-dir``) from the options."""
    memory = parse_size(args.transaction_memory, "--transaction-memory")
    spill = args.spill_dir
    if spill is not None and not os.path.isdir(spill):
        raise ConfigError(f"--spill-dir {spill}: no such folder. Give a folder that exists, with room for the "
                          "largest transaction's JSON lines")
    return memory, functools.partial(SpillBuffer, directory=spill)
