"""A bounded buffer of bytes that spills to a temporary file past a budget.

``SpillBuffer`` keeps what is written in memory up to ``budget`` bytes; past it, everything
written so far and everything after goes to a temporary file in ``directory`` (the system's
temporary directory when None: ``TMPDIR``). The file is anonymous: it is unlinked as it is
created (``tempfile.TemporaryFile``), so it has no name anyone could find and nothing is left
behind on any exit, a crash, Ctrl-C or kill -9 included; its space is freed when the buffer is
closed or dropped. Reading it back (iterating) yields the bytes in the order written, in pieces
of at most ``READ_SIZE``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import IO

from sluice.errors import ConfigError

__all__ = ["READ_SIZE", "SpillBuffer", "parse_size"]

READ_SIZE = 1 << 20

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "G": 1 << 30, "GB": 1 << 30}


def parse_size(text: str, option: str) -> int:
    """``64MB``, ``512K``, ``1G`` or a number of bytes (units are powers of 1024) as bytes."""
    value = text.strip().upper()
    digits = value.rstrip("BKMG")
    unit = value[len(digits):]
    if not digits.isdigit() or unit not in _UNITS:
        raise ConfigError(f"{option} {text!r} is not a size: give bytes, or a number with K, M or G (as 64M)")
    return int(digits) * _UNITS[unit]


class SpillBuffer:
    """Bytes written in order, held in memory up to ``budget`` bytes, then in a temporary file."""

    __slots__ = ("_chunks", "_directory", "_file", "budget", "size")

    def __init__(self, budget: int, directory: str | None = None) -> None:
        self.budget = budget
        self.size = 0  # bytes written, in memory or in the file
        self._directory = directory
        self._chunks: list[bytes] = []
        self._file: IO[bytes] | None = None

    @property
    def spilled(self) -> bool:
        """Whether the bytes went to the temporary file (the budget was passed)."""
        return self._file is not None

    def write(self, data: bytes) -> None:
        """Append ``data``."""
        self.size += len(data)
        file = self._file
        if file is not None:
            try:
                file.write(data)
            except OSError as e:
                raise self._failed(e) from e
            return
        self._chunks.append(data)
        if self.size > self.budget:
            self._spill()

    def _spill(self) -> None:
        try:
            file = tempfile.TemporaryFile(dir=self._directory, prefix="sluice-txn-")  # noqa: SIM115 - closed by close()
            file.writelines(self._chunks)
        except OSError as e:
            raise self._failed(e) from e
        self._chunks = []
        self._file = file

    def _failed(self, e: OSError) -> ConfigError:
        return ConfigError(
            f"cannot write the temporary file in {self._directory or tempfile.gettempdir()} that holds a "
            f"transaction larger than the memory budget ({self.budget} bytes): {e}. Point the spill directory "
            "(TMPDIR, or the command's option) at a writable folder with room for the largest transaction"
        )

    def __iter__(self) -> Iterator[bytes]:
        file = self._file
        if file is None:
            yield from self._chunks
            return
        file.flush()
        file.seek(0)
        while piece := file.read(READ_SIZE):
            yield piece
        file.seek(0, 2)  # writes go on at the end

    def __len__(self) -> int:
        return self.size

    def close(self) -> None:
        """Free the memory and the temporary file (its space goes back at once); the buffer is empty."""
        self._chunks = []
        self.size = 0
        file, self._file = self._file, None
        if file is not None:
            file.close()
