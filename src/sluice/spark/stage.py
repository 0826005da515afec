"""The executors' half of the pipeline: a binlog range decoded straight into the lake's files.

With ``option("stageTo", LAKE)`` (what ``sluice run`` sets) the ``binlog`` stream source does not
hand its rows to Spark. Each task decodes its range into the change DataFrame's Arrow batches, as
without the option, and writes

- the range's change-log rows as one Parquet file in the change log's folder
  (``LAKE/_sluice/changes``), not part of the table until the driver commits it with the batch
  (``DeltaLake.write_batch(changelog_files=...)``);
- for each captured table with a primary key, the range's MERGE source (``columnar.merge_source``:
  the last state per key, typed mirror columns) as an Arrow IPC file in ``LAKE/_sluice/staging/<batch>/``;

and yields one small row per file (``STAGE_SCHEMA``): Spark carries these descriptors, not the
rows. The driver folds a table's sources over the ranges in binlog order, MERGEs, and commits the
change log last. A file that an attempt wrote and the driver never committed (a task retried, a
batch replayed after a crash) belongs to no table: the staging folder goes after every batch, and
the change log's strays are what Delta's ``VACUUM`` removes.

A source does not know the batch id: the pipeline sets it as the job's local property
``sluice.batch`` (``BATCH_PROPERTY``), which Spark hands to every task of the job.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from sluice.cdc.schema import Catalog, SchemaTracker
from sluice.errors import ConfigError

__all__ = [
    "BATCH_PROPERTY", "STAGE_ARROW_SCHEMA", "STAGE_SCHEMA", "append_data_files", "delta_stats", "layout_key",
    "stage_range", "staging_dir", "task_batch_id", "write_data_file",
]

BATCH_PROPERTY: Final = "sluice.batch"

#: One row per file a task wrote (``kind`` ``changes`` / ``table``) or schema change it met (``ddl``).
STAGE_SCHEMA: Final = (
    "kind STRING, db STRING, `table` STRING, path STRING, size BIGINT, mtime BIGINT, rows BIGINT, "
    "first_file STRING, first_pos BIGINT, first_row INT, last_file STRING, last_pos BIGINT, "
    "inserts BIGINT, updates BIGINT, deletes BIGINT, stats STRING, layout STRING, ddl STRING, "
    "commit_us ARRAY<BIGINT>, commit_rows ARRAY<BIGINT>, reconnects INT, attempt INT"
)
STAGE_ARROW_SCHEMA: Final = pa.schema([
    ("kind", pa.string()), ("db", pa.string()), ("table", pa.string()), ("path", pa.string()),
    ("size", pa.int64()), ("mtime", pa.int64()), ("rows", pa.int64()),
    ("first_file", pa.string()), ("first_pos", pa.int64()), ("first_row", pa.int32()),
    ("last_file", pa.string()), ("last_pos", pa.int64()),
    ("inserts", pa.int64()), ("updates", pa.int64()), ("deletes", pa.int64()),
    ("stats", pa.string()), ("layout", pa.string()), ("ddl", pa.string()),
    ("commit_us", pa.list_(pa.field("element", pa.int64()))),
    ("commit_rows", pa.list_(pa.field("element", pa.int64()))),
    ("reconnects", pa.int32()), ("attempt", pa.int32()),
])

# Delta data skipping reads these bounds: exact ones for the short columns, none for the images.
_BOUNDED: Final = ("op", "db", "table", "file", "gtid", "pos", "row", "batch_id")
_MAX_BOUND_CHARS: Final = 32
_APPEND_ROWS: Final = 100_000


def staging_dir(lake: str, batch_id: int) -> str:
    """Where a batch's MERGE sources are staged."""
    return f"{lake}/_sluice/staging/{batch_id}"


def task_batch_id() -> int:
    """The batch id the pipeline set for the running job."""
    from pyspark import TaskContext

    context = TaskContext.get()
    text = context.getLocalProperty(BATCH_PROPERTY) if context is not None else None
    if not text or not text.isdigit():
        raise ConfigError(
            'option("stageTo") writes a sluice lake\'s files and belongs to sluice run\'s pipeline, which '
            f"sets the job's batch id (local property {BATCH_PROPERTY}); read the stream without it"
        )
    return int(text)


