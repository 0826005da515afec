"""``sluice verify``: a lake's mirrors compared with the server's tables (``check``), row by row
through a canonical form and its checksum (``rows``).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["TableVerdict", "lake_tables", "verify_lake"]

# Each name's module, imported at the first use of the name: importing one module of the package
# does not import the others (the Python workers of Spark's tasks import only what they run).
_HOMES = {
    "TableVerdict": "check",
    "lake_tables": "check",
    "verify_lake": "check",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
