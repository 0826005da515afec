"""A JSON-lines output file that holds every change exactly once across restarts and kill -9.

``sluice tail --checkpoint DIR --output FILE`` saves, with every checkpoint, how many bytes of the
file belong to checkpointed transactions. On restart the file is cut back to that many bytes (a
transaction written after the last checkpoint is written again from the binlog), and a file
shorter than the checkpoint says is an error: something else truncated or replaced it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

from sluice.errors import DataLossError

__all__ = ["CheckpointedOutput"]

log = logging.getLogger(__name__)


class CheckpointedOutput:
    """Appends JSON lines to ``path`` and counts the bytes written; ``saved`` is the checkpoint's count."""

    def __init__(self, path: str, saved: int | None = None) -> None:
        self.path = path
        size = os.path.getsize(path) if os.path.exists(path) else 0
        if saved is not None:
            if size < saved:
                raise DataLossError(
                    f"{path} has {size} bytes but the checkpoint says {saved} were written to it: the file was "
                    "truncated or replaced. Restore it, or start over with a new --checkpoint directory"
                )
            if size > saved:
                log.warning("cutting %s back from %d to %d bytes (the last checkpointed transaction)",
                            path, size, saved)
                with open(path, "r+b") as f:
                    f.truncate(saved)
            size = saved
        self.written = size
        self._file = open(path, "ab")  # noqa: SIM115 - closed by close()

    def write_lines(self, chunks: Iterable[bytes]) -> None:
        """Append ``chunks`` one after another (read once) and flush them; ``written`` then counts their bytes."""
        write = self._file.write
        written = 0
        for chunk in chunks:
            write(chunk)
            written += len(chunk)
        self._file.flush()
        self.written += written

    def close(self) -> None:
        """Close the file (everything written was already flushed)."""
        self._file.close()