def layout_key(columns: Iterable[Any], primary_key: Iterable[str]) -> str:
    """What a MERGE source was built for: the mirror's column names and types, and the key."""
    return json.dumps([[[c.name, str(c.arrow_type)] for c in columns], list(primary_key)])


def stage_range(batches: Iterable[pa.RecordBatch], tracker: SchemaTracker, lake: str,
                batch_id: int, *, reconnects: Callable[[], int] = lambda: 0,
                typed: Sequence[dict[Any, Any]] = ()) -> Iterator[pa.RecordBatch]:
    """Write a range's change batches (``sluice.spark.changes.ARROW_SCHEMA``, binlog order) to the
    lake's staging files; the descriptors of what was written. The tables are typed from the
    tracker's catalog once the range is read: a batch never spans a schema change of a captured
    table, so it is the one in force at every row (after the DDL, in a DDL's batch). The change-log
    file's descriptor also says how often the range's replication connection was made again
    (``reconnects``, asked once the range is read) and which attempt of the Spark task this is.
    ``typed``: the typed images the compiled core kept of the batches' tables, once they are read
    (``arrow_batches``); a table they hold whole is not parsed back from its JSON images."""
    from sluice.spark.batch_table import changelog_rows

    collected = list(batches)
    if not collected:
        return
    rows = pa.Table.from_batches(collected).combine_chunks()
    if rows.num_rows == 0:
        return
    out: list[dict[str, Any]] = [{**_write_changelog(changelog_rows(rows, batch_id), rows, lake),
                                  "reconnects": reconnects(), "attempt": _task_attempt()}]
    is_ddl = pc.equal(rows.column("op"), "ddl")
    if pc.any(is_ddl).as_py():
        for d in rows.filter(is_ddl).to_pylist():
            out.append({"kind": "ddl", "db": d["db"], "table": d["table"], "first_file": d["file"],
                        "first_pos": d["pos"], "ddl": d["ddl"], "rows": 1})
        rows = rows.filter(pc.invert(is_ddl))
    if rows.num_rows:
        out.extend(_stage_tables(rows, tracker.catalog, staging_dir(lake, batch_id), typed))
    yield pa.RecordBatch.from_pylist(out, schema=STAGE_ARROW_SCHEMA)


def _task_attempt() -> int:
    """Which attempt of its Spark task this is (0: the first), 0 outside a task."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return 0 if context is None else int(context.attemptNumber())


def write_data_file(table: pa.Table, folder: str, *, plain: Iterable[str] = (),
                    bounded: Iterable[str] | None = None) -> dict[str, Any]:
    """Write ``table`` as a Parquet data file of the Delta table in ``folder``, not committed: its
    ``add`` action's fields (``path`` relative to the folder, ``size``, ``mtime``, ``stats``).
    ``plain``: columns of nearly distinct values, written without dictionary or page bounds (they
    only cost time); ``bounded``: the columns whose bounds the statistics give (all by default).
    zstd at level 1 writes W1's change log faster than snappy and at half its size."""
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    name = f"part-00000-{uuid.uuid4()}-c000.zstd.parquet"
    skip = set(plain)
    short = [n for n in table.column_names if n not in skip]
    pq.write_table(table, f"{folder}/{name}", compression="zstd", compression_level=1, use_dictionary=short,
                   write_statistics=short)
    return {"path": name, "size": os.path.getsize(f"{folder}/{name}"), "mtime": int(time.time() * 1000),
            "stats": delta_stats(table, table.column_names if bounded is None else bounded)}


def add_action(written: dict[str, Any]) -> Any:
    """The Delta ``add`` action (``deltalake.transaction.AddAction``) of a file ``write_data_file``
    wrote, to commit it with ``create_write_transaction``."""
    from deltalake.transaction import AddAction

    return AddAction(written["path"], written["size"], {}, written["mtime"], True, written["stats"])


def append_data_files(dt: Any, folder: str, rows: pa.Table, txn: Any, keep: pa.Array | None = None) -> int:
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
        return write_data_file(part, folder) | {"rows": part.num_rows} if part.num_rows else None

    with ThreadPoolExecutor(max_workers=parts) as pool:
        added = [a for a in pool.map(write, range(parts)) if a is not None]
    dt.create_write_transaction([add_action(a) for a in added], "append", rows.schema, commit_properties=txn)
    return sum(a["rows"] for a in added)


