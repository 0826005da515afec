"""The snapshot's writes into the mirrors: a chunk appended as the data file its task wrote, or merged.

A mirror with no rows when its snapshot is planned (``mirror_empty``) takes its chunks as appends:
``append_target`` tells the chunk's task where to write its data file and ``append_chunk`` commits
that file; a mirror that holds rows takes each chunk as a MERGE of its rows (``merge_chunk``). Each
commit carries the chunk's sequence number as a Delta app transaction, by which
``settle_interrupted`` tells, after a crash, whether the write under way landed. A table routed into
the mirror of several (``--route``) is merged into it with an app id of its own (``RoutedChunks``).
"""

from __future__ import annotations

from typing import Any

from deltalake import CommitProperties, DeltaTable, Transaction
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import DeltaError

from sluice.binlog.position import Checkpoint
from sluice.cdc.records import RowChange
from sluice.cdc.routes import Routes
from sluice.cdc.schema import TableSchema
from sluice.errors import DataLossError, SchemaError
from sluice.lake.changelog.schema import CHANGELOG_SCHEMA
from sluice.lake.data_files import add_action
from sluice.lake.layout import Lake
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.mirror.routed import RoutedLayout, column_names, delete_rows, routed_batch, routed_layout
from sluice.lake.sink import DeltaLake
from sluice.lake.types.mirror_columns import mirror_schema
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.snapshot.state import SnapshotState

__all__ = ["RoutedChunks", "append_chunk", "append_target", "merge_chunk", "mirror_empty", "settle_interrupted"]


def settle_interrupted(lake: DeltaLake, store: Lake, state: SnapshotState, routed: RoutedChunks | None = None) -> None:
    """A MERGE interrupted by a crash either landed (keep its watermarks) or not (read it again)."""
    for name, table in state.tables.items():
        writing = table.get("writing")
        if not writing:
            continue
        db, _, t = name.partition(".")
        into, target = (lake, (db, t)) if routed is None else routed.into(db, t)
        path = into.table_path(*target)
        landed = False
        dt = into.table(path)
        if dt is not None:
            version = dt.transaction_version(into.app_id)
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
                flavor: str | None, columns: Any = None, routed: RoutedChunks | None = None) -> None:
    """MERGE a chunk's rows into a mirror that held rows before the snapshot (or whose columns
    ``columns``, the ``ColumnRules``, keep out or hash: its rows masked here; or that ``routed``
    sends into the mirror of several tables)."""
    schema = TableSchema.from_json(table["schema"])
    if columns is not None:
        rows = [columns.mask_row(schema.db, schema.name, row) for row in rows]
        schema = columns.mask_schema(schema)
    columns = mirror_columns_for_schema(schema, flavor or None)
    pk = tuple(schema.primary_key) or tuple(table["key"])
    changes = [RowChange("insert", schema.db, schema.name, None, row, pk, at.file, at.pos, i, None, 0)
               for i, row in enumerate(rows)]
    empty_log = CHANGELOG_SCHEMA.empty_table()
    tb = TableBatch(schema.db, schema.name, columns, pk, changes)
    if routed is not None and routed.routes.target(schema.db, schema.name) is not None:
        lake, target = routed.into(schema.db, schema.name)
        tb = routed_batch(routed.layout(target), [tb])
    lake.write_batch(seq, [tb], changelog=empty_log)


class RoutedChunks:
    """The snapshot's writes of tables ``routes`` sends into a mirror of several: each table's chunks
    are MERGEd (never appended: the mirror holds the other tables' rows) with a Delta app id of the
    table's own, since each table numbers its chunks from 0 and they share the mirror's log."""

    def __init__(self, lake: DeltaLake, routes: Routes, flavor: str | None, columns: Any = None) -> None:
        self.lake = lake
        self.routes = routes
        self.flavor = flavor
        self.columns = columns  # the ColumnRules: the layout is of the masked tables
        self.schemas: list[TableSchema] = []  # the captured tables, as the snapshot planned them
        self._lakes: dict[tuple[str, str], DeltaLake] = {}
        self._order: dict[tuple[str, str], list[str]] = {}  # a routed mirror's column names, read once

    @classmethod
    def of(cls, lake: DeltaLake, routes: Routes | None, flavor: str | None, columns: Any,
           catalog: Any) -> RoutedChunks | None:
        """The routed writes of a snapshot pass that planned with ``catalog`` (None: no routes)."""
        if routes is None:
            return None
        routed = cls(lake, routes, flavor, columns)
        routed.schemas = [t.selected() for t in catalog.tables()]
        return routed

    def into(self, db: str, table: str) -> tuple[DeltaLake, tuple[str, str]]:
        """The lake (with the table's app id) and the mirror a table's chunks are written to."""
        target = self.routes.target(db, table)
        if target is None:
            return self.lake, (db, table)
        if (db, table) not in self._lakes:
            self._lakes[(db, table)] = DeltaLake(self.lake.store, f"{self.lake.app_id}-{db}.{table}",
                                                 change_feed=bool(self.lake.mirror_configuration))
        return self._lakes[(db, table)], target

    def layout(self, target: tuple[str, str]) -> RoutedLayout:
        """The routed mirror's layout from the tables' schemas (``RouteConflictError`` when they disagree),
        its columns in the mirror's order."""
        if target not in self._order:
            self._order[target] = column_names(self.lake.table(self.lake.table_path(*target))) or []
        return routed_layout(self.routes, target, self.schemas, self.flavor,
                             self.columns and self.columns.mask_schema, self._order[target])

    def plan(self, schema: TableSchema) -> bool:
        """Before a routed table's chunks are planned: its mirror exists, with the layout of every
        table routed there, and holds none of the table's rows (an earlier read of it goes). Whether
        the table is routed."""
        target = self.routes.target(schema.db, schema.name)
        if target is None:
            return False
        layout = self.layout(target)
        self.lake.flush(*target)
        if self.lake.create_mirror(*target, layout.columns):
            self._order[target] = [c.name for c in layout.columns]
        delete_rows(self.lake.table_path(*target), self.lake.options, schema.db, schema.name)
        self.lake.forget()
        return True
