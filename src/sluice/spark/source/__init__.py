"""The ``binlog`` PySpark data source: its options (``options``), the driver's planning of
micro-batches on transaction boundaries (``scout``), the stream and file readers (``datasource``,
``file_reader``), the change DataFrame's schema (``change_schema``) and the executors' staging of a
range into the lake (``staging``).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["BinlogDataSource", "SourceOptions"]

# Each name's module, imported at the first use of the name: importing one module of the package
# does not import the others (the Python workers of Spark's tasks import only what they run).
_HOMES = {
    "BinlogDataSource": "datasource",
    "SourceOptions": "options",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
