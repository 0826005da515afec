"""A big open transaction's JSON lines, held in a bounded buffer until it commits (``CaptureOutput.LINES``).

Once an open transaction passes ``hold_after`` bytes of binlog, the capture moves the JSON lines
of its events into a ``HeldLines``, over the buffer the capture's ``spill`` makes (the shell's
``io.spill.SpillBuffer``: in memory up to the ``memory`` budget, in an anonymous temporary file
past it; a ``MemoryBuffer`` without one), and the events leave the
transaction's list: the ``HeldLines`` takes their place (as a ``(file, pos, HeldLines)`` entry), so
it goes wherever the transaction's events go: out with the commit, into a prepared XA's part and
out with its XA COMMIT, or away with a ROLLBACK or a cut-off, which closes nothing explicitly
(dropping the buffer frees its memory and its file). Every event is turned into lines as it
would be at the commit: the same writer, the same GTID (the rows' transaction's), the same
order; the committed transaction's ``lines`` is then the ``HeldLines`` itself, read back in order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["HOLD_AFTER", "TX_MEMORY", "HeldLines", "LinesInto", "MemoryBuffer", "finish", "hold"]

#: The default budget (``CaptureConfig.memory``): bytes of JSON lines an open transaction keeps in memory.
TX_MEMORY = 64 << 20
#: An open transaction's lines are held once it passed this many bytes of binlog, or a quarter
#: of the budget when that is less.
HOLD_AFTER = 1 << 20

log = logging.getLogger(__name__)

#: Appends the JSON lines of one ``(file, pos, event)`` to a list; returns its number of row changes.
LinesInto = Callable[[list[bytes], str, int, Any], int]


class MemoryBuffer:
    """Bytes in memory: the buffer of a held transaction when the capture was given no other
    (``write``, iteration in order, ``size``, ``budget``, ``spilled``, ``close`` as ``io.spill.SpillBuffer``)."""

    __slots__ = ("_chunks", "budget", "size")
    spilled = False

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.size = 0
        self._chunks: list[bytes] = []

    def write(self, data: bytes) -> None:
        """Append ``data``."""
        self._chunks.append(data)
        self.size += len(data)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._chunks)

    def close(self) -> None:
        """Free the bytes."""
        self._chunks = []
        self.size = 0


class HeldLines:
    """The JSON lines of one transaction so far, in order, and their number of row changes."""

    __slots__ = ("buffer", "rows")

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer  # a SpillBuffer, or a MemoryBuffer
        self.rows = 0  # row changes decoded so far

    def take(self, events: Sequence[Any], lines_into: LinesInto) -> None:
        """Write the lines of ``events`` (``(file, pos, event)``) after those held."""
        out: list[bytes] = []
        rows = 0
        for file, pos, event in events:
            rows += lines_into(out, file, pos, event)
        buffer = self.buffer
        spilled = buffer.spilled
        for chunk in out:
            buffer.write(chunk)
        self.rows += rows
        if buffer.spilled and not spilled:
            log.info("a transaction passed %d bytes of JSON lines (at %s:%d, %d row changes): the rest waits for "
                     "its COMMIT in a temporary file", buffer.budget, *(events[-1][:2] if events else ("", 0)),
                     self.rows)

    @property
    def size(self) -> int:
        """Bytes of JSON lines held."""
        return self.buffer.size

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.buffer)

    def __bool__(self) -> bool:
        return self.buffer.size > 0

    def close(self) -> None:
        """Free the memory and the temporary file."""
        self.buffer.close()


def _held_at(events: Sequence[Any]) -> int:
    """Index of the ``HeldLines`` entry of ``events`` (-1 when none): the last, or near the end."""
    i = len(events) - 1
    while i >= 0 and type(events[i][2]) is not HeldLines:
        i -= 1
    return i


def hold(events: list[Any], lines_into: LinesInto, make_buffer: Callable[[], Any]) -> HeldLines:
    """Move the lines of the open transaction's ``events`` not held yet into its ``HeldLines`` (made
    and put in the list the first time); the events whose lines moved leave the list."""
    i = _held_at(events)
    if i < 0:
        held = HeldLines(make_buffer())
        held.take(events, lines_into)
        events[:] = [("", 0, held)]
        return held
    held = events[i][2]
    if i + 1 < len(events):
        held.take(events[i + 1:], lines_into)
        del events[i + 1:]
    return held


def finish(events: Sequence[Any], lines_into: LinesInto) -> HeldLines | None:
    """A committed transaction's ``HeldLines`` with the lines of its last events added; None when its
    lines were never held (the caller writes them as usual)."""
    i = _held_at(events)
    if i < 0:
        return None
    held: HeldLines = events[i][2]
    held.take(events[i + 1:], lines_into)
    return held
