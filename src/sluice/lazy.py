"""Lazy exports for a package's ``__init__``: each name's module is imported at the name's first use.

A package lists its exports and their modules once (``_HOMES``); importing one module of it does
not import the others, so Spark's Python workers import only what their tasks run, and the lake's
writer imports no Spark.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's ``__getattr__`` for the names ``homes`` maps to their modules (relative to the
    package): a name's module is imported at the name's first use."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{home}"), name)

    return __getattr__