def _write_changelog(log: pa.Table, rows: pa.Table, lake: str) -> dict[str, Any]:
    import numpy as np

    written = write_data_file(log, f"{lake}/_sluice/changes", plain=("before", "after", "json_diffs", "ddl"),
                              bounded=_BOUNDED)
    commits = rows.column("commit_ts").cast(pa.int64()).to_numpy()
    starts = np.concatenate([[0], np.flatnonzero(np.diff(commits)) + 1])
    counts = np.diff(np.concatenate([starts, [len(commits)]]))
    return {
        "kind": "changes", **written, "rows": log.num_rows,
        "first_file": rows.column("file")[0].as_py(), "first_pos": rows.column("pos")[0].as_py(),
        "first_row": rows.column("row")[0].as_py(),
        "last_file": rows.column("file")[-1].as_py(), "last_pos": rows.column("pos")[-1].as_py(),
        "commit_us": commits[starts].tolist(), "commit_rows": counts.tolist(),
    }


def delta_stats(table: pa.Table, bounded: Iterable[str] = ()) -> str:
    """The Delta ``add`` action's statistics of a data file: row and null counts, and exact
    bounds of the ``bounded`` columns that are integers or short texts (a bound is left out rather
    than truncated; other types' bounds are not written)."""
    nulls: dict[str, int] = {}
    low: dict[str, Any] = {}
    high: dict[str, Any] = {}
    wanted = set(bounded)
    for field in table.schema:
        column = table.column(field.name)
        if pa.types.is_nested(field.type):
            continue
        nulls[field.name] = column.null_count
        if field.name not in wanted or column.null_count == len(column):
            continue
        if not (pa.types.is_integer(field.type) or pa.types.is_string(field.type)):
            continue
        bounds = pc.min_max(column)
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        if isinstance(lo, str) and max(len(lo), len(hi)) > _MAX_BOUND_CHARS:
            continue
        low[field.name], high[field.name] = lo, hi
    return json.dumps({"numRecords": table.num_rows, "minValues": low, "maxValues": high, "nullCount": nulls})


def _stage_tables(rows: pa.Table, catalog: Catalog, folder: str,
                  typed: Sequence[dict[Any, Any]]) -> Iterator[dict[str, Any]]:
    """Each table's MERGE source, or a descriptor without a path when the per-row path must build
    it (no primary key, a minimal image, a partial JSON update, a value Arrow will not convert)."""
    from sluice.spark.columnar import merge_source, typed_merge_source
    from sluice.spark.layout import mirror_columns_for_schema
    from sluice.spark.typed_images import typed_rows

    names = pc.binary_join_element_wise(rows.column("db"), rows.column("table"), "\x00")
    keys = pc.unique(names).to_pylist()
    for key in keys:
        db, name = key.split("\x00", 1)
        part = rows if len(keys) == 1 else rows.filter(pc.equal(names, key))
        ops = dict(zip(*(v.to_pylist() for v in pc.value_counts(part.column("op")).flatten()), strict=True))
        entry: dict[str, Any] = {
            "kind": "table", "db": db, "table": name, "rows": part.num_rows,
            "first_file": part.column("file")[0].as_py(), "first_pos": part.column("pos")[0].as_py(),
            "first_row": part.column("row")[0].as_py(),
            "inserts": ops.get("insert", 0), "updates": ops.get("update", 0), "deletes": ops.get("delete", 0),
        }
        schema = catalog.get(db, name)
        if schema is not None and schema.primary_key:
            columns = mirror_columns_for_schema(schema, catalog.flavor)
            images = typed_rows((t[(db, name)] for t in typed if (db, name) in t), part.num_rows)
            source = None if images is None else typed_merge_source(columns, tuple(schema.primary_key), part, images)
            if source is None:
                source = merge_source(columns, tuple(schema.primary_key), part)
            if source is not None:
                os.makedirs(folder, exist_ok=True)
                path = f"{folder}/{uuid.uuid4()}.arrow"
                with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, source.schema) as writer:
                    writer.write_table(source)
                entry["path"] = path
                entry["layout"] = layout_key(columns, schema.primary_key)
        yield entry
