"""The initial snapshot of ``sluice run`` on Spark: the runner (``runner``), its state in the lake
(``state``), one chunk on an executor (``task``), text rows cut into Arrow columns (``text_rows``,
``chunk_arrow``), tables without a primary key (``keyless``), and which streamed changes a snapshot
already holds (``filter``).
"""

from __future__ import annotations

from sluice.spark.snapshot.filter import SnapshotFilter
from sluice.spark.snapshot.runner import SnapshotRunner
from sluice.spark.snapshot.state import SnapshotState

__all__ = ["SnapshotFilter", "SnapshotRunner", "SnapshotState"]
