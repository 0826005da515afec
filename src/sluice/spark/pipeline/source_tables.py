"""The captured tables checked on the source before the stream starts.

Transaction-precise system-versioned tables cannot be captured (the server logs their changes as
statements): the run refuses them, and tables ``--route`` sends to one mirror that cannot share it
(``check_routes``). Tables whose foreign keys' cascades the server does not log are named in a
warning: their mirrors and change log miss those changes.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from sluice.cdc.filters import table_filter
from sluice.cdc.routes import Routes
from sluice.cdc.schema import TableSchema, bootstrap_catalog
from sluice.cdc.schema.bootstrap import SYSTEM_SCHEMAS
from sluice.cdc.source_checks import silent_cascades, transaction_precise_tables
from sluice.dsn import parse_dsn
from sluice.errors import ConfigError, SluiceError
from sluice.io.connection import Connection
from sluice.lake.mirror.routed import routed_layout

__all__ = ["check_routes", "check_source"]

log = logging.getLogger(__name__)


def check_source(source: str, tables: str | None, exclude_tables: str | None,
                 progress: Callable[[str], None], routes: Routes | None = None, columns: Any = None) -> None:
    """Refuse the captured tables sluice cannot capture, and tables ``routes`` sends to one mirror
    that cannot share it (``RouteConflictError``: keys or column types that differ); name those
    whose foreign keys' cascades the server does not log: their mirrors and change log miss those
    changes (``sluice.cdc.source_checks``). ``columns``: the run's ``ColumnRules``."""

    include = table_filter(tables, exclude_tables)
    catalog = None
    try:
        with Connection.open(parse_dsn(source)) as conn:
            versioned = transaction_precise_tables(conn, include)
            found = silent_cascades(conn, include)
            if routes is not None:
                catalog = bootstrap_catalog(conn, lambda db, t: db not in SYSTEM_SCHEMAS and (
                    include is None or include(db, t)))
    except SluiceError as exc:  # the run itself reports a server it cannot use
        log.debug("checking the source's tables failed: %s", exc)
        return
    if routes is not None and catalog is not None:
        check_routes(routes, list(catalog.tables()), catalog.flavor, columns)
    if versioned:
        names = ", ".join(versioned)
        pattern = "|".join(re.escape(name) for name in versioned)
        raise ConfigError(
            f"sluice cannot capture transaction-precise system-versioned tables ({names}): their period "
            "columns are transaction ids (BIGINT UNSIGNED ... AS ROW START / END), and the server logs "
            "every change of such a table as its statement, even with binlog_format=ROW, so no row of "
            f"it reaches the binlog's row events. Leave them out of the capture: --exclude-tables '{pattern}'"
        )
    if found:
        names = "; ".join(c.describe() for c in found[:5])
        if len(found) > 5:
            names += f"; and {len(found) - 5} more"
        progress(
            f"warning: the source does not write to its binlog the rows its foreign keys change by cascade "
            f"(MariaDB, or MySQL with innodb_native_foreign_keys=ON), so the mirrors and the change log miss "
            f"them for: {names}. sluice verify shows the difference; sluice snapshot --tables reads a table again"
        )


def check_routes(routes: Routes, schemas: list[TableSchema], flavor: str | None, columns: Any = None) -> None:
    """``RouteConflictError`` when tables ``routes`` sends to one mirror cannot share it: their
    keys differ, one has none, two define a column as types one mirror column cannot hold, or a
    target is a captured table of its own."""
    routes.check(schemas, [(s.db, s.name) for s in schemas if routes.target(s.db, s.name) is None])
    for target in routes.groups((s.db, s.name) for s in schemas):
        routed_layout(routes, target, schemas, flavor, columns and columns.mask_schema)
