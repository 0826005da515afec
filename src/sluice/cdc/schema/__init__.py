"""Schema history: the table definitions every binlog event was written under.

With ``binlog_row_metadata=FULL`` (MySQL) a TABLE_MAP names its columns; otherwise (MySQL MINIMAL,
MariaDB's default NO_LOG) sluice tracks the schema itself: a catalog bootstrapped from a live
server's ``information_schema`` (``bootstrap``), DDL from QUERY events replayed on it with sqlglot
(``ddl``), persisted with binlog positions (``history``), and cross-checked against every TABLE_MAP
(``typemap``, ``tracker``). ``SchemaTracker`` is the object the pipeline uses.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.ddl import is_ddl
from sluice.cdc.schema.history import SchemaHistory
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.schema.session_charsets import SessionCharsets
from sluice.cdc.schema.table_map_fit import check_table_map, expected_binlog_type
from sluice.cdc.schema.tracker import Correction, ResolvedTable, SchemaTracker
from sluice.cdc.schema.typemap import collation_id

if TYPE_CHECKING:
    from sluice.cdc.schema.bootstrap import bootstrap_catalog
    from sluice.cdc.schema.ddl import DdlOutcome, apply_ddl

# The DDL parser (sqlglot) loads on first use: reading binlogs without DDL never needs it.
_LAZY = {"DdlOutcome": "ddl", "apply_ddl": "ddl", "bootstrap_catalog": "bootstrap"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value

__all__ = [
    "Catalog",
    "ColumnDef",
    "Correction",
    "DdlOutcome",
    "ResolvedTable",
    "SchemaHistory",
    "SchemaTracker",
    "SessionCharsets",
    "TableSchema",
    "apply_ddl",
    "bootstrap_catalog",
    "check_table_map",
    "collation_id",
    "expected_binlog_type",
    "is_ddl",
]
