"""The change rows' schema, once: as the ``binlog`` source yields them (``CHANGE_ARROW_SCHEMA``, one
row per row change and per DDL, values in sluice's JSON-lines encoding) and as the change log stores
them (``CHANGELOG_SCHEMA``). The pipeline's tasks write change-log files in it without importing the
Delta writer.

The change log's columns are the change rows' but ``commit_ts``, with the batch id and ``seq`` (its
own order, ``sluice.lake.changelog.sequence``), in the order ``CHANGELOG_COLUMNS`` gives: the order
of its Delta tables on disk, where the columns added later (``json_diffs``, ``ddl``, ``seq``) come
last. Each column has the change rows' type; the source's Spark DDL
is derived from ``CHANGE_ARROW_SCHEMA`` as well (``sluice.spark.source.change_frame``).

Each change-log commit of a batch records where the stream stands (``POSITION_KEY``: the
``Checkpoint``'s JSON document, the GTID set and the source server included), which
``committed_position`` reads back.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

import pyarrow as pa

from sluice.binlog.position import Checkpoint
from sluice.errors import ConfigError

if TYPE_CHECKING:  # the tasks import this module without the Delta writer
    from deltalake import DeltaTable

__all__ = ["CHANGELOG_COLUMNS", "CHANGELOG_SCHEMA", "CHANGE_ARROW_SCHEMA", "POSITION_KEY", "committed_position"]

_TS = pa.timestamp("us", tz="UTC")

#: The change rows, in the order the source yields their columns (the table of their meaning is in
#: ``sluice.spark.source.change_frame``).
CHANGE_ARROW_SCHEMA: Final = pa.schema([
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
    ("ddl", pa.string()),  # op "ddl": the statement (sluice.cdc.change_rows.ddl_json)
])

#: The change log's columns in the order of its Delta tables on disk (see the module docstring).
CHANGELOG_COLUMNS: Final = ("op", "db", "table", "before", "after", "pk", "file", "pos", "row", "gtid", "ts",
                            "batch_id", "json_diffs", "ddl", "seq")
_OWN = {
    "batch_id": pa.field("batch_id", pa.int64()),  # the micro-batch that committed the row
    "seq": pa.field("seq", pa.int64()),  # the row's place in the change log (sluice.lake.changelog.sequence)
}

#: Schema of the change log: the change rows' columns in ``CHANGELOG_COLUMNS``' order.
CHANGELOG_SCHEMA: Final = pa.schema([_OWN[name] if name in _OWN else CHANGE_ARROW_SCHEMA.field(name)
                                     for name in CHANGELOG_COLUMNS])

#: The change log's commit metadata key holding the stream offset its batch ends at (JSON).
POSITION_KEY: Final = "sluice.position"


def committed_position(log: DeltaTable, *, look_back: int = 1000) -> Checkpoint | None:
    """The stream offset of the last batch the change log ``log`` holds (``POSITION_KEY`` of its
    newest commit that has one; maintenance commits have none), None when no batch recorded one."""
    for commit in log.history(look_back):
        text = commit.get(POSITION_KEY)
        if text:
            try:
                return Checkpoint.from_json(json.loads(text))
            except (ValueError, ConfigError) as exc:
                raise ConfigError(f"the change log's commit {commit.get('version')} records a position "
                                  f"sluice cannot read ({exc}): {text!r}") from None
    return None
