"""What a pipeline task tells the driver about the files it staged: one typed descriptor per file.

A task of ``sluice.spark.source.staging`` writes its range into the lake and yields one small row
per thing the driver must commit or apply (``DESCRIPTOR_SCHEMA``), never the rows themselves:

- ``ChangelogFile``: the range's change-log Parquet file, its Delta ``add`` fields, where its
  changes begin and end, each transaction's commit time and rows, the range's end offset, the
  server the range was read on, and how often the task's replication connection was made again and
  which attempt of the task it is;
- ``TableSource``: one table's MERGE source (an Arrow IPC file; no path when the per-row path must
  build it), the layout it was typed in, where its changes begin and its op counts;
- ``DdlMet``: a schema change on a captured table, the statement as the change log holds it.

``to_row`` is the one writer of the rows and ``from_row`` the one reader; the ``kind`` column says
which descriptor a row is. Everything else reads the dataclasses' fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa

from sluice.binlog.position import Checkpoint, SourceIdentity, position_key
from sluice.errors import ConfigError

__all__ = ["DESCRIPTOR_SCHEMA", "ChangelogFile", "DdlMet", "Descriptor", "TableSource", "from_row", "to_row"]

#: One row per descriptor; the columns a kind does not use are null.
DESCRIPTOR_SCHEMA: Final = pa.schema([
    ("kind", pa.string()), ("db", pa.string()), ("table", pa.string()), ("path", pa.string()),
    ("size", pa.int64()), ("mtime", pa.int64()), ("rows", pa.int64()),
    ("first_file", pa.string()), ("first_pos", pa.int64()), ("first_row", pa.int32()),
    ("last_file", pa.string()), ("last_pos", pa.int64()),
    ("inserts", pa.int64()), ("updates", pa.int64()), ("deletes", pa.int64()),
    ("stats", pa.string()), ("layout", pa.string()), ("ddl", pa.string()),
    ("commit_us", pa.list_(pa.field("element", pa.int64()))),
    ("commit_rows", pa.list_(pa.field("element", pa.int64()))),
    ("reconnects", pa.int32()), ("attempt", pa.int32()), ("range_end", pa.string()), ("read_on", pa.string()),
])


@dataclass(frozen=True, slots=True)
class ChangelogFile:
    """A range's change-log file, staged in the change log's folder, committed with the batch."""

    path: str  # relative to the change log's folder, as its add action names it
    size: int
    mtime: int  # ms
    stats: str  # Delta's statistics of the file (JSON)
    rows: int
    first_file: str
    first_pos: int
    first_row: int
    last_file: str
    last_pos: int
    commit_us: tuple[int, ...]  # each transaction's commit time, in binlog order
    commit_rows: tuple[int, ...]  # and its changes
    reconnects: int = 0  # the range's replication connection made again
    attempt: int = 0  # the task's attempt (0: its first)
    range_end: Checkpoint | None = None  # the stream offset the range ends at
    #: the server the range was read on (its positions are that server's), when known
    read_on: SourceIdentity | None = None

    @property
    def first(self) -> tuple[tuple[str, int, int], int]:
        """Binlog order: where the file's first change is."""
        return position_key(self.first_file, self.first_pos), self.first_row

    def add_fields(self) -> dict[str, Any]:
        """What ``sluice.lake.data_files.add_action`` makes the file's Delta add action of."""
        return {"path": self.path, "size": self.size, "mtime": self.mtime, "stats": self.stats}


@dataclass(frozen=True, slots=True)
class TableSource:
    """One table's changes in a range: its MERGE source's file, or None for the per-row path."""

    db: str
    table: str
    rows: int
    first_file: str
    first_pos: int
    first_row: int
    inserts: int
    updates: int
    deletes: int
    path: str | None = None  # the MERGE source (Arrow IPC) under the batch's staging folder
    layout: str | None = None  # the columns and key it was typed in (``staging.layout_key``)

    @property
    def first(self) -> tuple[tuple[str, int, int], int]:
        """Binlog order: where the table's first change in the range is."""
        return position_key(self.first_file, self.first_pos), self.first_row

    def count(self, op: str) -> int:
        """The range's changes of one op: insert, update or delete."""
        return {"insert": self.inserts, "update": self.updates, "delete": self.deletes}[op]


@dataclass(frozen=True, slots=True)
class DdlMet:
    """A schema change on a captured table, met in a range."""

    db: str
    table: str | None
    first_file: str
    first_pos: int
    ddl: str  # the change log's ``ddl`` column: the statement as JSON

    @property
    def first(self) -> tuple[tuple[str, int, int], int]:
        """Binlog order: where the statement is."""
        return position_key(self.first_file, self.first_pos), 0


Descriptor = ChangelogFile | TableSource | DdlMet


def to_row(d: Descriptor) -> dict[str, Any]:
    """The descriptor as a row of ``DESCRIPTOR_SCHEMA``."""
    if isinstance(d, ChangelogFile):
        return {"kind": "changes", "path": d.path, "size": d.size, "mtime": d.mtime, "stats": d.stats,
                "rows": d.rows, "first_file": d.first_file, "first_pos": d.first_pos, "first_row": d.first_row,
                "last_file": d.last_file, "last_pos": d.last_pos, "commit_us": list(d.commit_us),
                "commit_rows": list(d.commit_rows), "reconnects": d.reconnects, "attempt": d.attempt,
                "range_end": None if d.range_end is None else d.range_end.to_text(),
                "read_on": None if d.read_on is None else json.dumps(d.read_on.to_json())}
    if isinstance(d, TableSource):
        return {"kind": "table", "db": d.db, "table": d.table, "rows": d.rows, "first_file": d.first_file,
                "first_pos": d.first_pos, "first_row": d.first_row, "inserts": d.inserts, "updates": d.updates,
                "deletes": d.deletes, "path": d.path, "layout": d.layout}
    return {"kind": "ddl", "db": d.db, "table": d.table, "first_file": d.first_file, "first_pos": d.first_pos,
            "ddl": d.ddl, "rows": 1}


def from_row(row: dict[str, Any]) -> Descriptor:
    """The descriptor a row of ``DESCRIPTOR_SCHEMA`` holds; ``ConfigError`` for a kind no task writes."""
    kind = row.get("kind")
    if kind == "changes":
        end, on = row.get("range_end"), row.get("read_on")
        return ChangelogFile(
            row["path"], row["size"], row["mtime"], row["stats"], row["rows"], row["first_file"], row["first_pos"],
            row["first_row"] or 0, row["last_file"], row["last_pos"], tuple(row["commit_us"] or ()),
            tuple(row["commit_rows"] or ()), row["reconnects"] or 0, row["attempt"] or 0,
            None if not end else Checkpoint.from_json(json.loads(end)),
            None if not on else SourceIdentity.from_json(json.loads(on)))
    if kind == "table":
        return TableSource(row["db"], row["table"], row["rows"], row["first_file"], row["first_pos"],
                           row["first_row"] or 0, row["inserts"] or 0, row["updates"] or 0, row["deletes"] or 0,
                           row.get("path"), row.get("layout"))
    if kind == "ddl":
        return DdlMet(row["db"], row["table"], row["first_file"], row["first_pos"], row["ddl"])
    raise ConfigError(f"a staged descriptor of kind {kind!r}: was the batch staged by another version of sluice?")
