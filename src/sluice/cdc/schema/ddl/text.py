"""The text side of DDL replay: the sqlglot dialect sluice parses DDL with, and the token-level
helpers the statement handlers share (``ddl_detect.is_ddl`` tells which statements are DDL).

The dialect extends sqlglot's MySQL by what the servers
accept and sqlglot lacks (geometry subtypes, INT8 and other aliases, FLOAT UNSIGNED, VISIBLE /
PERSISTENT / COLUMN_FORMAT / STORAGE / SRID attributes, ASC/DESC key parts). ``unwrap`` runs
executable comments (``/*!50100 ..*/``, MariaDB ``/*M!100100 ..*/``) as the server would. ``Ctx``
carries one statement's tokens, the catalog and what the statement touched.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.parsers.mysql import MySQLParser
from sqlglot.tokens import Token, TokenType

from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.lineage import TableChange

# ---------------------------------------------------------------------------------------- dialect

UFLOAT = TokenType.SMALLMONEY  # FLOAT UNSIGNED: sqlglot has no unsigned FLOAT type, MySQL no SMALLMONEY
MULTIPOINT = TokenType.GEOGRAPHYPOINT  # sqlglot has no MULTIPOINT ...
GEOMCOLLECTION = TokenType.GEOGRAPHY  # ... and no GEOMETRYCOLLECTION: stand-ins MySQL does not use


class _Tokenizer(MySQL.Tokenizer):
    COMMANDS = MySQL.Tokenizer.COMMANDS - {TokenType.RENAME}  # RENAME TABLE: we need its tokens
    KEYWORDS = {
        **MySQL.Tokenizer.KEYWORDS,
        "INT2": TokenType.SMALLINT, "INT3": TokenType.MEDIUMINT, "MIDDLEINT": TokenType.MEDIUMINT,
        "INT4": TokenType.INT, "INT8": TokenType.BIGINT, "FLOAT4": TokenType.FLOAT, "FLOAT8": TokenType.DOUBLE,
        "REAL": TokenType.DOUBLE, "LONG": TokenType.MEDIUMTEXT, "LONG VARCHAR": TokenType.MEDIUMTEXT,
        "LONG VARBINARY": TokenType.MEDIUMBLOB, "NATIONAL CHAR": TokenType.NCHAR,
        "NATIONAL CHARACTER": TokenType.NCHAR, "NATIONAL VARCHAR": TokenType.NVARCHAR,
        "NCHAR VARCHAR": TokenType.NVARCHAR, "POINT": TokenType.POINT, "LINESTRING": TokenType.LINESTRING,
        "POLYGON": TokenType.POLYGON, "MULTIPOINT": MULTIPOINT, "MULTILINESTRING": TokenType.MULTILINESTRING,
        "MULTIPOLYGON": TokenType.MULTIPOLYGON, "GEOMETRYCOLLECTION": GEOMCOLLECTION,
        "GEOMCOLLECTION": GEOMCOLLECTION, "INET6": TokenType.IPV6, "INET4": TokenType.IPV4,
    }


class _Parser(MySQLParser):
    SIGNED_TO_UNSIGNED_TYPE_TOKEN = {**MySQLParser.SIGNED_TO_UNSIGNED_TYPE_TOKEN, TokenType.FLOAT: UFLOAT}
    CONSTRAINT_PARSERS = {
        **MySQLParser.CONSTRAINT_PARSERS,
        "VISIBLE": lambda self: exp.Var(this="VISIBLE"),
        "PERSISTENT": lambda self: exp.Var(this="PERSISTENT"),
        "COLUMN_FORMAT": lambda self: self._skip_attribute("COLUMN_FORMAT"),
        "STORAGE": lambda self: self._skip_attribute("STORAGE"),
        "SRID": lambda self: self._skip_attribute("SRID"),
        "ENGINE_ATTRIBUTE": lambda self: self._skip_attribute("ENGINE_ATTRIBUTE"),
        "SECONDARY_ENGINE_ATTRIBUTE": lambda self: self._skip_attribute("SECONDARY_ENGINE_ATTRIBUTE"),
    }

    def _skip_attribute(self, name: str) -> exp.Expr:
        self._match(TokenType.EQ)
        self._advance_any()
        return exp.Var(this=name)

    def _parse_primary_key_part(self) -> exp.Expr | None:
        part = super()._parse_primary_key_part()
        self._match_set((TokenType.ASC, TokenType.DESC))
        return part


class _SluiceMySQL(MySQL):
    Tokenizer = _Tokenizer
    Parser = _Parser


DIALECT = _SluiceMySQL()


class _QuietCommands(logging.Filter):
    """Drops sqlglot's warning when it reads a statement as an opaque command: we handle that."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


