"""``--format debezium`` of ``sluice tail`` and ``sluice dump``: the option that names the events'
source (``--topic-prefix``), and the committed transactions' JSON lines turned into Debezium's
change events (``sluice.cdc.debezium``) as they are written."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sluice.cdc.capture import ChangeCapture, CommittedTransaction
    from sluice.cdc.debezium import DebeziumLines

__all__ = ["DEBEZIUM_HELP", "add_debezium_options", "debezium_chunks"]

DEBEZIUM_HELP = """\
--format debezium prints each row change as the payload of a Debezium change event (before, after,
source, op c/u/d, ts_ms), with the values as Debezium's MySQL connector encodes them by default
(docs/debezium.md): consumers written for Debezium read the lines unchanged. Schema changes are not
change events: --ddl adds nothing to it.
"""


def add_debezium_options(parser: argparse.ArgumentParser | Any) -> None:
    """Add ``--topic-prefix`` (the events' ``source.name``) to a command's parser."""
    parser.add_argument(
        "--topic-prefix", default="sluice", metavar="NAME",
        help="with --format debezium: the logical server name every event's source.name carries, as "
        "Debezium's topic.prefix (default: sluice)",
    )


def debezium_chunks(capture: ChangeCapture, name: str) -> Any:
    """A function of a committed transaction and its JSON-line chunks that yields the chunks as
    Debezium event lines; the layouts and the flavor are the capture's as the lines were made."""
    from sluice.cdc.debezium import DebeziumLines, transaction_source

    converter: DebeziumLines | None = None

    def convert(committed: CommittedTransaction, lines: Iterable[bytes]) -> Iterator[bytes]:
        nonlocal converter
        if converter is None:
            connector = "mariadb" if capture.tracker.flavor == "mariadb" else "mysql"
            converter = DebeziumLines(capture.layouts, name=name, connector=connector, columns=capture.config.columns)
        server_id, thread = transaction_source(committed.transaction.events)
        for chunk in lines:
            out = converter.convert_chunk(chunk, server_id, thread)
            if out:
                yield out

    return convert
