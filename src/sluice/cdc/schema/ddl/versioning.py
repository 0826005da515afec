"""MariaDB's system versioning in DDL: the clauses sqlglot cannot read, and what they do to a table.

A system-versioned table (``CREATE TABLE ... WITH SYSTEM VERSIONING``, ``ALTER TABLE ... ADD SYSTEM
VERSIONING``) keeps a period: a row start and a row end column, declared ``GENERATED ALWAYS AS ROW
START`` / ``ROW END`` with ``PERIOD FOR SYSTEM_TIME (start, end)``, or else added by the server
itself as the invisible ``row_start`` / ``row_end`` after every other column
(``Vers_parse_info::fix_implicit``, sql/handler.cc). ``strip_versioning`` cuts those clauses (and a
column's ``WITH`` / ``WITHOUT SYSTEM VERSIONING``, which changes nothing in its rows) out of a
statement and says what they were; ``settle_versioning`` applies that to the tables the rest of
the statement made: the period columns, their place (implicit ones stay last whatever an ALTER
adds), the primary key without the row end (``TableSchema``), and the lineage of the period
columns an ALTER adds, whose values the server sets (so a mirror holding them is read again).
``ALTER TABLE ... DROP SYSTEM VERSIONING`` removes implicit period columns (explicit ones must be
dropped by the same statement, the server says).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from sqlglot.tokens import Token, TokenType

from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.ddl.text import DIALECT, quiet, unwrap
from sluice.cdc.schema.lineage import ColumnFill, ColumnOrigin, TableChange
from sluice.cdc.schema.model import ColumnDef, SystemTime, TableSchema

__all__ = ["IMPLICIT_PERIOD", "VersioningClauses", "settle_versioning", "strip_versioning"]

#: The period columns the server adds to a table made ``WITH SYSTEM VERSIONING`` without its own:
#: TIMESTAMP(6), NOT NULL, invisible, after every other column (``Vers_parse_info::fix_implicit``, sql/handler.cc).
IMPLICIT_PERIOD = (
    ColumnDef("row_start", "timestamp", nullable=False, fsp=6, visible=False),
    ColumnDef("row_end", "timestamp", nullable=False, fsp=6, visible=False),
)

_ROW_ROLE = re.compile(r"\bROW\s+(START|END)\b")
_NAME_HEADS = frozenset({"ADD", "MODIFY", "CHANGE", "COLUMN", "IF", "NOT", "EXISTS"})


@dataclass(slots=True)
class VersioningClauses:
    """What a statement's versioning clauses said."""

    versioning: bool | None = None  # WITH / ADD SYSTEM VERSIONING: True; DROP SYSTEM VERSIONING: False
    roles: dict[str, str] = field(default_factory=dict)  # column (lower case) -> "start" / "end"
    names: dict[str, str] = field(default_factory=dict)  # lower case -> as written
    period: tuple[str, str] | None = None  # PERIOD FOR SYSTEM_TIME (start, end)


def _word(tok: Token) -> str:
    if tok.token_type in (TokenType.IDENTIFIER, TokenType.STRING):
        return ""
    return tok.text.upper()


