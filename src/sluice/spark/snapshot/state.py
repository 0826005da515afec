"""The snapshot's state in the lake: ``LAKE/_sluice/snapshot.json``, and what is read from it.

``SnapshotState`` is the file's content: the binlog position the stream starts at, each captured
table's chunk plan with its finished chunks and watermarks, and whether the snapshot is complete
(``sluice.spark.snapshot.runner`` writes it as it goes). ``forget_tables`` drops tables from it (``sluice
snapshot --tables``), ``stream_start`` is where the stream starts after it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sluice.binlog.position import Checkpoint
from sluice.errors import ConfigError
from sluice.io.atomic import write_atomically
from sluice.spark.lake.sink import DeltaLake

__all__ = ["STATE_VERSION", "SnapshotState", "forget_tables", "stream_start"]

STATE_VERSION = 1


@dataclass
class SnapshotState:
    """What ``snapshot.json`` holds."""

    start: dict[str, Any] | None = None
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)  # "db.t" -> {schema, key, chunks, done, ...}
    complete: bool = False
    flavor: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The state as the JSON object of ``snapshot.json``, with its format version."""
        return {"version": STATE_VERSION, "start": self.start, "tables": self.tables, "complete": self.complete,
                "flavor": self.flavor}

    @classmethod
    def load(cls, path: Path) -> SnapshotState:
        """Read ``snapshot.json`` (an empty state when absent); ``ConfigError`` when damaged."""
        if not path.exists():
            return cls()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("version") != STATE_VERSION:
                raise ValueError(f"version {data.get('version')!r}")
            return cls(data["start"], data["tables"], bool(data["complete"]), data.get("flavor"))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path} is damaged ({exc}); delete the lake's _sluice directory to start over") from None

    def save(self, path: Path) -> None:
        """Write ``snapshot.json`` atomically."""
        write_atomically(path, json.dumps(self.to_json()).encode("utf-8"), what="the snapshot state")


def forget_tables(state_dir: Path, lake: DeltaLake, names: Sequence[str]) -> list[str]:
    """Drop the snapshot (state and Delta mirror) of ``db.table`` names, so the next run reads them again."""
    path = state_dir / "snapshot.json"
    state = SnapshotState.load(path)
    dropped = [n for n in names if n in state.tables]
    for name in dropped:
        del state.tables[name]
        db, _, table = name.partition(".")
        shutil.rmtree(lake.table_path(db, table), ignore_errors=True)
    if dropped:
        state.complete = False
        state.save(path)
    return dropped


def stream_start(state: SnapshotState) -> str:
    """Where the stream starts after the snapshot: ``FILE:POS`` recorded before any chunk was read."""
    if state.start is None:
        raise ConfigError("the snapshot has no start position recorded")
    cp = Checkpoint.from_json(state.start)
    return f"{cp.file}:{cp.pos}"
