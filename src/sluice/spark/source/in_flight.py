"""What the ``binlog`` source has read that is not in the lake yet, told to the pipeline's progress.

The planner (``sluice.spark.source.planner``) lives where Spark runs the stream reader, a Python
process of its own; with ``option("inFlightTo", PATH)`` a thread of it writes ``PATH`` (a small
JSON file, replaced whole) every second: the transaction it is reading, if any (where it began, its
binlog bytes and the rows counted so far), and the largest transaction read and not yet committed
(the open one included), in binlog bytes and rows. ``sluice run`` reads it for its progress line
and its metrics, so a transaction of millions of rows shows as it is read, not as silence.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["EVERY", "InFlight", "in_flight_file", "read_in_flight", "remove_in_flight", "report_in_flight"]

EVERY = 1.0  # seconds between two writes


@dataclass(frozen=True, slots=True)
class InFlight:
    """What the source is reading: the open transaction (``file`` None when none) and the largest one."""

    file: str | None
    pos: int
    bytes: int  # of the open transaction, so far
    rows: int
    largest_bytes: int  # of the transactions read and not yet committed to the lake, the open one included
    largest_rows: int

    def describe(self) -> str:
        """``reading a transaction at binlog.000003:4 (1,234 MB, 2,000,000 rows so far)``, or ''."""
        if self.file is None:
            return ""
        rows = f", {self.rows:,} rows" if self.rows else ""
        return f"reading a transaction at {self.file}:{self.pos} ({self.bytes / 1e6:,.0f} MB{rows} so far)"


def in_flight_file() -> str:
    """A new file (in the system's temporary folder) for a source to report to."""
    fd, path = tempfile.mkstemp(prefix="sluice-in-flight-", suffix=".json")
    os.close(fd)
    return path


def remove_in_flight(path: str) -> None:
    """Remove the report file (and a write left half done), if there."""
    folder, name = os.path.split(path)
    for entry in os.listdir(folder or "."):
        if entry == name or (entry.startswith(f"{name}.") and entry.endswith(".tmp")):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, entry))


def read_in_flight(path: str) -> InFlight | None:
    """The state the source last wrote to ``path``; None when it wrote none (or not readable yet)."""
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read() or b"null")
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    opened = data.get("open") or {}
    return InFlight(opened.get("file"), int(opened.get("pos", 0)), int(opened.get("bytes", 0)),
                    int(opened.get("rows", 0)), int(data.get("largest_bytes", 0)), int(data.get("largest_rows", 0)))


def report_in_flight(path: str, state: Any, stopped: Any) -> threading.Thread:
    """Start the thread that writes ``state()`` (a JSON-able dict) to ``path`` every ``EVERY`` seconds
    until ``stopped()``; a write that fails is tried again at the next tick (progress only)."""

    def run() -> None:
        temporary = f"{path}.{os.getpid()}.tmp"
        last = None
        while not stopped():
            try:
                text = json.dumps(state(), separators=(",", ":")).encode()
                if text != last:
                    with open(temporary, "wb") as f:
                        f.write(text)
                    os.replace(temporary, path)
                    last = text
            except Exception:  # progress only: never fail the stream over it
                last = None
            time.sleep(EVERY)

    thread = threading.Thread(target=run, name="sluice-in-flight", daemon=True)
    thread.start()
    return thread
