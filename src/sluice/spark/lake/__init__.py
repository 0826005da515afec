"""The lake's Delta tables, written with delta-rs and never with Spark: a table's mirror columns and
their Arrow / Spark types (``columns``, ``table_layout``), the change log and the batch writer
(``sink``), one table's fold and MERGE (``fold``, ``merge``, ``merge_source``), data files written
outside a writer (``data_files``), row images read back (``images``, ``typed_images``,
``changelog_rows``). Nothing here imports pyspark: the lake is usable from a plain Python process.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["CHANGELOG_SCHEMA", "DeltaLake", "MirrorColumn", "TableBatch", "mirror_columns_for_schema"]

# Each name's module, imported at the first use of the name: importing one module of the package
# does not import the others (the Python workers of Spark's tasks import only what they run).
_HOMES = {
    "CHANGELOG_SCHEMA": "changelog_schema",
    "DeltaLake": "sink",
    "MirrorColumn": "columns",
    "TableBatch": "sink",
    "mirror_columns_for_schema": "table_layout",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
