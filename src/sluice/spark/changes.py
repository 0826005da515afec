"""The change DataFrame's schema and the Arrow record batches the ``binlog`` data source yields.

One row per row change, in binlog order within a partition:

| column | type | meaning |
|---|---|---|
| op | string | insert, update, delete |
| db, table | string | where the row lives |
| before, after | string | the row images as JSON objects in sluice's value encoding (null for insert / delete) |
| json_diffs | string | MySQL partial JSON updates: JSON object column -> list of diffs, else null |
| pk | array<string> | primary-key column names |
| file, pos, row | string, bigint, int | binlog file, offset of the rows event, index of the row: unique and ordered |
| gtid | string | the transaction's GTID, null when GTIDs are off |
| ts | timestamp | the rows event's header timestamp (UTC) |
| commit_ts | timestamp | commit time: MySQL GTID event (µs), else the commit event header |

Row images are JSON strings rather than VARIANT: every MySQL value keeps its exact encoding
(DECIMAL digits, zero dates, 64-bit unsigned) and Arrow carries strings without conversion.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa

from sluice.cdc.jsonl import encode, unmark
from sluice.cdc.records import RowChange

__all__ = ["ARROW_SCHEMA", "CHANGE_SCHEMA", "record_batch"]

CHANGE_SCHEMA = (
    "op STRING, db STRING, `table` STRING, before STRING, after STRING, json_diffs STRING, pk ARRAY<STRING>, "
    "file STRING, pos BIGINT, row INT, gtid STRING, ts TIMESTAMP, commit_ts TIMESTAMP"
)

_TS = pa.timestamp("us", tz="UTC")
ARROW_SCHEMA = pa.schema(
    [
        ("op", pa.string()),
        ("db", pa.string()),
        ("table", pa.string()),
        ("before", pa.string()),
        ("after", pa.string()),
        ("json_diffs", pa.string()),
        ("pk", pa.list_(pa.field("element", pa.string()))),
        ("file", pa.string()),
        ("pos", pa.int64()),
        ("row", pa.int32()),
        ("gtid", pa.string()),
        ("ts", _TS),
        ("commit_ts", _TS),
    ]
)


def _json(image: dict[str, Any] | None) -> str | None:
    if image is None:
        return None
    return unmark(encode(image))


def record_batch(changes: Sequence[RowChange], commit_us: Iterable[int]) -> pa.RecordBatch:
    """An Arrow batch of the change schema; ``commit_us`` gives each change's commit time in µs."""
    columns = [
        [c.op for c in changes],
        [c.db for c in changes],
        [c.table for c in changes],
        [_json(c.before) for c in changes],
        [_json(c.after) for c in changes],
        [_json(c.json_diffs) for c in changes],
        [list(c.pk) for c in changes],
        [c.file for c in changes],
        [c.pos for c in changes],
        [c.row for c in changes],
        [c.gtid for c in changes],
        [c.ts * 1_000_000 for c in changes],
        list(commit_us),
    ]
    arrays = [pa.array(values, type=field.type) for values, field in zip(columns, ARROW_SCHEMA, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)
