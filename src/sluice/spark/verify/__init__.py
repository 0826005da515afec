"""``sluice verify``: a lake's mirrors compared with the server's tables (``check``), row by row
through a canonical form and its checksum (``rows``).
"""

from __future__ import annotations

from sluice.lazy import lazy_exports

_HOMES = {  # each exported name's module
    "TableVerdict": "check",
    "verify_lake": "check",
}
__all__ = sorted(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
