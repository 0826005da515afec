"""A batch's change-log commit, in either of its forms: the Parquet files the pipeline's tasks
wrote into the change log's folder, committed as they are (``commit_files``), or rows built on the
driver, appended (``append_rows``). Both bring a change log written before a column existed up to
``CHANGELOG_SCHEMA`` first (Delta schema evolution: the older rows read the new column as null).
Delta's errors go to the caller, which names the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import pyarrow as pa
from deltalake import ColumnProperties, CommitProperties, DeltaTable, WriterProperties, write_deltalake
from deltalake import Schema as DeltaSchema
from deltalake.transaction import AddAction, create_table_with_add_actions

from sluice.lake.changelog.schema import CHANGELOG_SCHEMA

__all__ = ["append_rows", "commit_files"]

# The row images of the change log are nearly all distinct: a dictionary page per column chunk only
# costs time (most of the append's) and Parquet falls back to plain pages anyway.
_CHANGELOG_WRITER: Final = WriterProperties(compression="ZSTD", compression_level=1, column_properties={
    name: ColumnProperties(dictionary_enabled=False) for name in ("before", "after", "json_diffs")
})


def commit_files(path: str, files: Sequence[AddAction], txn: CommitProperties, table: DeltaTable | None,
                 options: dict[str, str] | None) -> int:
    """Commit change-log files already in its folder (``path``) to ``table`` (None: no change log yet);
    the version committed. ``table`` stays as it was (delta-rs does not move it to the new version)."""
    if table is None:
        create_table_with_add_actions(path, DeltaSchema.from_arrow(CHANGELOG_SCHEMA), list(files),
                                      mode="append", commit_properties=txn, storage_options=options)
        return 0
    have = {f.name for f in table.schema().fields}
    if not set(CHANGELOG_SCHEMA.names) <= have:
        # A change log from before a column existed: add it first (files are committed as they are,
        # with no schema change of their own).
        write_deltalake(path, CHANGELOG_SCHEMA.empty_table(), mode="append", schema_mode="merge",
                        storage_options=options)
        table = DeltaTable(path, storage_options=options)
    table.create_write_transaction(list(files), "append", CHANGELOG_SCHEMA, commit_properties=txn)
    return table.version() + 1


def append_rows(target: str | DeltaTable, log: pa.Table, txn: CommitProperties,
                options: dict[str, str] | None) -> None:
    """Append ``log`` (``CHANGELOG_SCHEMA``) to the change log; an empty append still commits: it
    records the batch as done. ``schema_mode="merge"``: an older change log gains the columns it lacks."""
    write_deltalake(target, log, mode="append", commit_properties=txn, writer_properties=_CHANGELOG_WRITER,
                    schema_mode="merge", storage_options=options)
