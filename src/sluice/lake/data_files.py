"""Delta data files written outside a delta-rs writer, and their ``add`` actions.

The executors' staging (``sluice.spark.source.staging``) writes the change log's Parquet files, the
snapshot's tasks write a mirror's, and a first batch into an empty mirror is appended as files
written one per core (``append_data_files``); each file's ``add`` action carries the statistics
Delta's data skipping reads (``delta_stats``). Nothing here commits but ``append_data_files``,
which commits its files as one transaction with the caller's app transaction.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable
from typing import Any, Final, Protocol

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import WriterProperties

from sluice.lake.storage import LakeStore

#: How the lake's Parquet files are written, by delta-rs as by ``write_data_file``:
#: zstd at level 1. delta-rs' default, snappy, makes a large MERGE slower and its files larger.
LAKE_WRITER: Final = WriterProperties(compression="ZSTD", compression_level=1)

#: The Delta table property that turns the Change Data Feed on (``sluice.lake.maintenance.change_feed``):
#: whoever writes a table's files writes its change data files too.
CHANGE_FEED: Final = "delta.enableChangeDataFeed"

__all__ = [
    "CHANGE_FEED",
    "LAKE_WRITER",
    "DataFileWriter",
    "FileStats",
    "add_action",
    "append_data_files",
    "delta_stats",
    "has_change_feed",
    "write_data_file",
]

_MAX_BOUND_CHARS: Final = 32
_APPEND_ROWS: Final = 100_000


class FileSink(Protocol):
    """Where a whole file goes on an object store: a ``LakeStore``, or what PUTs it on another thread."""

    @property
    def remote(self) -> bool:
        """Whether the files go to an object store (else they are written to a path)."""

    def write_file(self, uri: str, data: bytes) -> None:
        """Write the whole file ``uri`` (its one PUT)."""


def write_data_file(table: pa.Table, folder: str, *, plain: Iterable[str] = (),
                    bounded: Iterable[str] | None = None, store: LakeStore | FileSink | None = None) -> dict[str, Any]:
    """Write ``table`` as a Parquet data file of the Delta table in ``folder``, not committed: its
    ``add`` action's fields (``path`` relative to the folder, ``size``, ``mtime``, ``stats``).
    ``plain``: columns of nearly distinct values, written without dictionary or page bounds (they
    only cost time); ``bounded``: the columns whose bounds the statistics give (all by default).
    zstd at level 1 writes the change log faster than snappy, and smaller."""
    file = DataFileWriter(folder, table.schema, store, plain=plain, bounded=bounded)
    file.write(table)
    return file.close()


def add_action(written: dict[str, Any]) -> Any:
    """The Delta ``add`` action (``deltalake.transaction.AddAction``) of a file ``write_data_file``
    wrote, to commit it with ``create_write_transaction``."""
    from deltalake.transaction import AddAction

    return AddAction(written["path"], written["size"], {}, written["mtime"], True, written["stats"])


def append_data_files(dt: Any, folder: str, rows: pa.Table, txn: Any, keep: pa.Array | None = None,
                      store: LakeStore | None = None) -> int:
    """Append ``rows`` (those ``keep`` marks, when given) to the Delta table ``dt`` in ``folder``
    with the app transaction of ``txn``: data files of ``_APPEND_ROWS`` rows or more, a file per
    core at once (Arrow filters and Parquet writes run without the GIL), committed as one
    transaction. The number of rows appended."""
    from concurrent.futures import ThreadPoolExecutor

    parts = max(1, min(os.cpu_count() or 1, -(-rows.num_rows // _APPEND_ROWS)))
    step = -(-rows.num_rows // parts)

    def write(i: int) -> dict[str, Any] | None:
        part = rows.slice(i * step, step)
        if keep is not None:
            part = part.filter(keep.slice(i * step, step))
        return write_data_file(part, folder, store=store) | {"rows": part.num_rows} if part.num_rows else None

    with ThreadPoolExecutor(max_workers=parts) as pool:
        added = [a for a in pool.map(write, range(parts)) if a is not None]
    dt.create_write_transaction([add_action(a) for a in added], "append", rows.schema, commit_properties=txn)
    return sum(a["rows"] for a in added)


def has_change_feed(dt: Any) -> bool:
    """Whether the Delta table ``dt`` writes its Change Data Feed."""
    return bool(dt.metadata().configuration.get(CHANGE_FEED, "false").strip().lower() == "true")


def delta_stats(table: pa.Table, bounded: Iterable[str] = ()) -> str:
    """The Delta ``add`` action's statistics of a data file: row and null counts, and exact
    bounds of the ``bounded`` columns that are integers or short texts (a bound is left out rather
    than truncated; other types' bounds are not written)."""
    stats = FileStats(bounded)
    stats.add(table)
    return stats.json()


class FileStats:
    """``delta_stats`` of a data file written a table at a time."""

    def __init__(self, bounded: Iterable[str] = ()) -> None:
        self.wanted = set(bounded)
        self.rows = 0
        self.nulls: dict[str, int] = {}
        self.low: dict[str, Any] = {}
        self.high: dict[str, Any] = {}
        self.unbounded: set[str] = set()  # a column one of whose parts has no exact bound

    def add(self, table: pa.Table) -> None:
        """Count in the rows of ``table``."""
        self.rows += table.num_rows
        for field in table.schema:
            column = table.column(field.name)
            if pa.types.is_nested(field.type):
                continue
            self.nulls[field.name] = self.nulls.get(field.name, 0) + column.null_count
            if field.name not in self.wanted or column.null_count == len(column) or field.name in self.unbounded:
                continue
            if not (pa.types.is_integer(field.type) or pa.types.is_string(field.type)):
                continue
            bounds = pc.min_max(column)
            lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
            if isinstance(lo, str) and max(len(lo), len(hi)) > _MAX_BOUND_CHARS:
                self.unbounded.add(field.name)
                self.low.pop(field.name, None)
                self.high.pop(field.name, None)
                continue
            if field.name in self.low:
                lo, hi = min(lo, self.low[field.name]), max(hi, self.high[field.name])
            self.low[field.name], self.high[field.name] = lo, hi

    def json(self) -> str:
        """The statistics as the ``add`` action carries them."""
        return json.dumps({"numRecords": self.rows, "minValues": self.low, "maxValues": self.high,
                           "nullCount": self.nulls})


class DataFileWriter:
    """A Parquet data file of the Delta table in ``folder``, written a table at a time (a row group
    each): a local file as it goes, an object in one PUT at ``close``. ``close`` gives the ``add``
    action's fields. ``plain`` and ``bounded`` as ``write_data_file`` takes them."""

    def __init__(self, folder: str, schema: pa.Schema, store: LakeStore | FileSink | None = None, *,
                 plain: Iterable[str] = (), bounded: Iterable[str] | None = None) -> None:
        import pyarrow.parquet as pq

        self.folder, self.store = folder, store
        self.name = f"part-00000-{uuid.uuid4()}-c000.zstd.parquet"
        self.stats = FileStats(schema.names if bounded is None else bounded)
        # one PUT of the whole file at close: an object store has no append
        self.sink: Any = pa.BufferOutputStream() if store is not None and store.remote else None
        if self.sink is None:
            os.makedirs(folder, exist_ok=True)
        skip = set(plain)
        short = [n for n in schema.names if n not in skip]
        self.writer = pq.ParquetWriter(self.sink if self.sink is not None else f"{folder}/{self.name}", schema,
                                       compression="zstd", compression_level=1, use_dictionary=short,
                                       write_statistics=short)

    def write(self, table: pa.Table) -> None:
        """Append ``table``'s rows."""
        self.writer.write_table(table)
        self.stats.add(table)

    def close(self) -> dict[str, Any]:
        """Finish the file: its ``add`` action's fields, as ``write_data_file`` gives them."""
        self.writer.close()
        if self.sink is not None:
            assert self.store is not None
            data = self.sink.getvalue().to_pybytes()
            self.store.write_file(f"{self.folder}/{self.name}", data)
            size = len(data)
        else:
            size = os.path.getsize(f"{self.folder}/{self.name}")
        return {"path": self.name, "size": size, "mtime": int(time.time() * 1000), "stats": self.stats.json()}
