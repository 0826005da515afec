"""One snapshot chunk, read and reconciled on an executor (a Spark task of ``SnapshotRunner``).

The task reads the chunk between a low and a high binlog watermark with a connection of its own,
reads the table's binlog changes between the two and reconciles them with the rows, so the chunk
holds the table's rows as of its high watermark. A table that was renamed, dropped or altered
since it was planned (the chunk's ``SELECT`` fails with one of ``TABLE_CHANGED``) returns a
``ChunkResult`` without watermarks: the runner plans it again. Values that do not fit the planned
columns return the error's text too: the runner re-plans when the binlog shows DDL on the table,
else raises it. The driver hands each task a ``ChunkTask`` and gets a ``ChunkResult`` back. A
connection lost or stalled (``ConnectionConfig.deadline``) is made again and the chunk read from
its start, as it is when the address reached another server between the chunk's ``SELECT`` and
the end of its binlog window (``SourceMovedError``): a chunk's watermarks and its window are one
server's, each watermark with the executed GTID set there (``cdc.table_read.watermarks``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sluice.binlog.position import Checkpoint
from sluice.cdc.follow import FollowConfig, retrying
from sluice.cdc.schema import Catalog, TableSchema
from sluice.cdc.table_read.chunks import Chunk, ChunkRead
from sluice.cdc.table_read.reader import (
    TABLE_CHANGED,
    LowMark,
    TablePlan,
    prepare_session,
    read_chunk,
    read_chunk_raw,
)
from sluice.cdc.table_read.reconcile import key_order, reconcile, reconcile_keys
from sluice.cdc.table_read.watermarks import chunk_window
from sluice.dsn import parse_dsn
from sluice.errors import SchemaError, ServerError, SluiceError, carry, storage_full
from sluice.io.connection import Connection
from sluice.lake.data_files import write_data_file
from sluice.lake.layout import open_lake
from sluice.lake.types.mirror_columns import to_arrow_table
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.snapshot.chunk_arrow import chunk_table, column_builders, integer_keys_in_order, key_values
from sluice.spark.snapshot.text_rows import split_rows

__all__ = ["ChunkResult", "ChunkTask", "read_and_reconcile"]

@dataclass(frozen=True, slots=True)
class ChunkTask:
    """A chunk task's input: the source, the catalog and the table as planned, the chunk, and
    where its rows go."""

    dsn: str
    catalog: dict[str, Any]  # ``Catalog.to_json`` as planned
    schema: dict[str, Any]  # the table's ``TableSchema.to_json``
    key: tuple[str, ...]  # the columns the chunks are cut on
    chunk: dict[str, Any]  # ``Chunk.to_json``
    flavor: str  # the server's, "" when not known
    #: Where the chunk's rows are appended, ``{"folder": the mirror's URI, "lake": the lake's URI,
    #: "storage": its options}``; empty for a chunk that is MERGEd.
    append: dict[str, Any]
    mark: dict[str, Any] | None = None  # MySQL: the low watermark the driver took ahead (``LowMark.to_json``)
    #: Boundaries the driver knows exactly (``Checkpoint.to_json``: the snapshot's start, chunks' high
    #: watermarks), from which the chunk's window is read forward (``watermarks.chunk_window``)
    known: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class ChunkResult:
    """What a chunk task found: the chunk, its watermarks and row count, and its rows: the data file
    it wrote into the mirror's folder (``appended``: its add fields, empty for no rows) or the decoded
    rows to MERGE (``merged``). No watermarks: the table no longer fits its plan (renamed, dropped or
    altered since), and ``error`` says which value did not fit, if that was why; or ``failure``
    holds the sluice error that ends the snapshot."""

    chunk: dict[str, Any]
    low: dict[str, Any] | None
    high: dict[str, Any] | None
    rows: int = 0
    appended: dict[str, Any] | None = None
    merged: list[dict[str, Any]] | None = None
    error: str | None = None
    failure: str | None = None  # a sluice error that ends the snapshot, as ``carry``'s line

    @property
    def stale(self) -> bool:
        """The table no longer fits the plan the chunk was cut by: plan it again."""
        return self.low is None


def read_and_reconcile(task: ChunkTask) -> ChunkResult:
    """A Spark task: read one chunk between watermarks and reconcile it with the binlog between them
    (``ChunkResult`` says what it found)."""
    try:
        return _read_chunk_task(task)
    except ServerError as exc:
        if exc.errno in TABLE_CHANGED:  # renamed, dropped or altered since it was planned: plan it again
            return ChunkResult(task.chunk, None, None)
        typed: SluiceError = exc
    except SchemaError as exc:  # values that do not fit the planned columns: the runner asks the binlog why
        return ChunkResult(task.chunk, None, None, error=str(exc))
    except SluiceError as exc:
        typed = exc
    except OSError as exc:
        full = storage_full(exc, str(exc.filename or task.append.get("folder") or "the lake"))
        if full is None:
            raise
        typed = full
    # Returned, not raised: a task that fails has Spark's executor log its Python traceback on
    # standard error. The driver raises it, typed, from the chunk's result (``waves.in_waves``).
    return ChunkResult(task.chunk, None, None, failure=carry(typed))


def _on_source(task: ChunkTask, schema: TableSchema, read: Any) -> Any:
    """``read(conn)`` on a connection of its own in the snapshot's session state, then the chunk's
    window: ``(low, high, rows, changes)`` with both watermarks exact. Read again from the start on a
    new connection while the connection is lost or stalls or the address reaches another server
    (``retrying``)."""
    config = parse_dsn(task.dsn)
    known = [Checkpoint.from_json(p) for p in task.known]

    def attempt() -> Any:
        with Connection.open(config) as conn:
            prepare_session(conn)
            low, high, rows = read(conn)
        low, high, changes = chunk_window(config, Catalog.from_json(task.catalog), schema, task.flavor, low, high,
                                          known)
        return low, high, rows, changes

    return retrying(FollowConfig(config, retries=8), "reading a snapshot chunk", attempt)


def _read_chunk_task(task: ChunkTask) -> ChunkResult:
    early = LowMark.from_json(task.mark) if task.mark else None  # MySQL: the driver took the low watermark ahead
    flavor, key = task.flavor, task.key
    schema = TableSchema.from_json(task.schema)
    chunk = Chunk.from_json(task.chunk)
    plan = TablePlan(schema, key, (chunk,), 0)
    order = key_order(schema, key)
    if not task.append:
        low, high, read, changes = _on_source(task, schema, lambda conn: _as_window(
            read_chunk(conn, plan, chunk, early=early)))
        rows = reconcile(ChunkRead(chunk, low, high, read), changes, order)
        return ChunkResult(task.chunk, low.to_json(), high.to_json(), len(rows), merged=rows)
    columns = mirror_columns_for_schema(schema, flavor or None)
    builders = column_builders(schema, columns, flavor or None)
    low, high, result, changes = _on_source(task, schema, lambda conn: read_chunk_raw(conn, plan, chunk,
                                                                                       early=early))
    values = split_rows(result.blocks, len(schema.columns))
    del result
    if changes or not integer_keys_in_order(schema, key, chunk.lower, chunk.upper, values):
        keep, images = reconcile_keys(chunk, low, high, key_values(schema, key, flavor or None, values), changes, order)
    else:  # nothing to reconcile and the rows in order: what reconcile_keys finds, without a tuple per row
        keep, images = None, []
    table = chunk_table(columns, builders, values)
    if keep is not None:
        table = table.take(pa.array(keep, pa.int64()))
    if images:
        table = pa.concat_tables([table, to_arrow_table(columns, images)])
    _check_keys(schema, tuple(schema.primary_key) or tuple(key), table)
    if not table.num_rows:
        return ChunkResult(task.chunk, low.to_json(), high.to_json(), 0, appended={})
    # The mirror's data file, written here and committed by the driver in the chunk's turn.
    store = open_lake(task.append["lake"], task.append["storage"])
    written = write_data_file(table, task.append["folder"], store=store)
    return ChunkResult(task.chunk, low.to_json(), high.to_json(), table.num_rows, appended=written)


def _as_window(read: ChunkRead) -> tuple[Checkpoint, Checkpoint, list[dict[str, Any]]]:
    return read.low, read.high, read.rows


def _check_keys(schema: TableSchema, pk: tuple[str, ...], rows: pa.Table) -> None:
    name = f"{schema.db}.{schema.name}"
    for k in pk:
        if k not in rows.column_names:
            raise SchemaError(f"{name}: primary key column {k!r} is not among the table's columns "
                              f"({', '.join(rows.column_names)}); the schema sluice holds for the table is "
                              "inconsistent")
        if rows.column(k).null_count:
            raise SchemaError(
                f"{name}: primary key column {k!r} of a row of the snapshot has no mirror value (e.g. a zero "
                "date); such a row cannot be mirrored — exclude the table from the mirror"
            )
