"""The ``binlog`` PySpark data source: its options (``options``), the driver's planning of
micro-batches on transaction boundaries (``planner``), the stream and file readers (``datasource``,
``file_reader``), the change DataFrame's schema (``change_frame``; its Spark DDL derived from Arrow
by ``spark_ddl``) and the executors' staging of a range into the lake (``staging``).
"""

from __future__ import annotations

from sluice.lazy import lazy_exports

_HOMES = {  # each exported name's module
    "BinlogDataSource": "datasource",
    "SourceOptions": "options",
}
__all__ = sorted(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
