"""The ``binlog`` PySpark data source: its options (``options``), the driver's planning of
micro-batches on transaction boundaries (``scout``), the stream and file readers (``datasource``,
``file_reader``), the change DataFrame's schema (``change_schema``) and the executors' staging of a
range into the lake (``staging``).
"""

from __future__ import annotations

from sluice.spark.source.datasource import BinlogDataSource
from sluice.spark.source.options import SourceOptions

__all__ = ["BinlogDataSource", "SourceOptions"]
