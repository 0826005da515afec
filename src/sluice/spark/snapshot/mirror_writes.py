"""The snapshot's writes into the mirrors: a chunk appended as the data file its task wrote, or merged.

A mirror with no rows when its snapshot is planned (``mirror_empty``) takes its chunks as appends:
``append_target`` tells the chunk's task where to write its data file and ``append_chunk`` commits
that file; a mirror that holds rows takes each chunk as a MERGE of its rows (``merge_chunk``). Each
commit carries the chunk's sequence number as a Delta app transaction, by which
``settle_interrupted`` tells, after a crash, whether the write under way landed.
"""

from __future__ import annotations

from typing import Any

from deltalake import CommitProperties, DeltaTable, Transaction
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import DeltaError

from sluice.binlog.position import Checkpoint
from sluice.cdc.records import RowChange
from sluice.cdc.schema import TableSchema
from sluice.errors import DataLossError, SchemaError
from sluice.lake.changelog.schema import CHANGELOG_SCHEMA
from sluice.lake.data_files import add_action
from sluice.lake.layout import Lake
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.sink import DeltaLake
from sluice.lake.types.mirror_columns import mirror_schema
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.snapshot.state import SnapshotState

__all__ = ["append_chunk", "append_target", "merge_chunk", "mirror_empty", "settle_interrupted"]


def settle_interrupted(lake: DeltaLake, store: Lake, state: SnapshotState) -> None:
    """A MERGE interrupted by a crash either landed (keep its watermarks) or not (read it again)."""
    for name, table in state.tables.items():
        writing = table.get("writing")
        if not writing:
            continue
        db, _, t = name.partition(".")
        path = lake.table_path(db, t)
        landed = False
        dt = lake.table(path)
        if dt is not None:
            version = dt.transaction_version(lake.app_id)
            landed = version is not None and int(version) >= int(writing["seq"])
        if landed:
            table["done"][writing["chunk"]] = {k: writing[k] for k in ("low", "high", "rows")}
        table["writing"] = None
        state.save(store)


def mirror_empty(lake: DeltaLake, db: str, name: str) -> bool:
    """Whether the mirror of ``db.name`` has no rows (no table, or no data files): then the chunks,
    disjoint key ranges, are appended instead of merged."""
    path = lake.table_path(db, name)
    dt = lake.table(path)
    return dt is None or not dt.file_uris()


def append_target(lake: DeltaLake, store: Lake, table: dict[str, Any]) -> dict[str, Any]:
    """Where the table's chunks are appended (its tasks write the data files), else {}."""
    if not table.get("append"):
        return {}
    schema = TableSchema.from_json(table["schema"])
    return {"folder": lake.table_path(schema.db, schema.name), "lake": store.uri,
            "storage": dict(store.options)}


def append_chunk(lake: DeltaLake, mirrors: dict[str, DeltaTable], table: dict[str, Any], seq: int,
                 added: dict[str, Any], flavor: str | None) -> None:
    """Commit the data file a chunk's task wrote into a mirror that held no rows before the
    snapshot, as app transaction ``seq``."""
    if not added:
        return  # as a MERGE of no changes: nothing is committed
    schema = TableSchema.from_json(table["schema"])
    name = f"{schema.db}.{schema.name}"
    wanted = mirror_schema(mirror_columns_for_schema(schema, flavor or None))
    path = lake.table_path(schema.db, schema.name)
    txn = CommitProperties(app_transactions=[Transaction(lake.app_id, seq)])
    try:
        dt = mirrors.get(path)
        if dt is not None:
            dt.update_incremental()  # the commits since (a handle does not follow its own)
        elif (dt := lake.table(path)) is None:  # as the pipeline's MERGE creates it
            dt = DeltaTable.create(path, wanted, mode="ignore", storage_options=lake.options,
                                   configuration=lake.mirror_configuration)
        mirrors[path] = dt
        if dt.schema() != DeltaSchema.from_arrow(wanted):
            raise SchemaError(
                f"the Delta mirror of {name} does not take the snapshot's rows (its columns differ from the "
                f"table's); re-snapshot the table: remove {path} and capture the table again"
            )
        dt.create_write_transaction([add_action(added)], "append", wanted, commit_properties=txn)
    except DeltaError as exc:
        raise DataLossError(
            f"the Delta commit of snapshot chunk {seq} to the mirror of {name} ({path}) failed ({exc}); "
            "nothing of it was committed. Fix the cause (storage, permissions, another writer) and restart: "
            "the snapshot resumes at that chunk"
        ) from exc


def merge_chunk(lake: DeltaLake, table: dict[str, Any], seq: int, rows: list[dict[str, Any]], at: Checkpoint,
                flavor: str | None, columns: Any = None) -> None:
    """MERGE a chunk's rows into a mirror that held rows before the snapshot (or whose columns
    ``columns``, the ``ColumnRules``, keep out or hash: its rows masked here)."""
    schema = TableSchema.from_json(table["schema"])
    if columns is not None:
        rows = [columns.mask_row(schema.db, schema.name, row) for row in rows]
        schema = columns.mask_schema(schema)
    columns = mirror_columns_for_schema(schema, flavor or None)
    pk = tuple(schema.primary_key) or tuple(table["key"])
    changes = [RowChange("insert", schema.db, schema.name, None, row, pk, at.file, at.pos, i, None, 0)
               for i, row in enumerate(rows)]
    empty_log = CHANGELOG_SCHEMA.empty_table()
    lake.write_batch(seq, [TableBatch(schema.db, schema.name, columns, pk, changes)], changelog=empty_log)
