"""``sluice run``'s pipeline: the streaming query and the driver's commit of each micro-batch
(``runner``), the reading of a staged batch (``staged_batch``), its progress (``stats``), its
Prometheus metrics (``metrics``) and what Ctrl-C and SIGTERM do to it (``interrupts``).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Pipeline", "PipelineConfig", "PipelineStats"]

# Each name's module, imported at the first use of the name: importing one module of the package
# does not import the others (the Python workers of Spark's tasks import only what they run).
_HOMES = {
    "Pipeline": "runner",
    "PipelineConfig": "config",
    "PipelineStats": "stats",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
