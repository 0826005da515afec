"""Replacing a small state file atomically and durably: the one way sluice writes its state files.

``write_atomically`` writes a temporary file in the target's directory, fsyncs it, renames it over
the target and fsyncs the directory, so a crash leaves either the old or the new file, never a
torn one. Failures are ``ConfigError`` naming the file and what it is.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from sluice.errors import ConfigError

__all__ = ["fsync_directory", "write_atomically"]


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a rename or a new file in ``directory`` durable (POSIX); where a directory cannot be
    opened, skip it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomically(path: str | os.PathLike[str], data: bytes, *, what: str, prefix: str | None = None) -> None:
    """Replace ``path`` with ``data``; ``what`` names the file in errors ("the checkpoint")."""
    target = Path(path)
    try:
        fd, temp = tempfile.mkstemp(prefix=prefix or f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise ConfigError(f"cannot write {what} to {target.parent}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise ConfigError(f"cannot write {what} file {target}: {exc.strerror or exc}") from None
    fsync_directory(target.parent)
