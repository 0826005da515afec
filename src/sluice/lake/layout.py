"""The lake's layout: which object under its root is which part of the lake, and which Delta tables
the lake holds. ``Lake`` owns it; no other module spells a path under a lake.

Under a lake's root:

- ``<db>/<table>``: the Delta mirror of each captured table;
- ``<db>/<table>__history``: the table's history, every version of each row (``sluice run --history``,
  ``sluice.lake.mirror.history``); no mirror ends in ``__history``, so the two never meet;
- ``_sluice/``: sluice's own parts, a folder no source database can take:

  - ``changes``: the change log (Delta);
  - ``pending/<db>/<table>``: a mirror's changes not yet MERGEd into it (Delta);
  - ``staging/<batch>/``: the running batch's MERGE sources, one Arrow IPC file each;
  - ``archive/<db>/<table>@<file>-<pos>``: the mirrors of dropped and renamed-away tables (Delta);
  - ``snapshot.json``: the snapshot's plan, chunk watermarks and re-reads;
  - ``ddl.json``: the DDL batch being applied, ``(batch, steps done)``;
  - ``pipeline.json``: the pipeline's id (the Delta app id), created once;
  - ``capture.json``: the table filter of the last ``sluice run`` (which source tables have mirrors);
  - ``writers/<epoch>.json`` and ``writer.json``: the writers' leases, one at a time (``lease``);
  - ``schema-history.jsonl``: the stream's schema history;
  - ``checkpoint``: Spark's checkpoint, when the lake is a path and none is given.

``Lake`` is a ``LakeStore`` (its URI, storage options and object reads and writes) that also
knows these places. It lists the lake's Delta tables one way, over the store's own listing: a
folder is a Delta table when it has a ``_delta_log`` folder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from sluice.errors import SchemaError
from sluice.lake.storage import LakeStore, lake_store

__all__ = ["HISTORY_SUFFIX", "OWN", "Lake", "LakeTable", "open_lake"]

OWN: Final = "_sluice"  # sluice's own folder under the root; no database of the source may be named so
HISTORY_SUFFIX: Final = "__history"  # a table's history beside its mirror; no mirrored table may end so
_DELTA_LOG: Final = "_delta_log"


@dataclass(frozen=True, slots=True)
class LakeTable:
    """One Delta table of the lake: its URI and its name in output (``db.table``, ``_sluice.changes``,
    ``_sluice.archive/<db>/<table>@<file>-<pos>``, ``db.table__history``); ``kind`` is mirror, changes,
    archive, pending or history."""

    uri: str
    name: str
    kind: str


@dataclass(frozen=True, repr=False)
class Lake(LakeStore):
    """A lake's storage and its layout (module docstring); picklable like ``LakeStore``."""

    # sluice's own documents, as object keys under the root
    SNAPSHOT_STATE: ClassVar[str] = f"{OWN}/snapshot.json"
    DDL_JOURNAL: ClassVar[str] = f"{OWN}/ddl.json"
    PIPELINE: ClassVar[str] = f"{OWN}/pipeline.json"
    CAPTURE: ClassVar[str] = f"{OWN}/capture.json"  # the run's --tables / --exclude-tables
    HISTORY: ClassVar[str] = f"{OWN}/schema-history.jsonl"
    STAGING: ClassVar[str] = f"{OWN}/staging"
    LEASE_HINT: ClassVar[str] = f"{OWN}/writer.json"  # a recent writer's epoch (sluice.lake.lease)
    _CHANGES: ClassVar[str] = f"{OWN}/changes"
    _PENDING: ClassVar[str] = f"{OWN}/pending"
    _ARCHIVE: ClassVar[str] = f"{OWN}/archive"

    def __repr__(self) -> str:
        return f"Lake({self.uri!r})"

    # -- places ------------------------------------------------------------------------------------
    def mirror(self, db: str, table: str) -> str:
        """``ROOT/<db>/<table>``, the mirror of ``db.table``; a name that cannot be a folder of the
        lake, the database ``_sluice`` or a table name ending in ``__history`` is a ``SchemaError``."""
        for part in (db, table):
            if not part or part in (".", "..") or "/" in part or "\\" in part:
                raise SchemaError(f"the table name {db}.{table} cannot be a folder of the lake; exclude the table")
        if db == OWN:
            raise SchemaError(f"the database name {OWN} is where the lake keeps its change log; exclude it")
        if table.endswith(HISTORY_SUFFIX):
            raise SchemaError(f"the table name {db}.{table} ends in {HISTORY_SUFFIX}, where the lake keeps a table's "
                              "history beside its mirror; exclude the table (--exclude-tables)")
        return self.join(db, table)

    def history(self, db: str, table: str) -> str:
        """``ROOT/<db>/<table>__history``, the history of ``db.table`` (``sluice run --history``)."""
        return self.mirror(db, table) + HISTORY_SUFFIX

    @property
    def changes(self) -> str:
        """The change log's URI."""
        return self.join(self._CHANGES)

    def pending(self, db: str, table: str) -> str:
        """The URI of ``db.table``'s pending table."""
        return self.join(self._PENDING, db, table)

    def staging(self, batch_id: int) -> str:
        """The URI of the folder where batch ``batch_id`` stages its MERGE sources."""
        return self.join(self.STAGING, str(batch_id))

    def archive(self, db: str, table: str, at: tuple[str, int]) -> str:
        """The URI of ``db.table``'s mirror archived at binlog position ``at`` (a DROP or RENAME there)."""
        file, pos = at
        return self.join(self._ARCHIVE, db, f"{table}@{file}-{pos}")

    def lease(self, epoch: int) -> str:
        """The key of the lease object of the lake's writer number ``epoch`` (``sluice.lake.lease``)."""
        return f"{OWN}/writers/{epoch:09d}.json"

    @property
    def own(self) -> str:
        """The URI of sluice's own folder."""
        return self.join(OWN)

    @property
    def checkpoint(self) -> str:
        """Where Spark's checkpoint goes when the lake is a path and no ``--checkpoint-dir`` is given."""
        return self.join(OWN, "checkpoint")

    @staticmethod
    def reserved(db: str) -> bool:
        """Whether ``db`` is sluice's own folder rather than a database that can have mirrors."""
        return db == OWN

    def check_conditional_writes(self, probe: str = "") -> None:
        """``LakeStore.check_conditional_writes`` on an object in sluice's own folder."""
        super().check_conditional_writes(probe or f"{OWN}/probe")

    # -- what the lake holds -----------------------------------------------------------------------
    def is_delta(self, uri: str) -> bool:
        """Whether ``uri`` (under the root) holds a Delta table's log."""
        return _DELTA_LOG in self.folders(self.key(uri))

    def holds_pipeline(self) -> bool:
        """Whether a sluice pipeline ever wrote to this lake (its id is recorded)."""
        return self.get(self.PIPELINE) is not None

    def mirrors(self) -> list[tuple[str, str]]:
        """``(db, table)`` of every mirror, sorted."""
        return [(db, t) for db in self.folders("") if not self.reserved(db) for t in self._deltas(db)
                if not t.endswith(HISTORY_SUFFIX)]

    def histories(self) -> list[tuple[str, str]]:
        """``(db, table)`` of every table that has a history (``<db>/<table>__history``), sorted."""
        return [(db, t[: -len(HISTORY_SUFFIX)]) for db in self.folders("") if not self.reserved(db)
                for t in self._deltas(db) if t.endswith(HISTORY_SUFFIX) and len(t) > len(HISTORY_SUFFIX)]

    def pending_tables(self) -> list[tuple[str, str]]:
        """``(db, table)`` of every mirror that has a pending table."""
        return [(db, t) for db in self.folders(self._PENDING) for t in self.folders(f"{self._PENDING}/{db}")]

    def tables(self) -> list[LakeTable]:
        """Every Delta table of the lake: the mirrors, the histories, the change log, the archived
        mirrors and the mirrors' pending tables, in that order. A lake that does not exist yet has none."""
        found = [LakeTable(self.join(db, t), f"{db}.{t}", "mirror") for db, t in self.mirrors()]
        found += [LakeTable(self.join(db, t + HISTORY_SUFFIX), f"{db}.{t}{HISTORY_SUFFIX}", "history")
                  for db, t in self.histories()]
        if self.is_delta(self.changes):
            found.append(LakeTable(self.changes, f"{OWN}.changes", "changes"))
        for folder, kind in ((self._ARCHIVE, "archive"), (self._PENDING, "pending")):
            for db in self.folders(folder):
                found.extend(LakeTable(self.join(folder, db, t), f"{OWN}.{kind}/{db}/{t}", kind)
                             for t in self._deltas(f"{folder}/{db}"))
        return found

    def _deltas(self, folder: str) -> list[str]:
        """The names of the Delta tables right under the key ``folder``."""
        return [t for t in self.folders(folder) if _DELTA_LOG in self.folders(f"{folder}/{t}")]


def open_lake(lake: str | os.PathLike[str] | LakeStore, storage: Mapping[str, Any] | None = None) -> Lake:
    """The ``Lake`` of ``--lake`` (a path or a URI, see ``lake_store``) with the ``[lake.storage]``
    options; a ``LakeStore`` becomes the ``Lake`` at its root."""
    if isinstance(lake, Lake):
        return lake
    store = lake if isinstance(lake, LakeStore) else lake_store(lake, storage)
    return Lake(store.uri, store.options)
