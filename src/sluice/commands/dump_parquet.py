"""``sluice dump --format parquet``: each captured table's row changes as typed Parquet files.

Under the output folder (which must be new or empty):

    tables/<db>/<table>/part-00000.parquet   a table's changes in binlog order, part after part
    ddl.parquet                              the schema changes, with --ddl

A table's file holds ``sluice.lake.mirror.typed_changes.typed_change_schema``: ``op``, ``before`` and
``after`` as structs of the table's columns in the types of its Delta mirror, ``absent`` for the
columns a minimal image left out, and the change's binlog coordinates. A column whose values the
binlog leaves unsure (read by position: an integer of unknown signedness, text of an unknown
character set) holds each value's JSON text in sluice's encoding, marks included, and the file's
``sluice.columns`` metadata says so. Every file names its table, primary key and columns' MySQL
types in its metadata. A DDL that changes a table's columns starts the table's next file, and so
does writing a table again after its file was closed to keep at most 64 open. Files are
written as ``*.inprogress`` and renamed when complete; a dump that fails removes its unfinished
files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sluice.binlog.column_info import may_mark
from sluice.cdc.capture import ChangeCapture, CommittedTransaction
from sluice.cdc.jsonl import json_text
from sluice.cdc.records import RowChange
from sluice.errors import ConfigError
from sluice.lake.mirror.typed_changes import change_table
from sluice.lake.types.mirror_columns import MirrorColumn, mirror_columns
from sluice.lake.types.typed_images import typed_rows
from sluice.spark.source.change_frame import columns_batch, record_batch

__all__ = ["ParquetDump", "output_folder"]

_FLUSH_ROWS = 16384  # changes held before they are written (one row group per table and flush)
_COMPRESSION = "zstd"
_MAX_OPEN = 64  # files open at once: a table written again after its file was closed starts its next part
#: Columns written with a dictionary: those that repeat; the images' values mostly do not.
_DICTIONARY = ["op", "db", "table", "file", "gtid"]


def output_folder(path: str) -> Path:
    """The folder ``--out`` names, made when missing; ``ConfigError`` when it holds anything."""
    out = Path(path)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {path}: not an empty folder; give a new or empty one (a dump never overwrites files)")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _segment(name: str) -> str:
    """A database or table name as one path segment: percent-encoded where a file system would care."""
    text = quote(name, safe=" -_$@+=,;~!'()")
    return text.replace(".", "%2E") if text in (".", "..") else text


@dataclass
class _Table:
    """One table's open file and the layout its rows are written in."""

    db: str
    name: str
    columns: tuple[MirrorColumn, ...]
    primary_key: tuple[str, ...]
    unsure: tuple[str, ...]
    parts: int = 0
    writer: pq.ParquetWriter | None = None
    path: Path | None = None
    rows: int = 0

    def metadata(self) -> dict[str, str]:
        return {
            "sluice.db": self.db, "sluice.table": self.name, "sluice.primary_key": json.dumps(list(self.primary_key)),
            "sluice.columns": json.dumps([{"name": c.name, "mysql_type": c.mysql_type,
                                           **({"json_text": True} if c.name in self.unsure else {})}
                                          for c in self.columns]),
        }


