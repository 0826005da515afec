"""The checkpoint file: one small JSON document saved atomically, the only file I/O of checkpoints.

``CheckpointFile(path).save(checkpoint, extra)`` writes ``{"version": 1, "checkpoint": {...},
**extra}`` to a temporary file in the same directory, flushes and fsyncs it, renames it over
``path`` with ``os.replace`` and fsyncs the directory, so after a crash the file holds either the
old document or the new one, never a mix. ``load()`` returns ``(Checkpoint, extra)`` or None
when there is no file yet; a file that is not such a document (cut, edited, another version)
raises ``ConfigError`` naming the file and what to do. Temporary files left behind by a crash
are ignored by ``load`` and removed by the next ``save``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sluice.binlog.position import Checkpoint
from sluice.errors import ConfigError
from sluice.io.atomic import write_atomically

__all__ = ["VERSION", "CheckpointFile"]

VERSION = 1
_RESERVED = frozenset({"version", "checkpoint"})


class CheckpointFile:
    """A checkpoint document at ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"CheckpointFile({str(self.path)!r})"

    @property
    def _temp_prefix(self) -> str:
        return f".{self.path.name}."

    def load(self) -> tuple[Checkpoint, dict[str, Any]] | None:
        """``(checkpoint, extra)`` as last saved, or None when the file does not exist."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the checkpoint file {self.path}: {_reason(exc)}") from None
        remedy = (
            "restore it from a backup, or remove it to start again from a position you give "
            "(changes between the lost checkpoint and that position are not captured)"
        )
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise ConfigError(
                f"the checkpoint file {self.path} is not valid JSON ({exc}); {remedy}"
            ) from None
        if not isinstance(doc, dict):
            raise ConfigError(
                f"the checkpoint file {self.path} holds a JSON {type(doc).__name__}, expected an object with "
                f"version and checkpoint; {remedy}"
            )
        version = doc.get("version")
        if version != VERSION:
            raise ConfigError(
                f"the checkpoint file {self.path} has version {version!r}, this sluice reads version {VERSION}: "
                f"use the sluice that wrote it, or {remedy}"
            )
        if "checkpoint" not in doc:
            raise ConfigError(f"the checkpoint file {self.path} has no 'checkpoint' field; {remedy}")
        try:
            checkpoint = Checkpoint.from_json(doc["checkpoint"])
        except ConfigError as exc:
            raise ConfigError(f"the checkpoint file {self.path} is damaged: {exc}; {remedy}") from None
        extra = {k: v for k, v in doc.items() if k not in _RESERVED}
        return checkpoint, extra

    def save(self, checkpoint: Checkpoint, extra: Mapping[str, Any] | None = None) -> None:
        """Replace the file with ``checkpoint`` and ``extra``, atomically and durably."""
        doc: dict[str, Any] = {"version": VERSION, "checkpoint": checkpoint.to_json()}
        if extra:
            clash = sorted(k for k in extra if k in _RESERVED)
            if clash:
                raise ConfigError(f"extra checkpoint fields may not be named {clash}: those names are sluice's own")
            doc.update(extra)
        try:
            data = json.dumps(doc, indent=1, sort_keys=False, allow_nan=False).encode("utf-8") + b"\n"
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"the extra checkpoint fields are not plain JSON values: {exc}") from None
        directory = self.path.parent
        if not directory.is_dir():
            raise ConfigError(
                f"cannot save the checkpoint to {self.path}: the directory {directory} does not exist; "
                "create it or choose another checkpoint location"
            )
        self._remove_stale_temps(directory)
        write_atomically(self.path, data, what="the checkpoint", prefix=self._temp_prefix)

    def _remove_stale_temps(self, directory: Path) -> None:
        """Temporary files of saves a crash interrupted (only this process writes this checkpoint)."""
        prefix = self._temp_prefix
        try:
            names = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(".tmp")]
        except OSError:
            return
        for name in names:
            with contextlib.suppress(OSError):
                os.unlink(directory / name)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)
