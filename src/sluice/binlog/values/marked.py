"""Values sluice could read only in part: kept for what they are, and marked so, never guessed.

Decoding for inspection (``ColumnInfo.mark_unsure``: ``sluice dump --events`` and columns read
positionally) meets values whose meaning needs a fact the binlog does not give:

* the bytes of a character column whose character set is not known, or that do not decode in the
  one it has, become :class:`UndecodedText` (JSON ``{"hex": "..."}``);
* an integer column whose signedness is not known reads the same either way while its top bit is
  clear; with the top bit set it becomes :class:`EitherSign` (JSON ``{"signed": -1, "unsigned":
  4294967295}``), as ``mysqlbinlog -vv`` prints ``-1 (4294967295)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["EitherSign", "UndecodedText", "either_sign_decoder", "lenient_text", "marked_json"]


class UndecodedText(bytes):
    """The bytes of a character value that sluice did not turn into text."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"UndecodedText({bytes(self)!r})"


@dataclass(frozen=True, slots=True)
class EitherSign:
    """An integer with its top bit set, of a column whose signedness is not known: both readings."""

    signed: int
    unsigned: int


def either_sign_decoder(size: int) -> Callable[[bytes, int], Any]:
    """``(buf, pos) -> value`` of a ``size``-byte little-endian integer of unknown signedness: an
    ``int`` while its top bit is clear, else ``EitherSign``."""
    top = 1 << (8 * size - 1)

    def decode(buf: bytes, pos: int) -> Any:
        unsigned = int.from_bytes(buf[pos : pos + size], "little")
        if unsigned < top:
            return unsigned
        return EitherSign(unsigned - 2 * top, unsigned)

    return decode


def lenient_text(decode: Callable[[bytes], str]) -> Callable[[bytes], Any]:
    """``decode`` of a character value, or ``UndecodedText`` of its bytes where they do not decode."""

    def text(data: bytes) -> Any:
        try:
            return decode(data)
        except ValueError:  # UnicodeDecodeError among them
            return UndecodedText(data)

    return text


def marked_json(value: Any) -> dict[str, Any] | None:
    """The JSON form of a marked value; None for any other value."""
    if isinstance(value, UndecodedText):
        return {"hex": value.hex()}
    if isinstance(value, EitherSign):
        return {"signed": value.signed, "unsigned": value.unsigned}
    return None
