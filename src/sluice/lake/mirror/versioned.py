"""A MariaDB system-versioned table's row changes as its mirror takes them.

The mirror of a system-versioned table holds its current rows, as ``SELECT *`` shows them: keyed by
the primary key without the row end (``TableSchema.primary_key``), without the implicit
``row_start`` / ``row_end`` (``TableSchema.data_columns``), with explicit period columns like any
other. Of its change records (``sluice.cdc.records.versioned_op``) a ``history`` row (an old
version the server wrote) and a ``delete_history`` row (``DELETE HISTORY``) leave the mirror as it
is, and a ``delete`` (an UPDATE that ended the row's period) removes the key, its after image
being the row as history keeps it. ``mirror_rows`` turns a table's rows of the change DataFrame
into those the column-wise MERGE source takes; the per-row fold skips the history ops itself.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from sluice.cdc.records import VERSIONED_OPS
from sluice.cdc.schema.model import TableSchema

__all__ = ["mirror_rows"]

# The implicit period columns close every full image of their table (they are its last columns).
_IMPLICIT_TAIL = r',"row_start":"[^"]*","row_end":"[^"]*"}$'


def mirror_rows(rows: pa.Table, schema: TableSchema) -> pa.Table:
    """``rows`` (one system-versioned table's, the change DataFrame's columns) without the history
    ops, deletes without an after image, and images without implicit period columns; other
    tables' rows as they are."""
    if schema.system_time is None:
        return rows
    rows = rows.filter(pc.invert(pc.is_in(rows.column("op"), pa.array(VERSIONED_OPS))))
    after = rows.column("after")
    after = pc.if_else(pc.equal(rows.column("op"), "delete"), pa.scalar(None, after.type), after)
    before = rows.column("before")
    if schema.system_time.implicit:
        after = pc.replace_substring_regex(after, pattern=_IMPLICIT_TAIL, replacement="}")
        before = pc.replace_substring_regex(before, pattern=_IMPLICIT_TAIL, replacement="}")
    rows = rows.set_column(rows.schema.get_field_index("after"), "after", after)
    return rows.set_column(rows.schema.get_field_index("before"), "before", before)