def strip_versioning(sql: str) -> tuple[str, VersioningClauses | None]:
    """``sql`` without its system-versioning clauses, and what they said; ``(sql, None)`` when a
    CREATE or ALTER TABLE has none."""
    upper = sql.upper()
    if "VERSIONING" not in upper and "SYSTEM_TIME" not in upper and not _ROW_ROLE.search(upper):
        return sql, None
    text = unwrap(sql)
    with quiet():
        toks = list(DIALECT.tokenize(text))
    words = [_word(t) for t in toks]
    if not words or words[0] not in ("CREATE", "ALTER"):
        return sql, None
    create = words[0] == "CREATE"
    depth = [0] * len(toks)
    d = 0
    for i, tok in enumerate(toks):
        if tok.token_type == TokenType.R_PAREN:
            d -= 1
        depth[i] = d
        if tok.token_type == TokenType.L_PAREN:
            d += 1
    said = VersioningClauses()
    cut: set[int] = set()
    i, n = 0, len(toks)
    while i < n:
        w = words[i]
        nxt = words[i + 1:i + 3]
        if w in ("WITH", "WITHOUT") and nxt == ["SYSTEM", "VERSIONING"]:
            if create and depth[i] == 0:
                said.versioning = w == "WITH"
            cut.update(range(i, i + 3))
            i += 3
        elif w in ("ADD", "DROP") and not create and depth[i] == 0 and nxt == ["SYSTEM", "VERSIONING"]:
            said.versioning = w == "ADD"
            cut.update(_clause(toks, depth, i))
            i += 3
        elif w in ("ADD", "DROP") and not create and depth[i] == 0 and nxt[:1] == ["PERIOD"]:
            span = _clause(toks, depth, i)
            if w == "ADD":
                said.period = _period(toks, words, i, max(span) + 1)
            cut.update(span)
            i = max(span) + 1
        elif w == "PERIOD" and create and depth[i] == 1 and words[i + 1:i + 3] == ["FOR", "SYSTEM_TIME"]:
            span = _clause(toks, depth, i)
            said.period = _period(toks, words, i, max(span) + 1)
            cut.update(span)
            i = max(span) + 1
        elif w == "ROW" and words[i + 1:i + 2] in (["START"], ["END"]) and i > 0 and words[i - 1] == "AS":
            first = i - 3 if words[i - 3:i - 1] == ["GENERATED", "ALWAYS"] else i - 1
            name = _column_name(toks, words, depth, first)
            if name is not None:
                said.roles[name.lower()] = "start" if words[i + 1] == "START" else "end"
                said.names[name.lower()] = name
            cut.update(range(first, i + 2))
            i += 2
        else:
            i += 1
    if not cut:
        return sql, None  # the words were in names or strings
    out, last = [], 0
    for k in sorted(cut):
        out.append(text[last:toks[k].start])
        last = toks[k].end + 1
    out.append(text[last:])
    return " ".join(part.strip() for part in out if part.strip()), said


def _clause(toks: list[Token], depth: list[int], a: int) -> set[int]:
    """Tokens of the comma-separated clause that starts at ``a``, with the comma before it (or the
    one after it when it is the first)."""
    b = a
    while b < len(toks) and depth[b] >= depth[a] and not (
            toks[b].token_type == TokenType.COMMA and depth[b] == depth[a]):
        b += 1
        if b < len(toks) and toks[b].token_type == TokenType.R_PAREN and depth[b] < depth[a]:
            break
    span = set(range(a, b))
    if a > 0 and toks[a - 1].token_type == TokenType.COMMA:
        span.add(a - 1)
    elif b < len(toks) and toks[b].token_type == TokenType.COMMA:
        span.add(b)
    return span


def _period(toks: list[Token], words: list[str], a: int, b: int) -> tuple[str, str] | None:
    """The two names in ``PERIOD FOR SYSTEM_TIME (start, end)`` within toks[a:b]."""
    names = [toks[k].text for k in range(a, b) if toks[k].token_type in (TokenType.VAR, TokenType.IDENTIFIER)
             and words[k] not in ("ADD", "PERIOD", "IF", "NOT", "EXISTS", "SYSTEM_TIME")]
    return (names[0], names[1]) if len(names) >= 2 else None


def _column_name(toks: list[Token], words: list[str], depth: list[int], at: int) -> str | None:
    """The name of the column whose definition holds token ``at``: the first word of its clause, past
    ``ADD [COLUMN] [IF NOT EXISTS]`` or ``MODIFY``; a CHANGE's new name."""
    a = at
    while a > 0:
        kind, level = toks[a - 1].token_type, depth[a - 1]
        if (kind == TokenType.COMMA and level == depth[at]) or (kind == TokenType.L_PAREN and level < depth[at]):
            break
        a -= 1
    heads = [k for k in range(a, at) if words[k] in ("ADD", "MODIFY", "CHANGE")]
    if heads:
        a = heads[-1]
        change = words[a] == "CHANGE"
        while a < at and words[a] in _NAME_HEADS:
            a += 1
        if change:
            a += 1
    return toks[a].text if a < at else None


