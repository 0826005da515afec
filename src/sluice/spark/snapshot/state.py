"""The snapshot's state in the lake: ``LAKE/_sluice/snapshot.json``, and what is read from it.

``SnapshotState`` is the file's content: the binlog position the stream starts at, each captured
table's chunk plan with its finished chunks and watermarks, and whether the snapshot is complete
(``sluice.spark.snapshot.runner`` writes it as it goes). ``forget_tables`` drops tables from it (``sluice
snapshot --tables``), ``stream_start`` is where the stream starts after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sluice.binlog.position import Checkpoint
from sluice.errors import ConfigError
from sluice.lake.layout import Lake
from sluice.lake.sink import DeltaLake

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
    def load(cls, store: Lake) -> SnapshotState:
        """Read ``snapshot.json`` (an empty state when absent); ``ConfigError`` when damaged."""
        return cls.find(store) or cls()

    @classmethod
    def find(cls, store: Lake) -> SnapshotState | None:
        """Read ``snapshot.json``, None when the lake has none; ``ConfigError`` when damaged."""
        data = store.get_json(store.SNAPSHOT_STATE)
        if data is None:
            return None
        try:
            if data.get("version") != STATE_VERSION:
                raise ValueError(f"version {data.get('version')!r}")
            return cls(data["start"], data["tables"], bool(data["complete"]), data.get("flavor"))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{store.join(store.SNAPSHOT_STATE)} is damaged ({exc}); delete the lake's _sluice "
                              "directory to start over") from None

    def save(self, store: Lake) -> None:
        """Write ``snapshot.json`` whole."""
        store.put_json(store.SNAPSHOT_STATE, self.to_json())


def forget_tables(lake: DeltaLake, names: Sequence[str]) -> list[str]:
    """Drop the snapshot (state and Delta mirror) of ``db.table`` names, so the next run reads them again."""
    state = SnapshotState.load(lake.store)
    dropped = [n for n in names if n in state.tables]
    for name in dropped:
        del state.tables[name]
        db, _, table = name.partition(".")
        lake.store.delete_prefix(lake.store.key(lake.table_path(db, table)))
    lake.forget()
    if dropped:
        state.complete = False
        state.save(lake.store)
    return dropped


def stream_start(state: SnapshotState) -> str:
    """Where the stream starts after the snapshot: the checkpoint recorded before any chunk was read,
    as ``Checkpoint.to_text`` (its GTID set included when it has one)."""
    if state.start is None:
        raise ConfigError("the snapshot has no start position recorded")
    return Checkpoint.from_json(state.start).to_text()
