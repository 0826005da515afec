"""The initial snapshot of ``sluice run`` on Spark: the runner (``runner``), its state in the lake
(``state``), one chunk on an executor (``task``), text rows cut into Arrow columns (``text_rows``,
``chunk_arrow``), tables without a primary key (``keyless``), and which streamed changes a snapshot
already holds (``filter``).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["SnapshotFilter", "SnapshotRunner", "SnapshotState"]

# Each name's module, imported at the first use of the name: importing one module of the package
# does not import the others (the Python workers of Spark's tasks import only what they run).
_HOMES = {
    "SnapshotFilter": "filter",
    "SnapshotRunner": "runner",
    "SnapshotState": "state",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
