"""What a capture is asked for (``CaptureConfig``) and what it makes of its transactions
(``CaptureOutput``), and what an INCIDENT event does to it (``on_incident``). ``sluice.cdc.capture``
re-exports them with ``ChangeCapture``, which reads them.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sluice.binlog.constants import ChecksumAlgorithm
from sluice.binlog.events import IncidentEvent
from sluice.cdc.held import TX_MEMORY
from sluice.errors import DataLossError

__all__ = ["COLUMN_OUTPUTS", "COUNTING_OUTPUTS", "PART_BYTES", "CaptureConfig", "CaptureOutput", "on_incident"]

log = logging.getLogger(__name__)

#: ``Incident`` codes of the server (sql/rpl_constants.h): 0 is none, 1 the only one logged.
INCIDENT_NAMES = {1: "LOST_EVENTS"}


class CaptureOutput(enum.Enum):
    """What a capture makes of a committed transaction's row changes (``CommittedTransaction``)."""

    #: ``records``: ``RowChange``s, and ``DdlRecord``s when ``CaptureConfig.ddl`` asks for them.
    RECORDS = "records"
    #: ``counted`` only: the compiled core counts the rows events it takes by walking their row
    #: images' lengths, decoding no value (the Python path decodes them all the same).
    COUNTS = "counts"
    #: ``counted`` only, every value of the counted rows decoded (``sluice dump --format none``).
    DECODED_COUNTS = "decoded_counts"
    #: ``lines``: the records' JSON lines.
    LINES = "lines"
    #: ``columns``: change-log rows (the compiled core's ``ChangeRows``) where the core is in use;
    #: ``records`` without it.
    COLUMNS = "columns"
    #: ``columns``, with each table's images kept as typed columns too (``ChangeRows.typed``): the
    #: pipeline's staging tasks build their MERGE sources from them; nothing else reads them.
    TYPED_COLUMNS = "typed_columns"


COUNTING_OUTPUTS = frozenset({CaptureOutput.COUNTS, CaptureOutput.DECODED_COUNTS})
COLUMN_OUTPUTS = frozenset({CaptureOutput.COLUMNS, CaptureOutput.TYPED_COLUMNS})
#: The default part of ``hold_columns``: bytes of binlog of an open transaction handed out at once.
PART_BYTES = 8 << 20


@dataclass(frozen=True, slots=True)
class CaptureConfig:
    """What to capture: ``table_filter(db, table)`` (rows of other tables are never decoded),
    ``ops`` (a subset of ``records.ROW_OPS``; None = all), ``ddl`` (emit DDL records), and
    ``output``, what is made of the row changes."""

    table_filter: Callable[[str, str], bool] | None = None
    ops: frozenset[str] | None = None
    ddl: bool = False
    verify_checksum: bool = True
    initial_checksum: ChecksumAlgorithm | None = None
    output: CaptureOutput = CaptureOutput.RECORDS
    # An INCIDENT event says the server failed to log some changes there. By default capture stops
    # with DataLossError (as a replica does); True logs a warning, counts it and goes on.
    skip_incidents: bool = False
    #: ``LINES``: bytes of JSON lines an open transaction keeps in memory until its commit, and what
    #: makes the buffer that holds them given those bytes (the shell's ``io.spill.SpillBuffer``,
    #: which spills past them to a temporary file; None: ``cdc.held.MemoryBuffer``, all in memory).
    memory: int = TX_MEMORY
    spill: Callable[[int], Any] | None = None
    #: Columns kept out or hashed (``sluice.cdc.column_rules.ColumnRules``; None: none).
    columns: Any = None
    #: ``COLUMNS`` with the compiled core: ``hold_columns(rows, gtid)`` takes an open transaction's
    #: change-log rows each time ``part_bytes`` more of its binlog was read, before its commit, and
    #: returns what stands for them (``capture_out.hold_columns``; the commit's ``held``).
    hold_columns: Callable[[Any, str | None], Any] | None = None
    part_bytes: int = PART_BYTES


def on_incident(event: IncidentEvent, where: str, *, skip: bool) -> None:
    """An INCIDENT event at ``where``: a ``DataLossError`` (as a replica stops), or with ``skip`` a
    warning."""
    name = INCIDENT_NAMES.get(event.incident, f"code {event.incident}")
    message = f" ({event.message!r})" if event.message else ""
    if not skip:
        raise DataLossError(
            f"the server logged an incident at {where}: {name}{message}. It failed to write some changes "
            "to the binlog there, so changes made around that time may be missing from the capture (a "
            "replica stops here too). Re-snapshot the tables written at that time, then go on past the "
            "incident with --skip-incidents"
        )
    log.warning("skipped the incident %s%s logged at %s: changes around it may be missing", name, message, where)
