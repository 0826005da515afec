"""What the driver makes of one micro-batch the tasks staged: descriptors into table batches.

The tasks of ``sluice.spark.source.staging`` leave one descriptor per file they wrote
(``sluice.spark.source.descriptors``): the range's change-log file (``ChangelogFile``), a table's
MERGE source (``TableSource``) or a DDL statement (``DdlMet``).
``StagedBatch`` puts them in binlog order and says what to commit: the DDL, each table's changes
(its staged MERGE sources folded over the ranges, or its rows read back from the staged change log
for the per-row path), the change-log files as Delta add actions, and where the batch ends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
from deltalake.transaction import AddAction

from sluice.binlog.position import Checkpoint, furthest, position_key
from sluice.cdc.routes import Routes
from sluice.cdc.schema import SchemaHistory
from sluice.errors import ConfigError
from sluice.lake.at_once import run_at_once
from sluice.lake.changelog.rows import to_row_changes
from sluice.lake.data_files import add_action
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.mirror.merge_source import fold_sources, without_positions
from sluice.lake.mirror.pieces import AFTER_PENDING, StagedPiece, integer_key
from sluice.lake.mirror.routed import routed_batch, routed_layout
from sluice.lake.storage import LakeStore
from sluice.lake.types.mirror_columns import mirror_schema
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.snapshot.filter import SnapshotFilter
from sluice.spark.source.descriptors import ChangelogFile, DdlMet, TableSource, from_row
from sluice.spark.source.staging import layout_key

__all__ = ["StagedBatch", "table_batch", "table_batches"]

log = logging.getLogger(__name__)


class StagedBatch:
    """The descriptors of one staged micro-batch, in binlog order."""

    def __init__(self, staged: pa.Table) -> None:
        everything = sorted((from_row(row) for row in staged.to_pylist()), key=lambda d: d.first)
        self.files = [d for d in everything if isinstance(d, ChangelogFile)]  # the change-log files
        self.ddls = [{"db": d.db, "table": d.table, "file": d.first_file, "pos": d.first_pos, "ddl": d.ddl}
                     for d in everything if isinstance(d, DdlMet)]
        self.tables: dict[tuple[str, str], list[TableSource]] = {}  # (db, table) -> its ranges' sources
        for d in everything:
            if isinstance(d, TableSource):
                self.tables.setdefault((d.db, d.table), []).append(d)

    def changelog_actions(self) -> list[AddAction]:
        """The staged change-log files as the add actions of one Delta commit."""
        return [add_action(f.add_fields()) for f in self.files]

    def counts(self) -> list[tuple[str, str, int]]:
        """(``db.table``, insert|update|delete, changes) for every table of the batch."""
        return [(f"{db}.{name}", op, sum(p.count(op) for p in parts))
                for (db, name), parts in self.tables.items() for op in ("insert", "update", "delete")]

    def latencies(self, visible_us: int) -> tuple[np.ndarray, list[int]]:
        """Seconds from each transaction's commit on the source to ``visible_us``, and its changes."""
        commits = np.array([c for f in self.files for c in f.commit_us], dtype=np.int64)
        lags = ((visible_us - commits) / 1_000_000).clip(min=0.0)
        return lags, [n for f in self.files for n in f.commit_rows]

    def retries(self) -> tuple[int, int]:
        """(replication reconnects, failed attempts of the tasks that wrote the change-log files)."""
        return sum(f.reconnects for f in self.files), sum(f.attempt for f in self.files)

    def range_end(self) -> Checkpoint | None:
        """The stream offset the batch's last range with changes ends at: where a stream that lost
        its checkpoint starts again. None when the tasks did not say."""
        ends = [f.range_end for f in self.files if f.range_end is not None]
        return furthest(ends) if ends else None

    def start(self) -> tuple[str, int]:
        """The binlog position of the batch's first change."""
        first = min(self.files, key=lambda f: position_key(f.first_file, f.first_pos))
        return first.first_file, first.first_pos

    def end(self) -> tuple[str, int]:
        """The binlog position after the batch's last change."""
        last = max(self.files, key=lambda f: position_key(f.last_file, f.last_pos))
        return last.last_file, last.last_pos


