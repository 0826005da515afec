"""The lake's Delta tables, written with delta-rs and never with Spark: a table's mirror columns and
their Arrow / Spark types (``columns``, ``table_layout``), the change log and the batch writer
(``sink``), one table's fold and MERGE (``fold``, ``merge``, ``merge_source``), data files written
outside a writer (``data_files``), row images read back (``images``, ``typed_images``,
``changelog_rows``). Nothing here imports pyspark: the lake is usable from a plain Python process.
"""

from __future__ import annotations

from sluice.spark.lake.columns import MirrorColumn
from sluice.spark.lake.sink import CHANGELOG_SCHEMA, DeltaLake, TableBatch
from sluice.spark.lake.table_layout import mirror_columns_for_schema

__all__ = ["CHANGELOG_SCHEMA", "DeltaLake", "MirrorColumn", "TableBatch", "mirror_columns_for_schema"]
