"""Which source tables ``sluice verify`` expects a mirror of: those the lake's pipeline captures.

Each ``sluice run`` records its table filter in the lake (``_sluice/capture.json``); a source table
that filter takes is captured, and verify's own ``--tables`` / ``--exclude-tables`` narrow what is
compared. A lake with no record (written by a sluice that did not keep one) takes verify's filter
as the capture; with neither, only the mirrors the lake holds are compared (``None``), and
``capture_recorded`` tells ``sluice verify`` to say so. The system schemas and the lake's own
folder are never captured, as in ``sluice run``. The record also holds the run's routes
(``recorded_routes``): which tables share a routed mirror.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice.cdc.filters import table_filter
from sluice.cdc.schema.bootstrap import SYSTEM_SCHEMAS
from sluice.lake.layout import Lake

__all__ = ["capture_recorded", "captured_tables", "recorded_routes"]

Filter = Callable[[str, str], bool]


def capture_recorded(store: Lake) -> bool:
    """Whether the lake records its pipeline's table filter (a lake a sluice run wrote before
    ``capture.json`` existed does not, until its next run)."""
    return isinstance(store.get_json(store.CAPTURE), dict)


def captured_tables(store: Lake, tables: Filter | None) -> Filter | None:
    """The predicate on ``(db, table)`` of the source tables to compare that must have a mirror,
    or None when the lake does not say what it captures and verify was given no filter."""
    doc = store.get_json(store.CAPTURE)
    recorded = isinstance(doc, dict)
    if not recorded and tables is None:
        return None
    run = table_filter(doc.get("tables"), doc.get("exclude_tables")) if isinstance(doc, dict) else None

    def captured(db: str, table: str) -> bool:
        if db in SYSTEM_SCHEMAS or Lake.reserved(db):
            return False
        return (run is None or run(db, table)) and (tables is None or tables(db, table))

    return captured


def recorded_routes(store: Lake) -> Any:
    """The ``Routes`` the lake's run records (``capture.json``), None when it has none."""
    from sluice.cdc.routes import parse_routes

    doc = store.get_json(store.CAPTURE)
    texts = doc.get("routes") if isinstance(doc, dict) else None
    return parse_routes(texts, f"{store.join(store.CAPTURE)}: routes") if texts else None
