"""``sluice verify``: a lake's mirrors compared with the server's tables (``check``), row by row
through a canonical form and its checksum (``rows``).
"""

from __future__ import annotations

from sluice.spark.verify.check import TableVerdict, lake_tables, verify_lake

__all__ = ["TableVerdict", "lake_tables", "verify_lake"]
