"""One snapshot chunk, read and reconciled on an executor (a Spark task of ``SnapshotRunner``).

The task reads the chunk between a low and a high binlog watermark with a connection of its own,
reads the table's binlog changes between the two and reconciles them with the rows, so the chunk
holds the table's rows as of its high watermark. A table that was renamed, dropped or altered
since it was planned (the chunk's ``SELECT`` fails with one of ``TABLE_CHANGED``) returns no rows
(``None``): the runner plans it again. Values that do not fit the planned columns return the error's
text instead: the runner re-plans when the binlog shows DDL on the table, else raises it. A
connection lost or stalled (``ConnectionConfig.deadline``) is made again and the chunk read from
its start.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sluice.binlog.position import Checkpoint, position_key
from sluice.cdc.capture import CaptureConfig, ChangeCapture
from sluice.cdc.follow import FollowConfig, follow, retrying
from sluice.cdc.records import RowChange
from sluice.cdc.schema import Catalog, SchemaTracker, TableSchema
from sluice.cdc.snapshot.chunks import Chunk
from sluice.cdc.snapshot.reader import (
    TABLE_CHANGED,
    LowMark,
    TablePlan,
    prepare_session,
    read_chunk,
    read_chunk_raw,
)
from sluice.cdc.snapshot.reconcile import key_order, reconcile, reconcile_keys
from sluice.dsn import parse_dsn
from sluice.errors import SchemaError, ServerError
from sluice.io.connection import Connection
from sluice.lake.data_files import write_data_file
from sluice.lake.layout import open_lake
from sluice.lake.types.columns import to_arrow_table
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.snapshot.chunk_arrow import chunk_table, column_builders, integer_keys_in_order, key_values
from sluice.spark.snapshot.text_rows import split_rows

__all__ = ["ChunkPayload", "read_and_reconcile"]

#: A chunk task's input: dsn, catalog, table schema, key, chunk, flavor, where the chunk is appended
#: (``{"folder": the mirror's URI, "lake": the lake's URI, "storage": its options}``, or ``{}`` for a
#: MERGE), and (MySQL) the low watermark the driver took ahead (``LowMark.to_json``), or None.
ChunkPayload = tuple[str, dict[str, Any], dict[str, Any], list[str], dict[str, Any], str, dict[str, Any],
                     dict[str, Any] | None]


def _window_changes(config: Any, catalog_json: dict[str, Any], schema: TableSchema, flavor: str,
                    low: Checkpoint, high: Checkpoint) -> list[RowChange]:
    """The table's row changes committed in ``[low, high)``, read from the binlog."""
    changes: list[RowChange] = []
    if position_key(low.file, low.pos) >= position_key(high.file, high.pos):
        return changes
    tracker = SchemaTracker(Catalog.from_json(catalog_json), None, flavor=flavor)
    only = (schema.db, schema.name)
    capture = ChangeCapture(
        CaptureConfig(table_filter=lambda d, t: (d, t) == only), Checkpoint(low.file, low.pos), tracker
    )
    end = position_key(high.file, high.pos)
    for committed in follow(FollowConfig(config, until_end=True, heartbeat_period=0, retries=8), capture):
        if position_key(committed.start.file, committed.start.pos) >= end:
            break
        changes.extend(r for r in committed.records if type(r) is RowChange)
    return changes


def read_and_reconcile(payload: ChunkPayload
                        ) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None, int,
                                   dict[str, Any] | list[dict[str, Any]] | str | None]:
    """A Spark task: read one chunk between watermarks and reconcile it with the binlog between them.

    Returns the chunk, its watermarks, its row count and its rows: when appending, the mirror's
    data file the task wrote into the mirror's folder (``sluice.lake.data_files.write_data_file``: its
    ``add`` action's fields, empty for no rows), else decoded row dicts (for a MERGE). A chunk the
    table no longer fits returns no watermarks and, for values that did not fit its columns, the
    error's text.
    """
    try:
        return _read_chunk_task(payload)
    except ServerError as exc:
        if exc.errno in TABLE_CHANGED:  # renamed, dropped or altered since it was planned: plan it again
            return payload[4], None, None, 0, None
        raise
    except SchemaError as exc:  # values that do not fit the planned columns: the runner asks the binlog why
        return payload[4], None, None, 0, str(exc)


def _on_source(config: Any, read: Any) -> Any:
    """``read(conn)`` on a connection of its own in the snapshot's session state, read again from the
    start on a new connection while the connection is lost or stalls (``retrying``)."""

    def attempt() -> Any:
        with Connection.open(config) as conn:
            prepare_session(conn)
            return read(conn)

    return retrying(FollowConfig(config, retries=8), "reading a snapshot chunk", attempt)


def _read_chunk_task(payload: ChunkPayload) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], int,
                                                     dict[str, Any] | list[dict[str, Any]]]:
    dsn, catalog_json, schema_json, key, chunk_json, flavor, append, mark = payload
    early = LowMark.from_json(mark) if mark else None  # MySQL: the driver took the low watermark ahead
    schema = TableSchema.from_json(schema_json)
    chunk = Chunk.from_json(chunk_json)
    config = parse_dsn(dsn)
    plan = TablePlan(schema, tuple(key), (chunk,), 0)
    order = key_order(schema, tuple(key))
    if not append:
        read = _on_source(config, lambda conn: read_chunk(conn, plan, chunk, early=early))
        changes = _window_changes(config, catalog_json, schema, flavor, read.low, read.high)
        rows = reconcile(read, changes, order)
        return chunk_json, read.low.to_json(), read.high.to_json(), len(rows), rows
    columns = mirror_columns_for_schema(schema, flavor or None)
    builders = column_builders(schema, columns, flavor or None)
    low, high, result = _on_source(config, lambda conn: read_chunk_raw(conn, plan, chunk, early=early))
    values = split_rows(result.blocks, len(schema.columns))
    del result
    changes = _window_changes(config, catalog_json, schema, flavor, low, high)
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
        return chunk_json, low.to_json(), high.to_json(), 0, {}
    # The mirror's data file, written here and committed by the driver in the chunk's turn.
    store = open_lake(append["lake"], append["storage"])
    return chunk_json, low.to_json(), high.to_json(), table.num_rows, write_data_file(table, append["folder"],
                                                                                     store=store)


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
