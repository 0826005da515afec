"""Credentials out of logged statements: ``redact_credentials`` masks the secrets of account statements.

MariaDB logs ``CREATE USER ... IDENTIFIED BY 'secret'``, ``ALTER USER``, ``SET PASSWORD``, ``GRANT ...
IDENTIFIED BY`` and ``CHANGE MASTER ... MASTER_PASSWORD=`` as the client wrote them, password in
clear (MySQL rewrites them before logging, sql/sql_rewrite.cc). sluice masks every string literal that
holds a password or a hash of one, so no output (event lines, ``ddl`` records, the change log, logs,
errors) ever shows it. Only statements that start with an account or replication-source keyword are
touched; everything else is returned as is.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["REDACTED", "redact_credentials"]

REDACTED: Final = b"'<redacted>'"

# Statements whose text may hold a credential (after leading comments and whitespace).
_ACCOUNT: Final = re.compile(
    rb"^(?:\s|/\*.*?\*/|--[^\n]*\n|#[^\n]*\n)*(?:CREATE\s+(?:OR\s+REPLACE\s+)?USER|ALTER\s+USER|SET\s+PASSWORD|"
    rb"GRANT|CHANGE\s+MASTER|CHANGE\s+REPLICATION\s+SOURCE|CREATE\s+SERVER|ALTER\s+SERVER)\b",
    re.IGNORECASE | re.DOTALL,
)

# A quoted string literal ('...' or "..." with doubled quotes and backslash escapes).
_STRING: Final = rb"""(?:'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")"""

# Where a secret follows: IDENTIFIED [WITH plugin] BY [PASSWORD] '...', IDENTIFIED VIA/WITH plugin
# USING|AS '...' (MariaDB: also PASSWORD('...')), SET PASSWORD ... = '...' | PASSWORD('...'),
# MASTER_PASSWORD / SOURCE_PASSWORD = '...', OPTIONS (PASSWORD '...').
_SECRET: Final = re.compile(
    rb"(?P<lead>(?:\bBY(?:\s+PASSWORD)?|\bUSING|\bAS|\bPASSWORD\s*\(|\bPASSWORD|"
    rb"\b(?:MASTER|SOURCE)_PASSWORD\s*=)\s*)"
    rb"(?P<secret>" + _STRING + rb")",
    re.IGNORECASE | re.DOTALL,
)


# SET PASSWORD [FOR user] = '...' | PASSWORD('...') | OLD_PASSWORD('...'): everything quoted after the '='.
_SET_PASSWORD: Final = re.compile(rb"^(?:\s|/\*.*?\*/)*SET\s+PASSWORD\b", re.IGNORECASE | re.DOTALL)
_ANY_STRING: Final = re.compile(_STRING, re.DOTALL)


def redact_credentials(sql: bytes) -> bytes:
    """``sql`` with the string literals of its credentials replaced by ``'<redacted>'``."""
    if not _ACCOUNT.match(sql):
        return sql
    if _SET_PASSWORD.match(sql):
        head, eq, tail = _split_at_assignment(sql)
        return head + eq + _ANY_STRING.sub(REDACTED, tail) if eq else sql
    return _SECRET.sub(lambda m: m.group("lead") + REDACTED, sql)


def _split_at_assignment(sql: bytes) -> tuple[bytes, bytes, bytes]:
    """``sql`` cut at its first ``=`` outside a string literal."""
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in (0x27, 0x22, 0x60):  # ' " `
            m = re.compile(rb"(?:[^%c\\]|\\.|%c%c)*%c" % (c, c, c, c), re.DOTALL).match(sql, i + 1)
            i = m.end() if m else n
            continue
        if c == 0x3D:
            return sql[:i], b"=", sql[i + 1:]
        i += 1
    return sql, b"", b""
