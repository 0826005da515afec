"""DDL replay: the statements of QUERY events applied to a ``Catalog``, with what each changed.

The public surface is small: ``is_ddl`` tells a DDL statement from its first word without parsing
it (``detect``, no sqlglot), ``apply_ddl`` replays one statement and returns a ``DdlOutcome``
(``replay``), and a few facts other schema modules read: ``enum_members`` (an ENUM / SET type's
members), ``IMPLICIT_PERIOD`` and ``strip_versioning`` (MariaDB's system versioning),
``quoted_end`` (where a quoted name or string ends), ``sequence_columns`` (a MariaDB sequence's
fixed columns). Inside, by job: ``text`` (the sqlglot dialect and the token helpers every handler
shares), ``columns`` (column definitions), ``alter`` (ALTER TABLE), ``sequence`` (MariaDB's
sequences), ``versioning`` (system versioning) and ``replay`` (the dispatch and the other
statements). Each name loads its module on first use, so the parser loads only at the first DDL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sluice.lazy import lazy_exports

if TYPE_CHECKING:  # the names as the type checker sees them; at run time each loads on first use
    from sluice.cdc.schema.ddl.column_defs import enum_members
    from sluice.cdc.schema.ddl.detect import is_ddl
    from sluice.cdc.schema.ddl.replay import DdlOutcome, apply_ddl
    from sluice.cdc.schema.ddl.sequence import sequence_columns
    from sluice.cdc.schema.ddl.text import quoted_end
    from sluice.cdc.schema.ddl.versioning import IMPLICIT_PERIOD, strip_versioning

_HOMES = {  # each exported name's module
    "DdlOutcome": "replay",
    "IMPLICIT_PERIOD": "versioning",
    "apply_ddl": "replay",
    "enum_members": "column_defs",
    "is_ddl": "detect",
    "quoted_end": "text",
    "sequence_columns": "sequence",
    "strip_versioning": "versioning",
}
__all__ = [
    "IMPLICIT_PERIOD", "DdlOutcome", "apply_ddl", "enum_members", "is_ddl", "quoted_end", "sequence_columns",
    "strip_versioning",
]
__getattr__ = lazy_exports(__name__, _HOMES)
