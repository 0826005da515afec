"""The change DataFrame's schema and the Arrow record batches the ``binlog`` data source yields.

The schema is declared once, in Arrow (``sluice.lake.changelog.schema.CHANGE_ARROW_SCHEMA``);
``CHANGE_SCHEMA``, its Spark DDL, is derived from it.

One row per row change, in binlog order within a partition:

| column | type | meaning |
|---|---|---|
| op | string | insert, update, delete; history, delete_history (MariaDB system-versioned tables) |
| db, table | string | where the row lives |
| before, after | string | the row images as JSON objects in sluice's value encoding (nulls: below) |
| json_diffs | string | MySQL partial JSON updates: JSON object column -> list of diffs, else null |
| pk | array<string> | primary-key column names |
| file, pos, row | string, bigint, int | binlog file, offset of the rows event, index of the row: unique and ordered |
| gtid | string | the transaction's GTID, null when GTIDs are off |
| ts | timestamp | the rows event's header timestamp (UTC) |
| commit_ts | timestamp | commit time: MySQL GTID event (µs), else the commit event header |
| ddl | string | op ``ddl`` only: the statement as JSON ``{"sql", "kind", "tables", "understood", "default_db"}`` |

``before`` is null for insert and history rows, ``after`` for delete and delete_history rows (a
system-versioned table's delete has the row as history keeps it). A ``ddl`` row is a schema change
on a captured table (``sluice.cdc.capture.DdlRecord``): ``db`` and ``table`` name its first table,
the images are null, ``row`` is 0.

Row images are JSON strings rather than VARIANT: every MySQL value keeps its exact encoding
(DECIMAL digits, zero dates, 64-bit unsigned) and Arrow carries strings without conversion.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

import pyarrow as pa

from sluice.cdc.capture import CommittedTransaction, DdlRecord
from sluice.cdc.change_rows import META_FIELDS, ddl_json
from sluice.cdc.records import RowChange
from sluice.lake.changelog.rows import change_batch
from sluice.lake.changelog.schema import CHANGE_ARROW_SCHEMA
from sluice.spark.source.spark_ddl import spark_ddl

__all__ = ["ARROW_BATCH_ROWS", "ARROW_SCHEMA", "CHANGE_SCHEMA", "arrow_batches", "columns_batch", "record_batch"]

ARROW_BATCH_ROWS = 8192  # rows per Arrow batch the source yields

#: The change rows' Arrow schema; its home is the lake's, whose change log stores the same columns.
ARROW_SCHEMA = CHANGE_ARROW_SCHEMA
#: The same schema in Spark's DDL, what the data source's ``schema()`` answers.
CHANGE_SCHEMA = spark_ddl(ARROW_SCHEMA)
_TS = ARROW_SCHEMA.field("ts").type


def record_batch(changes: Sequence[RowChange | DdlRecord], commit_us: Iterable[int]) -> pa.RecordBatch:
    """An Arrow batch of the change schema; ``commit_us`` gives each change's commit time in µs."""
    if any(c.op == "ddl" for c in changes):
        return _with_ddl(changes, list(commit_us))
    return change_batch(cast("Sequence[RowChange]", changes), list(commit_us))


def _with_ddl(records: Sequence[RowChange | DdlRecord], commit_us: list[int]) -> pa.RecordBatch:
    """A batch that holds DDL records: rows in order, the DDL ones with their ``ddl`` column."""
    parts = []
    i = 0
    while i < len(records):
        j = i
        while j < len(records) and records[j].op != "ddl":
            j += 1
        if j > i:
            rows = cast("Sequence[RowChange]", records[i:j])
            parts.append(pa.Table.from_batches([change_batch(rows, commit_us[i:j])]))
        if j < len(records):
            d = records[j]
            assert isinstance(d, DdlRecord)
            row: dict[str, Any] = {
                "op": "ddl", "db": d.db, "table": d.tables[0][1] if d.tables else None, "before": None,
                "after": None, "json_diffs": None, "pk": [], "file": d.file, "pos": d.pos, "row": 0,
                "gtid": d.gtid, "ts": d.ts * 1_000_000, "commit_ts": commit_us[j], "ddl": ddl_json(d),
            }
            parts.append(pa.Table.from_pylist([row], schema=ARROW_SCHEMA))
        i = j + 1
    return pa.concat_tables(parts).combine_chunks().to_batches()[0]


