"""The initial snapshot of ``sluice run`` on Spark: its driver side (``driver``), its state in the lake
(``state``), one chunk on an executor (``task``), text rows cut into Arrow columns (``text_rows``,
``chunk_arrow``), tables without a primary key (``keyless``), and which streamed changes a snapshot
already holds (``filter``).
"""

from __future__ import annotations

from sluice.lazy import lazy_exports

_HOMES = {  # each exported name's module
    "SnapshotFilter": "filter",
    "SnapshotRunner": "driver",
    "SnapshotState": "state",
}
__all__ = sorted(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
