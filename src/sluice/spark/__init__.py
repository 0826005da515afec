"""sluice on Spark and Delta Lake: typed Arrow conversion, the Delta writer, the binlog data source.

``sluice.spark.lake.columns`` maps MySQL columns to Arrow / Spark types and converts decoded values;
``sluice.spark.lake.sink`` MERGEs row changes into a Delta mirror (or holds them pending until a
MERGE pays, ``sluice.spark.lake.pending``) and appends them to the change log, exactly once.
Importing this package does not import pyspark: modules that need Spark import it themselves, so
the Delta writer also runs in a plain Python process.

Each role is a subpackage (``lake``, ``source``, ``runtime``, ``snapshot``, ``verify``, ``ddl``,
``pipeline``) whose ``__init__`` names its exports with ``lazy_exports``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's ``__getattr__`` for the names ``homes`` maps to their modules: a name's module is
    imported at the name's first use, so importing one module of the package does not import the
    others (the Python workers of Spark's tasks import only what they run)."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{home}"), name)

    return __getattr__
