"""The change log's schema: one row per row change (and per DDL), values in sluice's JSON-lines
encoding. The pipeline's tasks write change-log files in it without importing the Delta writer.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa

__all__ = ["CHANGELOG_SCHEMA"]

#: Schema of the change log: one row per row change, values in sluice's JSON-lines encoding.
CHANGELOG_SCHEMA: Final = pa.schema([
    pa.field("op", pa.string()),
    pa.field("db", pa.string()),
    pa.field("table", pa.string()),
    pa.field("before", pa.string()),
    pa.field("after", pa.string()),
    pa.field("pk", pa.list_(pa.string())),
    pa.field("file", pa.string()),
    pa.field("pos", pa.int64()),
    pa.field("row", pa.int32()),
    pa.field("gtid", pa.string()),
    pa.field("ts", pa.timestamp("us", tz="UTC")),
    pa.field("batch_id", pa.int64()),
    pa.field("json_diffs", pa.string()),
    pa.field("ddl", pa.string()),  # op "ddl": the statement (sluice.cdc.change_rows.ddl_json)
])
