"""The snapshot's state in the lake: ``LAKE/_sluice/snapshot.json``, and what is read from it.

``SnapshotState`` is the file's content: the binlog position the stream starts at, each captured
table's chunk plan with its finished chunks and watermarks, and whether the snapshot is complete
(``sluice.spark.snapshot.driver`` writes it as it goes). ``forget_tables`` drops tables from it (``sluice
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

__all__ = ["RESYNC_HISTORY", "STATE_VERSION", "SnapshotState", "forget_tables", "stream_start"]

STATE_VERSION = 1
#: A table's flag: it was read again while the lake kept its history, which its next batch compares
#: with the mirror (``sluice.spark.pipeline.history_feed``); cleared once that batch is committed.
RESYNC_HISTORY = "resync_history"


@dataclass
class SnapshotState:
    """What ``snapshot.json`` holds."""

    start: dict[str, Any] | None = None
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)  # "db.t" -> {schema, key, chunks, done, ...}
    complete: bool = False
    flavor: str | None = None
    discarding: list[str] = field(default_factory=list)  # keys of mirrors under removal (``discard``)

    def to_json(self) -> dict[str, Any]:
        """The state as the JSON object of ``snapshot.json``, with its format version."""
        return {"version": STATE_VERSION, "start": self.start, "tables": self.tables, "complete": self.complete,
                "flavor": self.flavor, "discarding": self.discarding}

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
            return cls(data["start"], data["tables"], bool(data["complete"]), data.get("flavor"),
                       list(data.get("discarding") or []))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{store.join(store.SNAPSHOT_STATE)} is damaged ({exc}); delete the lake's _sluice "
                              "directory to start over") from None

    def save(self, store: Lake) -> None:
        """Write ``snapshot.json`` whole."""
        store.put_json(store.SNAPSHOT_STATE, self.to_json())

    def discard(self, store: Lake, names: Sequence[str]) -> None:
        """Drop the reads of ``db.table`` names and remove their mirrors. The state names the mirrors
        under removal before the first object goes, so a kill inside a removal (on an object store,
        many requests) leaves it to ``finish_discards`` at the next load: never a half-removed Delta
        log at a path the state no longer knows, where a new plan would create the table again."""
        for name in names:
            self.tables.pop(name, None)
            db, _, table = name.partition(".")
            self.discarding.append(store.key(store.mirror(db, table)))
        self.save(store)
        self.finish_discards(store)

    def history_resyncs(self) -> set[tuple[str, str]]:
        """``(db, table)`` of the tables flagged ``RESYNC_HISTORY``."""
        return {(t[0], t[2]) for name, table in self.tables.items() if table.get(RESYNC_HISTORY)
                for t in [name.partition(".")]}

    def finish_discards(self, store: Lake) -> None:
        """Remove every mirror ``discard`` named (again: a removal is idempotent), then forget them."""
        if not self.discarding:
            return
        for key in dict.fromkeys(self.discarding):
            store.delete_prefix(key)
        self.discarding = []
        self.save(store)


def forget_tables(lake: DeltaLake, names: Sequence[str]) -> list[str]:
    """Drop the snapshot (state and Delta mirror) of ``db.table`` names, so the next run reads them again."""
    state = SnapshotState.load(lake.store)
    dropped = [n for n in names if n in state.tables]
    if dropped:
        state.complete = False
        state.discard(lake.store, dropped)
    lake.forget()
    return dropped


def stream_start(state: SnapshotState) -> str:
    """Where the stream starts after the snapshot: the checkpoint recorded before any chunk was read,
    as ``Checkpoint.to_text`` (its GTID set included when it has one)."""
    if state.start is None:
        raise ConfigError("the snapshot has no start position recorded")
    return Checkpoint.from_json(state.start).to_text()
