"""The lake: a table's Delta mirror and the change log, written with delta-rs and never with Spark.

By role, lowest first:

- ``storage``: where a lake lives and sluice's own objects in it, read and written (``LakeStore``);
- ``layout``: which object of a lake is which part of it, and its Delta tables (``Lake``, the owner);
- ``types/``: a table's mirror columns and their Arrow / Spark types, row images read back;
- ``changelog/``: the change log's schema and its rows;
- ``mirror/``: one table's fold, MERGE source, MERGE and pending changes;
- ``sink``: the batch writer that commits mirrors and the change log exactly once;
- ``maintenance/``: compaction, checkpoints, log cleanup, VACUUM and the change feed.

Nothing here imports pyspark: the lake is usable from a plain Python process.
"""

from __future__ import annotations

from sluice.lazy import lazy_exports

_HOMES = {  # each exported name's module
    "CHANGELOG_SCHEMA": "changelog.schema",
    "DeltaLake": "sink",
    "Lake": "layout",
    "LakeStore": "storage",
    "MirrorColumn": "types.mirror_columns",
    "TableBatch": "mirror.batch",
    "mirror_columns_for_schema": "types.table_layout",
}
__all__ = sorted(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