_QUIET = _QuietCommands()


@contextmanager
def quiet() -> Iterator[None]:
    """Silence sqlglot's warnings while it parses a statement sluice reads its own way."""
    log = logging.getLogger("sqlglot")
    log.addFilter(_QUIET)
    try:
        yield
    finally:
        log.removeFilter(_QUIET)


# ---------------------------------------------------------------------------------------- text

_EXEC_OPEN = re.compile(r"/\*M?!\d{0,6}")


def quoted_end(text: str, i: int) -> int:
    """The index after the string or quoted name that opens at ``text[i]`` (its end when unclosed):
    a quote doubled, or (in strings) escaped with a backslash, does not close it."""
    quote, j, n = text[i], i + 1, len(text)
    while j < n:
        d = text[j]
        if d == "\\" and quote != "`":
            j += 2
            continue
        if d == quote:
            if j + 1 < n and text[j + 1] == quote:
                j += 2
                continue
            return j + 1
        j += 1
    return n


def unwrap(sql: str) -> str:
    """Replace executable comments by their content, leaving strings and other comments alone."""
    if "/*!" not in sql and "/*M!" not in sql:
        return sql
    out: list[str] = []
    i, start, n, inside = 0, 0, len(sql), False
    while i < n:
        c = sql[i]
        if c in "'\"`":
            i = quoted_end(sql, i)
        elif c == "#" or (c == "-" and sql.startswith("--", i) and sql[i + 2:i + 3].isspace()):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
        elif c == "/" and sql.startswith("/*", i):
            m = _EXEC_OPEN.match(sql, i)
            if m and not inside:
                out += [sql[start:i], " "]
                i = start = m.end()
                inside = True
            else:
                j = sql.find("*/", i + 2)
                i = n if j < 0 else j + 2
        elif inside and c == "*" and sql.startswith("*/", i):
            out += [sql[start:i], " "]
            i = start = i + 2
            inside = False
        else:
            i += 1
    out.append(sql[start:])
    return "".join(out)