@dataclass
class ParquetDump:
    """Takes a capture's committed transactions (``add``) and writes them under ``out`` (``close``)."""

    out: Path
    capture: ChangeCapture
    exact_only: bool = False  # decode every image one by one (the reference the column-wise reads equal)
    files: int = 0
    changes: int = 0
    _tables: dict[tuple[str, str], _Table] = field(default_factory=dict)
    _open: dict[int, _Table] = field(default_factory=dict)  # the tables with a file open, least recent first
    _layouts: dict[int, tuple[Any, _Table]] = field(default_factory=dict)
    _core_rows: Any = None  # the compiled core's ChangeRows of the transactions held
    _records: list[Any] = field(default_factory=list)
    _commits: list[int] = field(default_factory=list)
    _held: int = 0
    _ddl: list[pa.Table] = field(default_factory=list)
    # Parquet is encoded and written on a thread of its own (pyarrow lets go of the GIL there) while
    # the next changes are decoded; a flush waits for the writes of the one before.
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, "parquet"))
    _writes: list[Future[None]] = field(default_factory=list)

    def add(self, committed: CommittedTransaction) -> None:
        """Hold one transaction's changes; write what is held first when a table's layout changed."""
        tx = committed.transaction
        touched = ({(m[1], m[2]) for m in committed.columns.metas if m[0] != "ddl"} if committed.columns is not None
                   else {(r.db, r.table) for r in committed.records if isinstance(r, RowChange)})
        self._follow_layouts(touched)
        if committed.columns is not None and self._core_rows is not None and self._typed_differ(committed.columns):
            self.flush()
        commit_us = tx.commit_us if tx.commit_us is not None else tx.ts * 1_000_000
        if committed.columns is not None:
            if self._core_rows is None:
                self._core_rows = type(committed.columns)()
            self._core_rows.extend(committed.columns, tx.rows_gtid, commit_us)
            self._held += committed.columns.length
        else:
            self._records.extend(committed.records)
            self._commits.extend([commit_us] * len(committed.records))
            self._held += len(committed.records)
        if self._held >= _FLUSH_ROWS:
            self.flush()

    def _typed_differ(self, rows: Any) -> bool:
        """Whether a transaction's typed images keep other columns than those held (a NaN, or a JSON
        document whose text the core leaves to its object, leaves its column untyped): together, a
        column typed in one and not in the other would be typed in neither."""
        held = self._core_rows.typed
        return any(key in held and images.untyped != held[key].untyped for key, images in rows.typed.items())

    def _follow_layouts(self, touched: Iterable[tuple[str, str]]) -> None:
        for key in touched:
            table_map, resolved = self.capture.layouts[key]
            seen = self._layouts.get(id(resolved))
            current = self._tables.get(key)
            if seen is not None and seen[0] is resolved and current is seen[1]:
                continue
            columns, unsure = _columns(table_map, resolved)
            if current is not None and current.columns == columns and current.primary_key == resolved.primary_key:
                self._layouts[id(resolved)] = (resolved, current)
                continue
            self.flush()  # rows held were decoded in the layout before
            if current is not None:
                self._finish(current)
            table = _Table(key[0], key[1], columns, tuple(resolved.primary_key), unsure,
                           parts=current.parts if current is not None else 0)
            self._tables[key] = table
            self._layouts[id(resolved)] = (resolved, table)

    def flush(self) -> None:
        """Write the changes held: one row group per table."""
        self._wait()
        if not self._held:
            return
        typed: dict[Any, Any] = {}
        if self._core_rows is not None:
            batch = columns_batch(self._core_rows)
            typed = self._core_rows.typed
        else:
            batch = record_batch(self._records, self._commits)
        self._core_rows, self._records, self._commits, self._held = None, [], [], 0
        rows = pa.Table.from_batches([batch])
        ddl = pc.equal(rows.column("op"), "ddl")
        if pc.any(ddl).as_py():
            self._ddl.append(rows.filter(ddl))
            rows = rows.filter(pc.invert(ddl))
        names = pc.binary_join_element_wise(rows.column("db"), rows.column("table"), "\x00")
        for key in pc.unique(names).to_pylist():
            db, name = key.split("\x00", 1)
            part = rows.filter(pc.equal(names, key))
            table = self._tables[(db, name)]
            images = None if (db, name) not in typed else typed_rows([typed[(db, name)]], part.num_rows)
            self._write(table, change_table(table.columns, part, images, exact_only=self.exact_only))

    def _write(self, table: _Table, changes: pa.Table) -> None:
        if table.writer is None:
            while len(self._open) >= _MAX_OPEN:  # many tables: close the one written least recently
                self._finish(next(iter(self._open.values())))
            folder = self.out / "tables" / _segment(table.db) / _segment(table.name)
            folder.mkdir(parents=True, exist_ok=True)
            table.path = folder / f"part-{table.parts:05d}.parquet.inprogress"
            table.parts += 1
            table.writer = pq.ParquetWriter(table.path, changes.schema.with_metadata(table.metadata()),
                                            compression=_COMPRESSION, use_dictionary=_DICTIONARY)
        self._open.pop(id(table), None)
        self._open[id(table)] = table
        changes = changes.replace_schema_metadata(table.metadata())
        self._writes.append(self._pool.submit(table.writer.write_table, changes))
        table.rows += changes.num_rows
        self.changes += changes.num_rows

    def _wait(self) -> None:
        """Wait for the writes under way; the first one's error is raised."""
        writes, self._writes = self._writes, []
        for write in writes:
            write.result()

    def _finish(self, table: _Table) -> None:
        self._wait()
        self._open.pop(id(table), None)
        if table.writer is None or table.path is None:
            return
        table.writer.close()
        os.replace(table.path, table.path.with_suffix(""))
        table.writer = None
        self.files += 1

    def close(self) -> None:
        """Write what is held and complete every file."""
        self.flush()
        for table in self._tables.values():
            self._finish(table)
        self._pool.shutdown()
        if self._ddl:
            pq.write_table(_ddl_table(pa.concat_tables(self._ddl)), self.out / "ddl.parquet", compression=_COMPRESSION)
            self.files += 1

    def abandon(self) -> None:
        """A failed dump: close and remove the files not complete."""
        self._pool.shutdown(cancel_futures=True)
        for table in self._tables.values():
            if table.writer is not None and table.path is not None:
                table.writer.close()
                table.path.unlink(missing_ok=True)
                table.writer = None

    @property
    def tables(self) -> int:
        """Tables that have changes written."""
        return sum(1 for t in self._tables.values() if t.rows)


