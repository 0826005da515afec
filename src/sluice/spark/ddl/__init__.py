"""Schema changes on the mirrors: what one DDL does to them (``plan``), applying those steps exactly
once (``apply``), and a micro-batch's DDL rows turned into mirror changes (``batch``).
"""

from __future__ import annotations

from sluice.lazy import lazy_exports

_HOMES = {  # each exported name's module
    "BatchDdl": "batch",
    "MirrorDdl": "apply",
    "MirrorStep": "plan",
    "plan_ddl": "plan",
}
__all__ = sorted(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
