"""What the pipeline hands the lake per table and batch (``TableBatch``), and what the lake did with
it (``TableResult``; ``BatchResult`` for all of a batch's tables): the contract between the driver
and the mirrors' fold and MERGE.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from sluice.cdc.records import RowChange
from sluice.lake.types.mirror_columns import MirrorColumn

__all__ = ["BatchResult", "TableBatch", "TableResult"]


@dataclass(frozen=True, slots=True)
class TableBatch:
    """The changes of one table in one micro-batch."""

    db: str
    table: str
    columns: tuple[MirrorColumn, ...]  # the table's current layout (after DDL)
    primary_key: tuple[str, ...]  # empty: not mirrorable (change log only)
    changes: Sequence[RowChange]  # in binlog order ((file, pos, row) increasing)
    # The MERGE source already built column-wise (``sluice.lake.mirror.merge_source.merge_source``) from
    # ``source_changes`` changes; ``changes`` is then empty and the change log must be given.
    source: pa.Table | None = None
    source_changes: int = 0
    # Or, for a source too large to hold at once, its pieces (``sluice.lake.mirror.pieces``), in
    # binlog order, read when the MERGE in passes needs them (``source`` is then None).
    pieces: tuple[Any, ...] = ()

    @property
    def change_count(self) -> int:
        """Number of row changes of the table in this batch, kept or already folded into ``source``."""
        return len(self.changes) if self.source is None and not self.pieces else self.source_changes


@dataclass(frozen=True, slots=True)
class TableResult:
    """What ``write_batch`` did to one table's mirror.

    ``status``: ``written`` (merged), ``skipped`` (this batch was already committed to the table),
    ``unmirrorable`` (no primary key: change log only) or ``empty`` (no changes).
    """

    db: str
    table: str
    status: str
    changes: int
    inserted: int = 0
    updated: int = 0
    deleted: int = 0


@dataclass(frozen=True, slots=True)
class BatchResult:
    """Counts of one ``write_batch`` call."""

    batch_id: int
    tables: tuple[TableResult, ...]
    changelog_rows: int  # rows appended to the change log by this call
    changelog_skipped: bool  # the change log already had this batch
    #: ``db.table`` -> when the oldest change pending for its mirror was written (epoch seconds), for
    #: the tables whose mirrors wait after this batch (``DeltaLake.waiting``)
    waiting: dict[str, float] = field(default_factory=dict)

    @property
    def inserted(self) -> int:
        """Rows the batch inserted into the mirrors."""
        return sum(t.inserted for t in self.tables)

    @property
    def updated(self) -> int:
        """Mirror rows the batch updated."""
        return sum(t.updated for t in self.tables)

    @property
    def deleted(self) -> int:
        """Mirror rows the batch deleted."""
        return sum(t.deleted for t in self.tables)

    @property
    def skipped(self) -> tuple[str, ...]:
        """``db.table`` of the tables skipped because the batch was already committed to them."""
        return tuple(f"{t.db}.{t.table}" for t in self.tables if t.status == "skipped")

    @property
    def unmirrorable(self) -> tuple[str, ...]:
        """``db.table`` of the tables without a primary key (written to the change log only)."""
        return tuple(f"{t.db}.{t.table}" for t in self.tables if t.status == "unmirrorable")
