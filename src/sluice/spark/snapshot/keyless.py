"""The initial snapshot of tables without a primary key: one consistent scan into the change log.

Such a table has no mirror (rows without a key cannot be merged), so the change log is where a
consumer rebuilds it. ``snapshot_keyless`` reads the table in one consistent scan
(``sluice.cdc.table_read.consistent``: MariaDB's ``binlog_snapshot_*`` status, MySQL's backup lock
or ``FLUSH TABLES WITH READ LOCK``) and appends every row to the change log as a ``read`` record
at the scan's binlog position ``P``: the table's contents at ``P``. The stream starts at the
snapshot's start, before ``P``, so the change log also holds the table's changes between the two;
they are already in the read rows, and a consumer applies only the changes after ``P``.

Exactly once: the scan's position is saved in the snapshot state before the append, and the
append carries the Delta app transaction ``(<snapshot app id>:<db.table>@<P>, 0)``; after a
crash, a recorded scan whose app transaction is in the change log is done, any other is read again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, Transaction, write_deltalake
from deltalake.exceptions import DeltaError

from sluice.binlog.position import Checkpoint
from sluice.cdc.jsonl import json_texts
from sluice.cdc.schema import TableSchema
from sluice.cdc.table_read.consistent import ConsistentRead, consistent_scan
from sluice.cdc.table_read.reader import prepare_session
from sluice.dsn import parse_dsn
from sluice.errors import AccessDeniedError, DataLossError
from sluice.io.connection import Connection
from sluice.lake.changelog.schema import CHANGELOG_SCHEMA
from sluice.lake.changelog.sequence import numbered
from sluice.lake.sink import DeltaLake

__all__ = ["read_records", "snapshot_keyless"]


def read_records(read: ConsistentRead, ts: int, first_seq: int = 0) -> pa.Table:
    """The change-log rows of a consistent scan: one ``read`` record per row, at the scan's position,
    numbered (``seq``) from ``first_seq`` on."""
    n = len(read.rows)
    p = read.position
    columns: dict[str, Any] = {
        "op": ["read"] * n,
        "db": [read.db] * n,
        "table": [read.table] * n,
        "before": [None] * n,
        "after": json_texts(read.rows),
        "pk": [[]] * n,
        "file": [p.file] * n,
        "pos": [p.pos] * n,
        "row": list(range(n)),
        "gtid": [None] * n,
        "ts": [ts * 1_000_000] * n,
        "batch_id": [None] * n,
        "json_diffs": [None] * n,
        "ddl": [None] * n,
        "seq": [None] * n,
    }
    table = pa.table([pa.array(columns[f.name], type=f.type) for f in CHANGELOG_SCHEMA], schema=CHANGELOG_SCHEMA)
    return numbered(table, first_seq)


def _app_id(lake: DeltaLake, name: str, at: Checkpoint) -> str:
    return f"{lake.app_id}:{name}@{at.file}:{at.pos}"


def _landed(lake: DeltaLake, name: str, at: Checkpoint) -> bool:
    log = lake.table(lake.changelog_path)
    return log is not None and log.transaction_version(_app_id(lake, name, at)) is not None


def snapshot_keyless(source: str, lake: DeltaLake, table: dict[str, Any], save: Callable[[], None],
                     progress: Callable[[str], None], columns: Any = None) -> None:
    """Snapshot one key-less table (its entry in the snapshot state) into the change log, once;
    ``columns``: the ``ColumnRules`` its rows are masked by."""
    schema = TableSchema.from_json(table["schema"])
    name = f"{schema.db}.{schema.name}"
    scanned = table.get("scan")
    if scanned is not None and _landed(lake, name, Checkpoint.from_json(scanned["position"])):
        table["read"] = scanned
        table["scan"] = None
        save()
        return
    with Connection.open(parse_dsn(source)) as conn:
        prepare_session(conn)
        try:
            read = consistent_scan(conn, schema)
        except AccessDeniedError as exc:
            raise AccessDeniedError(
                exc.errno, exc.sqlstate, exc.server_message,
                hint=f"or leave {name} out of the capture (--exclude-tables)",
            ) from exc
    record = {"position": read.position.to_json(), "rows": len(read.rows), "method": read.method}
    table["scan"] = record
    save()
    if columns is not None:
        read = replace(read, rows=[columns.mask_row(read.db, read.table, row) for row in read.rows])
    log_rows = read_records(read, int(time.time()), lake.next_seq())  # numbered after what the change log holds
    high = lake.seq.batch_high(None, (), log_rows)
    txn = CommitProperties(app_transactions=[Transaction(_app_id(lake, name, read.position), 0)],
                           custom_metadata=lake.seq.metadata(high) or None)
    try:
        write_deltalake(lake.changelog_path, log_rows, mode="append", commit_properties=txn, schema_mode="merge",
                        storage_options=lake.options)
    except DeltaError as exc:
        raise DataLossError(
            f"the change-log append of the snapshot of {name} failed ({exc}); nothing of it was committed. Fix "
            "the cause (storage, permissions, another writer) and restart: the table is read again"
        ) from exc
    lake.seq.claim(high)
    table["read"] = record
    table["scan"] = None
    save()
    progress(f"snapshot: {name} has no primary key: its {len(read.rows):,} rows are in the change log as reads "
             f"at {read.position.file}:{read.position.pos} ({read.method}); it is not mirrored")
