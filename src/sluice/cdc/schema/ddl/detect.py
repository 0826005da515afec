"""Whether a statement is DDL, told from its first word without parsing it (no sqlglot here).

The QUERY events of a binlog are mostly BEGIN, COMMIT and the statements of non-row events; only
DDL needs the parser (``ddl``), which is imported the first time a DDL statement is met.
"""

from __future__ import annotations

import re

__all__ = ["is_ddl"]

_DDL_WORD = re.compile(r"(?:CREATE|ALTER|DROP|RENAME|TRUNCATE)(?![\w$])", re.IGNORECASE)
_LEAD = re.compile(r"(?:\s+|/\*M?!\d*|/\*(?!M?!).*?\*/|#[^\n]*|--(?=\s)[^\n]*)*", re.DOTALL)
_LEAD_CHARS = frozenset(" \t\r\n\f\v/#-")


def is_ddl(sql: str) -> bool:
    """True when the statement starts (after comments) with CREATE, ALTER, DROP, RENAME or TRUNCATE."""
    if not sql:
        return False
    start = _LEAD.match(sql).end() if sql[0] in _LEAD_CHARS else 0  # type: ignore[union-attr]
    return _DDL_WORD.match(sql, start) is not None
