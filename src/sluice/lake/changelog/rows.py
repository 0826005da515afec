"""Change rows and ``RowChange``s, both ways: the one writing of ``RowChange``s as rows of the
change schema (``change_batch``, what the ``binlog`` source yields for them) and as change-log rows
(``changelog_table``); the change-log rows of a range whose images are JSON already
(``changelog_from_rows``); and a table's rows read back from the staged change-log files as
``RowChange``s for the per-row MERGE path (``staged_rows``, ``to_row_changes``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from sluice.cdc.jsonl import json_texts
from sluice.cdc.records import RowChange
from sluice.lake.changelog.schema import CHANGE_ARROW_SCHEMA, CHANGELOG_SCHEMA
from sluice.lake.storage import LakeStore
from sluice.lake.types.images import image_decoder, row_change_from_record

__all__ = ["change_batch", "changelog_from_rows", "changelog_table", "staged_rows", "to_row_changes"]


def to_row_changes(columns: tuple[Any, ...], rows: Any) -> list[RowChange]:
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


def changelog_from_rows(table: Any, batch_id: int, first_seq: int | None = None) -> Any:
    """The change-log rows straight from the batch's Arrow columns: the images are already JSON.
    ``seq`` runs from ``first_seq`` in the rows' order (None: null, for the writer to number)."""

    n = table.num_rows
    columns = {name: table.column(name) for name in CHANGELOG_SCHEMA.names if name not in ("batch_id", "seq")}
    columns["batch_id"] = pa.array(np.full(n, batch_id, dtype=np.int64))
    columns["seq"] = (pa.nulls(n, pa.int64()) if first_seq is None
                      else pa.array(np.arange(first_seq, first_seq + n, dtype=np.int64)))
    return pa.table([columns[f.name].cast(f.type) for f in CHANGELOG_SCHEMA], schema=CHANGELOG_SCHEMA)


def change_batch(changes: Sequence[RowChange], commit_us: Sequence[int | None] | None = None) -> pa.RecordBatch:
    """Row changes as rows of the change schema (``CHANGE_ARROW_SCHEMA``), in the order given;
    ``commit_us`` gives each change's commit time in µs (None: unknown, null)."""
    n = len(changes)
    pks: dict[tuple[str, ...], list[str]] = {}
    columns: dict[str, list[Any]] = {
        "op": [c.op for c in changes],
        "db": [c.db for c in changes],
        "table": [c.table for c in changes],
        "before": json_texts([c.before for c in changes]),
        "after": json_texts([c.after for c in changes]),
        "json_diffs": json_texts([c.json_diffs for c in changes]),
        "pk": [pks.get(c.pk) or pks.setdefault(c.pk, list(c.pk)) for c in changes],
        "file": [c.file for c in changes],
        "pos": [c.pos for c in changes],
        "row": [c.row for c in changes],
        "gtid": [c.gtid for c in changes],
        "ts": [c.ts * 1_000_000 for c in changes],
        "commit_ts": [None] * n if commit_us is None else list(commit_us),
        "ddl": [None] * n,
    }
    arrays = [pa.array(columns[f.name], type=f.type) for f in CHANGE_ARROW_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=CHANGE_ARROW_SCHEMA)


def changelog_table(batch_id: int, changes: Sequence[RowChange]) -> pa.Table:
    """The change-log rows of a batch's changes, ordered by ``(file, pos, row)``."""
    table = changelog_from_rows(pa.Table.from_batches([change_batch(changes)]), batch_id)
    if len(changes) > 1:
        table = table.sort_by([("file", "ascending"), ("pos", "ascending"), ("row", "ascending")])
    return table