class NotUnderstood(Exception):
    """A statement sluice cannot replay exactly, with why; the catalog as far as it got, if any."""
    def __init__(self, message: str, catalog: Catalog | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.catalog = catalog


@dataclass(slots=True)
class Ctx:
    """One statement being replayed: its text and tokens, the catalog, and the tables it touched."""
    catalog: Catalog
    default_db: str | None
    text: str = ""
    toks: list[Token] = field(default_factory=list)
    kind: str = "unparsed"
    db: str | None = None
    tables: list[tuple[str, str]] = field(default_factory=list)
    changes: list[TableChange] = field(default_factory=list)
    rows_replaced: list[tuple[str, str]] = field(default_factory=list)

    def word(self, i: int) -> str:
        """Upper-case text of token i unless it is quoted ("" past the end or for quoted tokens)."""
        if i >= len(self.toks):
            return ""
        tok = self.toks[i]
        if tok.token_type in (TokenType.IDENTIFIER, TokenType.STRING):
            return ""
        return " ".join(tok.text.upper().split())  # multi-word keywords are one token: "PARTITION BY"

    def span(self, a: int, b: int) -> str:
        """Source text of tokens a .. b-1."""
        return self.text[self.toks[a].start:self.toks[b - 1].end + 1] if b > a else ""

    def touch(self, db: str, table: str) -> None:
        """Record that the statement changes ``db.table`` (the first one names its database)."""
        if self.db is None or not self.tables:
            self.db = db
        self.tables.append((db, table))


def parse_statement(text: str) -> Any:
    """The one statement sqlglot reads in ``text`` with sluice's dialect; ``NotUnderstood`` otherwise."""
    with quiet():
        stmts = [s for s in DIALECT.parse(text) if s is not None]
    if len(stmts) != 1:
        raise NotUnderstood(f"expected one statement, sqlglot reads {len(stmts)}")
    stmt = stmts[0]
    if isinstance(stmt, exp.Command):
        raise NotUnderstood(f"sqlglot cannot read {str(stmt.this).upper()} {str(stmt.expression)[:80]!r}")
    return stmt


def paren_groups(toks: list[Token], a: int, b: int) -> list[tuple[int, int]]:
    """Token ranges between the top-level commas of toks[a:b]."""
    out, depth, start = [], 0, a
    for i in range(a, b):
        tt = toks[i].token_type
        if tt == TokenType.L_PAREN:
            depth += 1
        elif tt == TokenType.R_PAREN:
            depth -= 1
        elif tt == TokenType.COMMA and depth == 0:
            out.append((start, i))
            start = i + 1
    if start < b:
        out.append((start, b))
    return out


def top_level_cut(ctx: Ctx, a: int, stops: tuple[str, ...]) -> int:
    """Index of the first top-level token (or pair of tokens) from ``stops`` at or after a (len(toks)
    if none); the tokenizer reads some pairs as one token ("PARTITION BY")."""
    depth = 0
    for i in range(a, len(ctx.toks)):
        tt = ctx.toks[i].token_type
        if tt == TokenType.L_PAREN:
            depth += 1
        elif tt == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0:
            w = ctx.word(i)
            if w in stops or f"{w} {ctx.word(i + 1)}" in stops:
                return i
    return len(ctx.toks)


_PUNCT = frozenset({TokenType.COMMA, TokenType.L_PAREN, TokenType.R_PAREN, TokenType.DOT, TokenType.SEMICOLON,
                    TokenType.STRING, TokenType.NUMBER, TokenType.EQ})


def if_exists(ctx: Ctx, i: int) -> tuple[bool, int]:
    """Whether ``IF EXISTS`` or ``IF NOT EXISTS`` is at token i, and the index after it."""
    if ctx.word(i) != "IF":
        return False, i
    words = 3 if ctx.word(i + 1) == "NOT" else 2
    if ctx.word(i + words - 1) != "EXISTS":
        raise NotUnderstood("IF without EXISTS")
    return True, i + words


def read_name(ctx: Ctx, i: int) -> tuple[str, str, int]:
    """A (possibly qualified) table name starting at token i: (db, table, index after it)."""
    toks = ctx.toks
    if i >= len(toks) or toks[i].token_type in _PUNCT:
        raise NotUnderstood("expected a table name")
    first = toks[i].text
    if i + 1 < len(toks) and toks[i + 1].token_type == TokenType.DOT:
        if i + 2 >= len(toks) or toks[i + 2].token_type in _PUNCT:
            raise NotUnderstood(f"expected a table name after `{first}`.")
        return first, toks[i + 2].text, i + 3
    return _need_db(ctx, first), first, i + 1


def _need_db(ctx: Ctx, table: str, db: str | None = None) -> str:
    db = db or ctx.default_db
    if not db:
        raise NotUnderstood(f"`{table}` names no database and the event has no default database")
    return db


def object_name(ctx: Ctx, node: Any) -> tuple[str, str]:
    """``(db, table)`` of a table node, the statement's default database filling a missing one."""
    if not isinstance(node, exp.Table) or not node.name:
        raise NotUnderstood("expected a table name")
    return _need_db(ctx, node.name, node.db or None), node.name
