"""The change DataFrame's rows as the pipeline reads them back: the change-log rows of a range
(the images are JSON already), a table's rows from the staged change-log files as ``RowChange``s
for the per-row MERGE path, and the typed sluice error a failed query carries; and the other way,
the change-log rows of ``RowChange``s (``changelog_table``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from sluice.cdc.records import RowChange
from sluice.lake.changelog.schema import CHANGELOG_SCHEMA
from sluice.lake.storage import LakeStore
from sluice.lake.types.columns import json_texts
from sluice.lake.types.images import image_decoder, row_change_from_record

__all__ = ["changelog_rows", "changelog_table", "row_changes", "staged_rows"]


def row_changes(columns: tuple[Any, ...], rows: Any) -> list[RowChange]:
    """The table's rows of the change DataFrame as ``RowChange``s with typed images, column-wise."""

    decode = image_decoder(columns)
    diffs = rows.column("json_diffs")
    if diffs.null_count != len(diffs):  # partial JSON updates: the careful, per-record path
        return [row_change_from_record(columns, r) for r in rows.to_pylist()]
    op = rows.column("op").to_pylist()
    db = rows.column("db")[0].as_py()
    name = rows.column("table")[0].as_py()
    before = rows.column("before").to_pylist()
    after = rows.column("after").to_pylist()
    pk = tuple(rows.column("pk")[0].as_py() or ())
    file = rows.column("file").to_pylist()
    pos = rows.column("pos").to_pylist()
    row = rows.column("row").to_pylist()
    gtid = rows.column("gtid").to_pylist()
    ts = (rows.column("ts").cast(pa.int64()).to_numpy() // 1_000_000).tolist()
    return [
        RowChange(op[i], db, name, decode(before[i]), decode(after[i]), pk, file[i], pos[i], row[i], gtid[i], ts[i])
        for i in range(len(op))
    ]


def staged_rows(changelog: str, paths: list[str], store: LakeStore | None = None) -> Callable[[str, str], pa.Table]:
    """A table's row changes (no DDL) from change-log files the tasks staged (``sluice.spark.source.staging``),
    given in binlog order, as the change DataFrame's columns the per-row path reads: the files
    are read once, at the first table asked for."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    loaded: list[pa.Table] = []

    def rows_of(db: str, table: str) -> pa.Table:
        if not loaded:
            rows = pa.concat_tables([pq.read_table(f"{changelog}/{path}") if store is None
                                     else pq.read_table(store.read_file(f"{changelog}/{path}")) for path in paths])
            loaded.append(rows.filter(pc.not_equal(rows.column("op"), "ddl")))
        rows = loaded[0]
        return rows.filter(pc.and_(pc.equal(rows.column("db"), db), pc.equal(rows.column("table"), table)))

    return rows_of


def changelog_rows(table: Any, batch_id: int) -> Any:
    """The change-log rows straight from the batch's Arrow columns: the images are already JSON."""

    n = table.num_rows
    columns = {name: table.column(name) for name in CHANGELOG_SCHEMA.names if name != "batch_id"}
    columns["batch_id"] = pa.array([batch_id] * n, type=pa.int64())
    return pa.table([columns[f.name].cast(f.type) for f in CHANGELOG_SCHEMA], schema=CHANGELOG_SCHEMA)


def changelog_table(batch_id: int, changes: Sequence[RowChange]) -> pa.Table:
    """The change-log rows of a batch's changes, ordered by ``(file, pos, row)``."""
    pks: dict[tuple[str, ...], list[str]] = {}
    columns = [
        [c.op for c in changes],
        [c.db for c in changes],
        [c.table for c in changes],
        json_texts([c.before for c in changes]),
        json_texts([c.after for c in changes]),
        [pks.get(c.pk) or pks.setdefault(c.pk, list(c.pk)) for c in changes],
        [c.file for c in changes],
        [c.pos for c in changes],
        [c.row for c in changes],
        [c.gtid for c in changes],
        [c.ts * 1_000_000 for c in changes],
        [batch_id] * len(changes),
        json_texts([c.json_diffs or None for c in changes]),
        [None] * len(changes),
    ]
    arrays = [pa.array(values, type=f.type) for values, f in zip(columns, CHANGELOG_SCHEMA, strict=True)]
    table = pa.Table.from_arrays(arrays, schema=CHANGELOG_SCHEMA)
    if len(changes) > 1:
        table = table.sort_by([("file", "ascending"), ("pos", "ascending"), ("row", "ascending")])
    return table