def table_batch(history: SchemaHistory, store: LakeStore, db: str, name: str, parts: list[TableSource],
                rows_of: Callable[[str, str], pa.Table], snapshot_filter: SnapshotFilter | None = None,
                columns: Any = None, *, per_row: bool = False, lazy_rows: int | None = None,
                read: dict[str, Any] | None = None) -> TableBatch:
    """A table's changes in the batch, typed by the schema in force at its first change: its staged
    MERGE sources folded over the ranges (less what a snapshot holds already, ``keep_source``), or
    its rows read back from the staged change log for the per-row path (no source staged, a layout
    other than the schema history's, a snapshot filter that cannot judge the folded source).
    ``columns``: the ``ColumnRules`` the table's mirror follows; ``per_row``: take the per-row path
    (a table routed into a mirror with another table that takes it); ``lazy_rows``: a table with more
    changes than this, staged whole, keyed on one integer column and not judged by a snapshot filter,
    keeps its sources on the lake as pieces, MERGEd in passes (``sluice.lake.mirror.passes``);
    ``read``: staged files read already (``read_staged``), by path."""

    first_file, first_pos = parts[0].first_file, parts[0].first_pos
    catalog = history.catalog_at(first_file, first_pos) or history.latest()
    schema = catalog.get(db, name) if catalog is not None else None
    if schema is None:
        raise ConfigError(
            f"no schema known for {db}.{name} at {first_file}:{first_pos}; the schema history "
            f"{history.path} is missing or was reset: start the lake {store.uri} over"
        )
    if columns is not None:
        schema = columns.mask_schema(schema)
    columns = mirror_columns_for_schema(schema, catalog.flavor if catalog is not None else None)
    primary_key = tuple(schema.primary_key)
    n = sum(p.rows for p in parts)
    if not primary_key:
        return TableBatch(db, name, columns, (), (), pa.table({}), n)
    covering = snapshot_filter if snapshot_filter and snapshot_filter.covers(db, name, first_file, first_pos) else None
    layout = layout_key(columns, primary_key)
    staged = [p.path for p in parts if p.path and p.layout == layout]
    if len(staged) == len(parts) and not per_row:
        if (lazy_rows is not None and covering is None and n > lazy_rows
                and integer_key(mirror_schema(columns), primary_key)):
            pieces = tuple(StagedPiece(store, path, AFTER_PENDING + i) for i, path in enumerate(staged))
            return TableBatch(db, name, columns, primary_key, (), None, n, pieces)
        sources = [pa.ipc.open_file(read[path] if read and path in read else store.read_file(path)).read_all()
                   for path in staged]
        folded = fold_sources(sources, primary_key)
        source = folded if covering is None else covering.keep_source(db, name, primary_key, folded)
        if covering is not None and source is not None:
            log.debug("%s.%s: the snapshot filter keeps %d of the batch's %d keys", db, name, source.num_rows,
                      folded.num_rows)
        if source is not None:
            if not source.num_rows:  # the snapshot holds every change: no MERGE, as on the per-row path
                return TableBatch(db, name, columns, primary_key, ())
            return TableBatch(db, name, columns, primary_key, (), without_positions(source), n)
    if not per_row and any(p.path and p.layout != layout for p in parts):
        log.warning("%s.%s: a task typed its changes as %s, the schema history as %s; taking the per-row path",
                    db, name, next(p.layout for p in parts if p.path and p.layout != layout), layout)
    changes = to_row_changes(columns, rows_of(db, name))
    if snapshot_filter:
        if covering is not None:
            log.debug("%s.%s: the snapshot filter judges the batch's changes one by one", db, name)
        changes = snapshot_filter.keep(changes)
    return TableBatch(db, name, columns, primary_key, changes)


def read_staged(store: LakeStore, paths: list[str]) -> dict[str, Any]:
    """The staged MERGE sources at ``paths``, read side by side on an object store (one round trip
    for all of them, not one per file); nothing on a local path, whose files are mapped as read."""
    if not store.remote or len(paths) < 2:
        return {}
    return dict(zip(paths, run_at_once([partial(store.read_file, p) for p in paths], 8), strict=True))


def table_batches(history: SchemaHistory, store: LakeStore, tables: dict[tuple[str, str], list[TableSource]],
                  rows_of: Callable[[str, str], pa.Table], snapshot_filter: SnapshotFilter | None = None,
                  columns: Any = None, routes: Routes | None = None,
                  captured: Callable[[str, str], bool] | None = None,
                  mirror_names: Callable[[tuple[str, str]], list[str] | None] | None = None,
                  lazy_rows: int | None = None) -> list[TableBatch]:
    """Every mirror's ``TableBatch`` of the batch: a table's own (``table_batch``), or, for the
    tables ``routes`` sends to one mirror, one batch of them all (``sluice.lake.mirror.routed``),
    typed by the layout the catalog at their first change gives the mirror; ``captured``: the run's
    table filter (a routed table left out of the capture has no say in the layout); ``mirror_names``:
    a routed mirror's column names as it stands (None: no mirror yet), whose order the layout keeps;
    ``lazy_rows``: ``table_batch``'s, for the tables not routed."""
    out: list[TableBatch] = []
    groups: dict[tuple[str, str], list[tuple[str, str, list[TableSource]]]] = {}
    read = read_staged(store, [p.path for parts in tables.values() if lazy_rows is None
                               or sum(p.rows for p in parts) <= lazy_rows for p in parts if p.path])
    for (db, name), parts in tables.items():
        target = routes.target(db, name) if routes is not None else None
        if target is None:
            out.append(table_batch(history, store, db, name, parts, rows_of, snapshot_filter, columns,
                                   lazy_rows=lazy_rows, read=read))
        else:
            groups.setdefault(target, []).append((db, name, parts))
    for target, shards in groups.items():
        assert routes is not None
        batches = [table_batch(history, store, db, name, parts, rows_of, snapshot_filter, columns, read=read)
                   for db, name, parts in shards]
        if len({b.source is None for b in batches if b.change_count}) > 1:  # one fold for the mirror
            batches = [table_batch(history, store, db, name, parts, rows_of, snapshot_filter, columns, per_row=True,
                                   read=read)
                       for db, name, parts in shards]
        first = min((p for _, _, parts in shards for p in parts), key=lambda p: position_key(p.first_file, p.first_pos))
        catalog = history.catalog_at(first.first_file, first.first_pos) or history.latest()
        assert catalog is not None  # table_batch found the tables' schemas in it
        schemas = [s for s in catalog.tables() if captured is None or captured(s.db, s.name)]
        layout = routed_layout(routes, target, schemas, catalog.flavor, columns and columns.mask_schema,
                               mirror_names(target) if mirror_names is not None else None)
        out.append(routed_batch(layout, batches))
    return out