def _columns(table_map: Any, resolved: Any) -> tuple[tuple[MirrorColumn, ...], tuple[str, ...]]:
    """A table's columns in their mirror types, a column whose values may be marked as JSON text;
    and the names of those."""
    columns = mirror_columns(table_map, resolved.columns)
    out, unsure = [], []
    for c, t, m, info in zip(columns, table_map.column_types, table_map.column_meta, resolved.columns, strict=True):
        if may_mark(t, m, info):
            out.append(replace(c, arrow_type=pa.string(), spark_type="string", convert=json_text))
            unsure.append(c.name)
        else:
            out.append(c)
    return tuple(out), tuple(unsure)


def _ddl_table(rows: pa.Table) -> pa.Table:
    """The schema changes: their coordinates and the statement's fields."""
    statements = [json.loads(text) for text in rows.column("ddl").to_pylist()]
    return pa.table({
        "db": rows.column("db"),
        "sql": pa.array([s["sql"] for s in statements], pa.string()),
        "kind": pa.array([s["kind"] for s in statements], pa.string()),
        "tables": pa.array([s["tables"] for s in statements], pa.list_(pa.string())),
        "understood": pa.array([s.get("understood", True) for s in statements], pa.bool_()),
        "default_db": pa.array([s.get("default_db") for s in statements], pa.string()),
        **{name: rows.column(name) for name in ("file", "pos", "gtid", "ts", "commit_ts")},
    })


def dump(capture: ChangeCapture, transactions: Iterable[CommittedTransaction], out: Path, *,
         exact_only: bool = False) -> ParquetDump:
    """Write the transactions' changes under ``out``; the finished dump (its counts)."""
    writer = ParquetDump(out, capture, exact_only)
    try:
        for committed in transactions:
            writer.add(committed)
        writer.close()
    except BaseException:
        writer.abandon()
        raise
    return writer
