"""Schema changes on the mirrors: what one DDL does to them (``plan``), applying those steps exactly
once (``apply``), and a micro-batch's DDL rows turned into mirror changes (``batch``).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["DdlStage", "MirrorDdl", "MirrorStep", "plan_ddl"]

# Each name's module, imported at the first use of the name: importing one module of the package
# does not import the others (the Python workers of Spark's tasks import only what they run).
_HOMES = {
    "DdlStage": "batch",
    "MirrorDdl": "apply",
    "MirrorStep": "plan",
    "plan_ddl": "plan",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
