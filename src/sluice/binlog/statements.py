"""What a QUERY event's statement says about transaction boundaries: BEGIN / COMMIT / ROLLBACK
words and the XA statements with their transaction ids (the one home of these words: the parser
ends its table maps' lifetime with ``is_boundary_query``, the transaction assembler reads the rest).

``classify`` names a statement's verb (``begin``, ``commit``, ``rollback``, ``xa_start``, ``xa_end``,
``xa_prepare``, ``xa_commit``, ``xa_rollback``, ... or ``other``); ``parse_xid`` reads an XA id in any
of the forms the servers log (``X'hex'``, ``0xhex``, quoted strings with escapes, the optional
bqual and formatID) into ``xid_key``'s canonical form, so that an ``XA COMMIT`` finds its prepared
part however each was written.
"""

from __future__ import annotations

import re

from sluice.binlog.events import QueryEvent

__all__ = ["classify", "is_boundary_query", "parse_xid", "xid_key"]

_XA_RE = re.compile(r"^\s*XA\s+(START|BEGIN|END|PREPARE|COMMIT|ROLLBACK|RECOVER)\b\s*(.*?)\s*;?\s*$", re.I | re.S)
_XID_PART_RE = re.compile(r"\s*(?:[xX]'([0-9a-fA-F]*)'|0[xX]([0-9a-fA-F]+)|'((?:[^'\\]|''|\\.)*)'|(\d+))\s*")
_WORDS = {"BEGIN": "begin", "BEGIN WORK": "begin", "COMMIT": "commit", "COMMIT WORK": "commit",
          "ROLLBACK": "rollback", "ROLLBACK WORK": "rollback"}
# The one-word statements, as the servers log them (upper case, no WORK): the parser's quick test.
_BOUNDARY_QUERIES = frozenset(word.encode() for word in _WORDS if " " not in word)
_BOUNDARY_MAX = max(len(word) for word in _BOUNDARY_QUERIES)
_BACKSLASH = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def is_boundary_query(query: bytes) -> bool:
    """Whether a QUERY event's statement is a bare BEGIN, COMMIT or ROLLBACK (any case)."""
    return len(query) <= _BOUNDARY_MAX and query.upper() in _BOUNDARY_QUERIES


def xid_key(format_id: int, gtrid: bytes, bqual: bytes) -> bytes:
    """The key of an XA transaction id, in the form the servers log it: ``X'6162',X'',1``."""
    return f"X'{gtrid.hex()}',X'{bqual.hex()}',{format_id}".encode("ascii")


def _unquote(body: str) -> bytes:
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "'" and i + 1 < n and body[i + 1] == "'":
            out.append("'")
            i += 2
        elif c == "\\" and i + 1 < n:
            out.append(_BACKSLASH.get(body[i + 1], body[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out).encode("utf-8", "surrogateescape")


def parse_xid(text: str) -> bytes | None:
    """The ``xid_key`` of ``gtrid [, bqual [, formatID]]`` (anything after the xid, such as
    ``ONE PHASE``, is ignored); None when the text does not start with an xid."""
    parts: list[bytes | int] = []
    pos = 0
    while len(parts) < 3:
        m = _XID_PART_RE.match(text, pos)
        if m is None:
            return None
        hex1, hex2, quoted, number = m.groups()
        if number is not None:
            if len(parts) < 2:
                return None
            parts.append(int(number))
        elif quoted is not None:
            parts.append(_unquote(quoted))
        else:
            parts.append(bytes.fromhex(hex1 if hex1 is not None else hex2))
        pos = m.end()
        if pos < len(text) and text[pos] == ",":
            pos += 1
            continue
        break
    if not parts or isinstance(parts[0], int):
        return None
    gtrid = parts[0]
    bqual = parts[1] if len(parts) > 1 else b""
    fmt = parts[2] if len(parts) > 2 else 1
    if not isinstance(gtrid, bytes) or not isinstance(bqual, bytes) or not isinstance(fmt, int):
        return None
    return xid_key(fmt, gtrid, bqual)


def classify(event: QueryEvent) -> tuple[str, str]:
    """``(verb, rest)``: begin, commit, rollback, xa_start, xa_end, xa_commit, xa_rollback, ...
    or ``("other", sql)``."""
    q = event.query
    if q == b"BEGIN":
        return "begin", ""
    if q == b"COMMIT":
        return "commit", ""
    sql = event.sql
    head = sql.strip().rstrip(";").strip()
    word = _WORDS.get(" ".join(head.split()).upper()) if len(head) <= 16 else None
    if word is not None:
        return word, ""
    if head[:2].upper() == "XA":
        m = _XA_RE.match(head)
        if m is not None:
            return "xa_" + m.group(1).lower(), m.group(2)
    return "other", sql