def columns_batch(rows: Any, *, gtid: Any = False) -> pa.RecordBatch:
    """An Arrow batch of the change schema from the compiled core's ``ChangeRows`` (every row with
    its GTID and commit time set): the image and number columns use its buffers as they are, the
    per-event columns (``META_FIELDS``) are taken from its metas; each column is found by name.
    ``gtid`` given (a str or None): the rows are one transaction's, gathered before its commit (no
    GTID set), and every row has that GTID."""
    n = rows.length
    buffers = rows.buffers()
    index = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(buffers["meta"])])
    metas = rows.metas

    def take(field: str, convert: Any = None) -> pa.Array:
        i = META_FIELDS.index(field)
        values = [m[i] if convert is None else convert(m[i]) for m in metas]
        return pa.array(values, type=ARROW_SCHEMA.field(field).type).take(index)

    def number(name: str, kind: pa.DataType) -> pa.Array:
        return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(buffers[name])])

    def text(name: str) -> pa.Array:
        valid, offsets, data = buffers[name]
        return pa.Array.from_buffers(pa.string(), n, [pa.py_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)])

    columns = {
        "before": text("before"), "after": text("after"), "json_diffs": text("json_diffs"),
        "pos": number("pos", pa.int64()), "row": number("row", pa.int32()),
        "gtid": (pa.array(rows.gtids, type=pa.string()).take(number("gtid", pa.int32())) if gtid is False
                 else pa.repeat(pa.scalar(gtid, pa.string()), n)),
        "ts": number("ts", _TS), "commit_ts": number("commit_ts", _TS), "pk": take("pk", list),
    }
    arrays = [columns[f.name] if f.name in columns else take(f.name) for f in ARROW_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def arrow_batches(transactions: Iterable[CommittedTransaction],
                  typed: list[dict[Any, Any]] | None = None) -> Iterator[pa.RecordBatch | tuple[Any, int]]:
    """The row changes (and DDL records, when captured) of committed transactions as Arrow batches of
    the change schema. ``typed`` gets, for each batch the compiled core built, its tables' typed
    images (``ChangeRows.typed``). A transaction the capture handed out in parts before its commit
    (``CommittedTransaction.held``) yields each part with its commit time, ``(part, commit µs)``, in
    its place in the order, and then the batch of its rows after them."""
    changes: list[RowChange | DdlRecord] = []
    commits: list[int] = []
    columns: Any = None  # the compiled core's ChangeRows, when the capture builds them
    for committed in transactions:
        tx = committed.transaction
        commit_us = tx.commit_us if tx.commit_us is not None else tx.ts * 1_000_000
        if committed.held:
            if columns is not None and columns.length:
                if typed is not None:
                    typed.append(columns.typed)
                yield columns_batch(columns)
            columns = None
            for part in committed.held:
                yield part, commit_us
        if committed.columns is not None:
            if columns is None:
                columns = type(committed.columns)()
            columns.extend(committed.columns, tx.rows_gtid, commit_us)
            if columns.length >= ARROW_BATCH_ROWS:
                if typed is not None:
                    typed.append(columns.typed)
                yield columns_batch(columns)
                columns = None
            continue
        for record in committed.records:
            changes.append(record)
            commits.append(commit_us)
        if len(changes) >= ARROW_BATCH_ROWS:
            yield record_batch(changes, commits)
            changes, commits = [], []
    if changes:
        yield record_batch(changes, commits)
    if columns is not None and columns.length:
        if typed is not None:
            typed.append(columns.typed)
        yield columns_batch(columns)
