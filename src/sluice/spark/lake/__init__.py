"""The lake's Delta tables, written with delta-rs and never with Spark: a table's mirror columns and
their Arrow / Spark types (``columns``, ``table_layout``), the change log and the batch writer
(``sink``), one table's fold and MERGE (``fold``, ``merge``, ``merge_source``), data files written
outside a writer (``data_files``), row images read back (``images``, ``typed_images``,
``changelog_rows``). Nothing here imports pyspark: the lake is usable from a plain Python process.
"""

from __future__ import annotations

from sluice.spark import lazy_exports

_HOMES = {  # each exported name's module
    "CHANGELOG_SCHEMA": "changelog_schema",
    "DeltaLake": "sink",
    "MirrorColumn": "columns",
    "TableBatch": "sink",
    "mirror_columns_for_schema": "table_layout",
}
__all__ = sorted(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