def settle_versioning(said: VersioningClauses | None, kind: str, tables: list[tuple[str, str]],
                      changes: list[TableChange], before: Catalog, after: Catalog) -> Catalog:
    """The catalog after a statement whose versioning clauses ``strip_versioning`` cut out; fixes the
    lineage in ``changes`` (a list the statement's replay filled) to the resulting columns. Every
    ALTER TABLE comes here (``said`` None when it has no such clause): one of a versioned table keeps
    its period."""
    if kind not in ("create_table", "alter_table") or not tables:
        return after
    if said is None:
        was = before.get(*tables[0])
        if was is None or was.system_time is None:
            return after
        said = VersioningClauses()
    old_key = tables[0]
    change = next((c for c in changes if c.old == old_key), None)
    new_key = change.new if change is not None else old_key
    table = after.get(*new_key)
    if table is None:
        return after
    if kind == "create_table":
        if table is before.get(*new_key):
            return after  # CREATE TABLE IF NOT EXISTS of a table that exists
        old_st = None
    else:
        was = before.get(*old_key)
        old_st = was.system_time if was is not None else table.system_time
    st = _system_time(said, kind, table, old_st, change)
    columns = list(table.columns)
    if old_st is not None and old_st.implicit and (st is None or not st.implicit):
        columns = [c for c in columns if c.name.lower() not in (old_st.start.lower(), old_st.end.lower())]
    if st is not None and st.implicit:
        kept = [c for c in columns if c.name.lower() not in ("row_start", "row_end")]
        columns = [*kept, *IMPLICIT_PERIOD]
    if st is not None and not st.implicit:
        ends = (st.start.lower(), st.end.lower())
        columns = [replace(c, nullable=False) if c.name.lower() in ends else c for c in columns]
    pk = table.primary_key if st is None else tuple(k for k in table.primary_key if k.lower() != st.end.lower())
    settled = replace(table, columns=tuple(columns), primary_key=pk, system_time=st)
    if change is None and settled == before.get(*old_key):
        return after  # an ALTER of nothing a row holds (an index, a table option)
    if kind == "alter_table":
        _relineage(changes, change, old_key, new_key, settled, said, old_st)
    return after.with_table(settled)


def _system_time(said: VersioningClauses, kind: str, table: TableSchema, old: SystemTime | None,
                 change: TableChange | None) -> SystemTime | None:
    if said.versioning is False:
        return None
    if said.versioning or (kind == "create_table" and (said.roles or said.period)):
        if said.period is not None:
            return SystemTime(said.period[0], said.period[1], False)
        starts = [said.names[k] for k, role in said.roles.items() if role == "start"]
        ends = [said.names[k] for k, role in said.roles.items() if role == "end"]
        if starts and ends:
            return SystemTime(starts[0], ends[0], False)
        return SystemTime("row_start", "row_end", True)
    if old is None or old.implicit or change is None or change.columns is None:
        return old
    renamed = {o.source.lower(): o.name for o in change.columns if o.source is not None}
    return SystemTime(renamed.get(old.start.lower(), old.start), renamed.get(old.end.lower(), old.end), False)


def _relineage(changes: list[TableChange], change: TableChange | None, old_key: tuple[str, str],
               new_key: tuple[str, str], table: TableSchema, said: VersioningClauses,
               old_st: SystemTime | None) -> None:
    """The ALTER's lineage in ``table``'s column order: implicit period columns kept or added by the
    server, explicit ones added here filled by the server (not computed by sluice)."""
    origins = {o.name.lower(): o for o in (change.columns or ())} if change is not None else {}
    kept = set() if old_st is None or not old_st.implicit else {old_st.start.lower(), old_st.end.lower()}
    st = table.system_time
    period = set() if st is None else {st.start.lower(), st.end.lower()}
    out = []
    for c in table.columns:
        low = c.name.lower()
        o = origins.get(low)
        if low in kept:
            o = ColumnOrigin(c.name, c.name)
        elif low in period and (o is None or o.source is None or low in said.roles):
            o = ColumnOrigin(c.name, None, ColumnFill(exact=False, why=f"column {c.name} is a period column "
                                                      "whose values the server sets"))
        elif o is None:
            o = ColumnOrigin(c.name, c.name)  # the statement changed no column but the period's
        out.append(o)
    new = TableChange(old_key, new_key, tuple(out))
    if change is None:
        changes.append(new)
    else:
        changes[changes.index(change)] = new
