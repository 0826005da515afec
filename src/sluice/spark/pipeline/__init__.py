"""``sluice run``'s pipeline: the streaming query and the driver's commit of each micro-batch
(``runner``), the reading of a staged batch (``staged_batch``), its progress (``stats``), its
Prometheus metrics (``metrics``) and what Ctrl-C and SIGTERM do to it (``interrupts``).
"""

from __future__ import annotations

from sluice.lazy import lazy_exports

_HOMES = {  # each exported name's module
    "Pipeline": "runner",
    "PipelineConfig": "config",
    "PipelineStats": "stats",
}
__all__ = sorted(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
