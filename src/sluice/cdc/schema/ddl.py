"""DDL found in QUERY events, replayed on a ``Catalog`` with sqlglot's MySQL dialect.

``is_ddl`` answers from the leading keyword alone (after comments) whether a statement may change
the schema; it runs on every QUERY event. ``apply_ddl`` replays one statement on a catalog and
reports what it did as a ``DdlOutcome``. Statements are parsed by sqlglot, with a MySQL dialect
extended by what the servers accept and sqlglot lacks (geometry subtypes, INT8 and other aliases,
FLOAT UNSIGNED, VISIBLE / PERSISTENT / COLUMN_FORMAT / STORAGE / SRID attributes, ASC/DESC key
parts). Pre-processing of the text is limited to: unwrapping executable comments (``/*!50100 ..*/``,
MariaDB ``/*M!100100 ..*/``, assumed to have run), cutting partition clauses and MySQL's
``START TRANSACTION`` suffix, and re-shaping what sqlglot reads as opaque commands (RENAME TABLE,
ALTER DATABASE, ALTER TABLE ... CONVERT TO / RENAME AS / ADD (a, b)) into statements it parses.
ALTER TABLE clauses are read one by one and applied in the server's order
(``mysql_prepare_alter_table``, sql/sql_table.cc): DROP, CHANGE, MODIFY and RENAME COLUMN name the
old columns; added and re-positioned columns then go in clause order, AFTER naming the new layout.
Character sets cascade column <- table <- database <- server (``Catalog``). Temporary tables are
not in row-based binlogs and do not change the catalog. ``apply_ddl`` never raises: anything
sqlglot cannot parse, or a clause sluice does not model, comes back with ``understood=False`` and
the reason, and the tables concerned keep their old definition.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.parsers.mysql import MySQLParser
from sqlglot.tokens import Token, TokenType

from sluice.cdc.schema.lineage import ColumnOrigin, TableChange, column_fill
from sluice.cdc.schema.model import Catalog, ColumnDef, TableSchema
from sluice.cdc.schema.typemap import (
    BLOB_TYPES,
    CHARACTER_TYPES,
    TEXT_TYPES,
    blob_max_bytes,
    charset_of_collation,
    mbmaxlen,
    normalize_charset,
    normalize_collation,
    sized_blob_type,
)
from sluice.errors import SchemaError

__all__ = ["DdlOutcome", "apply_ddl", "enum_members", "is_ddl"]


@dataclass(frozen=True, slots=True)
class DdlOutcome:
    """What ``apply_ddl`` did with one statement."""

    kind: str  # create_table | alter_table | drop_table | rename_table | truncate_table | create_database
    #            | drop_database | alter_database | other_ddl | unparsed
    db: str | None  # the database the statement acts on (its first named object's, else the default)
    tables: tuple[tuple[str, str], ...]  # (db, table) affected; RENAME lists old and new
    understood: bool  # False: not parsed or a clause not modelled; those tables keep their definition
    message: str | None = None  # why not understood
    changes: tuple[TableChange, ...] = ()  # renames and column lineage of the tables changed (lineage.py)


# ---------------------------------------------------------------------------------------- is_ddl

_DDL_WORD = re.compile(r"(?:CREATE|ALTER|DROP|RENAME|TRUNCATE)(?![\w$])", re.IGNORECASE)
_LEAD = re.compile(r"(?:\s+|/\*M?!\d*|/\*(?!M?!).*?\*/|#[^\n]*|--(?=\s)[^\n]*)*", re.DOTALL)
_LEAD_CHARS = frozenset(" \t\r\n\f\v/#-")


def is_ddl(sql: str) -> bool:
    """True when the statement starts (after comments) with CREATE, ALTER, DROP, RENAME or TRUNCATE."""
    if not sql:
        return False
    start = _LEAD.match(sql).end() if sql[0] in _LEAD_CHARS else 0  # type: ignore[union-attr]
    return _DDL_WORD.match(sql, start) is not None


# ---------------------------------------------------------------------------------------- dialect

_UFLOAT = TokenType.SMALLMONEY  # FLOAT UNSIGNED: sqlglot has no unsigned FLOAT type, MySQL no SMALLMONEY
_MULTIPOINT = TokenType.GEOGRAPHYPOINT  # sqlglot has no MULTIPOINT ...
_GEOMCOLLECTION = TokenType.GEOGRAPHY  # ... and no GEOMETRYCOLLECTION: stand-ins MySQL does not use


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
        "POLYGON": TokenType.POLYGON, "MULTIPOINT": _MULTIPOINT, "MULTILINESTRING": TokenType.MULTILINESTRING,
        "MULTIPOLYGON": TokenType.MULTIPOLYGON, "GEOMETRYCOLLECTION": _GEOMCOLLECTION,
        "GEOMCOLLECTION": _GEOMCOLLECTION, "INET6": TokenType.IPV6, "INET4": TokenType.IPV4,
    }


class _Parser(MySQLParser):
    SIGNED_TO_UNSIGNED_TYPE_TOKEN = {**MySQLParser.SIGNED_TO_UNSIGNED_TYPE_TOKEN, TokenType.FLOAT: _UFLOAT}
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


_DIALECT = _SluiceMySQL()


class _QuietCommands(logging.Filter):
    """Drops sqlglot's warning when it reads a statement as an opaque command: we handle that."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


_QUIET = _QuietCommands()


@contextmanager
def _quiet() -> Iterator[None]:
    log = logging.getLogger("sqlglot")
    log.addFilter(_QUIET)
    try:
        yield
    finally:
        log.removeFilter(_QUIET)


# ---------------------------------------------------------------------------------------- text

_EXEC_OPEN = re.compile(r"/\*M?!\d{0,6}")


def _unwrap(sql: str) -> str:
    """Replace executable comments by their content, leaving strings and other comments alone."""
    if "/*!" not in sql and "/*M!" not in sql:
        return sql
    out: list[str] = []
    i, start, n, inside = 0, 0, len(sql), False
    while i < n:
        c = sql[i]
        if c in "'\"`":
            j = i + 1
            while j < n:
                d = sql[j]
                if d == "\\" and c != "`":
                    j += 2
                    continue
                if d == c:
                    if j + 1 < n and sql[j + 1] == c:
                        j += 2
                        continue
                    break
                j += 1
            i = j + 1
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


class _NotUnderstood(Exception):
    def __init__(self, message: str, catalog: Catalog | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.catalog = catalog


@dataclass(slots=True)
class _Ctx:
    catalog: Catalog
    default_db: str | None
    text: str = ""
    toks: list[Token] = field(default_factory=list)
    kind: str = "unparsed"
    db: str | None = None
    tables: list[tuple[str, str]] = field(default_factory=list)
    changes: list[TableChange] = field(default_factory=list)

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
        if self.db is None or not self.tables:
            self.db = db
        self.tables.append((db, table))


def _parse(text: str) -> Any:
    with _quiet():
        stmts = [s for s in _DIALECT.parse(text) if s is not None]
    if len(stmts) != 1:
        raise _NotUnderstood(f"expected one statement, sqlglot reads {len(stmts)}")
    stmt = stmts[0]
    if isinstance(stmt, exp.Command):
        raise _NotUnderstood(f"sqlglot cannot read {str(stmt.this).upper()} {str(stmt.expression)[:80]!r}")
    return stmt


def _groups(toks: list[Token], a: int, b: int) -> list[tuple[int, int]]:
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


def _top_level_cut(ctx: _Ctx, a: int, stops: tuple[str, ...]) -> int:
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


def _read_name(ctx: _Ctx, i: int) -> tuple[str, str, int]:
    """A (possibly qualified) table name starting at token i: (db, table, index after it)."""
    toks = ctx.toks
    if i >= len(toks) or toks[i].token_type in _PUNCT:
        raise _NotUnderstood("expected a table name")
    first = toks[i].text
    if i + 1 < len(toks) and toks[i + 1].token_type == TokenType.DOT:
        if i + 2 >= len(toks) or toks[i + 2].token_type in _PUNCT:
            raise _NotUnderstood(f"expected a table name after `{first}`.")
        return first, toks[i + 2].text, i + 3
    return _need_db(ctx, first), first, i + 1


def _need_db(ctx: _Ctx, table: str, db: str | None = None) -> str:
    db = db or ctx.default_db
    if not db:
        raise _NotUnderstood(f"`{table}` names no database and the event has no default database")
    return db


def _name(ctx: _Ctx, node: Any) -> tuple[str, str]:
    if not isinstance(node, exp.Table) or not node.name:
        raise _NotUnderstood("expected a table name")
    return _need_db(ctx, node.name, node.db or None), node.name


# ---------------------------------------------------------------------------------------- dispatch

_VERBS = frozenset({"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE"})
_ADMIN = frozenset({"GRANT", "REVOKE", "ANALYZE", "OPTIMIZE", "REPAIR", "CHECK", "FLUSH", "INSTALL",
                    "UNINSTALL", "SET"})
_OBJECTS = frozenset({"TABLE", "TABLES", "DATABASE", "SCHEMA", "INDEX", "VIEW", "TRIGGER", "PROCEDURE",
                      "FUNCTION", "EVENT", "USER", "ROLE", "SEQUENCE", "SERVER", "TABLESPACE", "LOGFILE",
                      "INSTANCE", "RESOURCE", "PACKAGE", "SYNONYM", "UNDO", "LIBRARY", "SPATIAL"})


def apply_ddl(catalog: Catalog, sql: str, default_db: str | None) -> tuple[Catalog, DdlOutcome]:
    """Replay one statement on ``catalog``; ``default_db`` is the QUERY event's schema.

    Returns the new catalog (the same object when nothing changed) and the outcome. Never raises.
    """
    ctx = _Ctx(catalog, default_db or None, db=default_db or None)
    try:
        new = _dispatch(ctx, sql)
    except _NotUnderstood as exc:
        cat = exc.catalog if exc.catalog is not None else catalog
        return cat, DdlOutcome(ctx.kind, ctx.db, tuple(ctx.tables), False, exc.message)
    except SqlglotError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return catalog, DdlOutcome(ctx.kind, ctx.db, tuple(ctx.tables), False, f"sqlglot cannot parse it: {first}")
    except Exception as exc:  # the contract: a statement never stops the stream; the message says why
        return catalog, DdlOutcome(ctx.kind, ctx.db, tuple(ctx.tables), False,
                                   f"cannot replay it ({type(exc).__name__}: {exc})")
    return new, DdlOutcome(ctx.kind, ctx.db, tuple(ctx.tables), True, None, tuple(ctx.changes))


def _dispatch(ctx: _Ctx, sql: str) -> Catalog:
    ctx.text = _unwrap(sql)
    with _quiet():
        toks = list(_DIALECT.tokenize(ctx.text))
    while toks and toks[-1].token_type == TokenType.SEMICOLON:
        toks.pop()
    ctx.toks = toks
    if not toks:
        raise _NotUnderstood("the statement is empty")
    verb = ctx.word(0)
    if verb in _ADMIN:
        ctx.kind = "other_ddl"
        return ctx.catalog
    if verb not in _VERBS:
        raise _NotUnderstood(f"not a DDL statement (it starts with {toks[0].text[:40]!r})")
    if verb == "TRUNCATE":
        ctx.kind = "truncate_table"
        return _truncate(ctx)
    k, temporary = 1, False
    while k < min(len(toks), 24) and ctx.word(k) not in _OBJECTS:
        temporary = temporary or ctx.word(k) == "TEMPORARY"
        k += 1
    obj = ctx.word(k)
    if not obj:
        raise _NotUnderstood(f"{verb} of what? no TABLE, DATABASE or other object keyword found")
    if obj in ("TABLE", "TABLES") and temporary:
        ctx.kind = "other_ddl"  # temporary tables are not in row-based binlogs
        return ctx.catalog
    handler = _HANDLERS.get((verb, "TABLE" if obj == "TABLES" else "DATABASE" if obj == "SCHEMA" else obj))
    if handler is None:
        ctx.kind = "other_ddl"
        return ctx.catalog
    return handler(ctx, k)


# ---------------------------------------------------------------------------------------- columns

_INTS = {"TINYINT": "tinyint", "SMALLINT": "smallint", "MEDIUMINT": "mediumint", "INT": "int", "BIGINT": "bigint"}
_TYPES: dict[str, tuple[str, bool]] = {
    **{k: (v, False) for k, v in _INTS.items()},
    **{"U" + k: (v, True) for k, v in _INTS.items()},
    "BOOLEAN": ("tinyint", False), "SERIAL": ("bigint", True),
    "DECIMAL": ("decimal", False), "UDECIMAL": ("decimal", True), "FLOAT": ("float", False),
    _UFLOAT.name: ("float", True), "DOUBLE": ("double", False), "UDOUBLE": ("double", True), "BIT": ("bit", False),
    "DATE": ("date", False), "TIME": ("time", False), "DATETIME": ("datetime", False),
    "TIMESTAMP": ("timestamp", False), "TIMESTAMPTZ": ("timestamp", False), "TIMESTAMPLTZ": ("timestamp", False),
    "YEAR": ("year", False), "CHAR": ("char", False), "NCHAR": ("char", False), "VARCHAR": ("varchar", False),
    "NVARCHAR": ("varchar", False), "BINARY": ("binary", False), "VARBINARY": ("varbinary", False),
    **{k.upper(): (k, False) for k in (*TEXT_TYPES, *BLOB_TYPES)},
    "JSON": ("json", False), "ENUM": ("enum", False), "SET": ("set", False), "GEOMETRY": ("geometry", False),
    "POINT": ("point", False), "LINESTRING": ("linestring", False), "POLYGON": ("polygon", False),
    _MULTIPOINT.name: ("multipoint", False), "MULTILINESTRING": ("multilinestring", False),
    "MULTIPOLYGON": ("multipolygon", False), _GEOMCOLLECTION.name: ("geometrycollection", False),
    "VECTOR": ("vector", False), "UUID": ("uuid", False), "IPV4": ("inet4", False), "IPV6": ("inet6", False),
}
_BLOB_OF_TEXT = dict(zip(TEXT_TYPES, BLOB_TYPES, strict=True))


def _int_param(p: Any, what: str) -> int:
    if isinstance(p, exp.DataTypeParam):
        p = p.this
    if isinstance(p, exp.Literal) and not p.is_string:
        try:
            return int(p.this)
        except ValueError:
            pass
    raise _NotUnderstood(f"{what}: expected a whole number, found {p.sql() if isinstance(p, exp.Expr) else p!r}")


def _member(p: Any, what: str) -> str:
    if isinstance(p, exp.Introducer):
        p = p.expression
    if isinstance(p, exp.Literal) and p.is_string:
        return str(p.this)
    raise _NotUnderstood(f"{what}: expected a quoted member, found {p.sql() if isinstance(p, exp.Expr) else p!r}")


def _server_defaults(catalog: Catalog) -> tuple[str | None, str | None]:
    if catalog.server_charset is not None:
        return catalog.server_charset, catalog.server_collation or catalog.default_collation(catalog.server_charset)
    cs = {"mysql": "utf8mb4", "mariadb": "latin1"}.get(catalog.flavor or "")
    return cs, catalog.default_collation(cs)


def _db_defaults(catalog: Catalog, db: str) -> tuple[str | None, str | None]:
    if db in catalog.database_defaults():
        cs = catalog.database_charset(db)
        if cs is not None:
            return cs, catalog.database_collation(db)
    return _server_defaults(catalog)


def _pair(catalog: Catalog, cs: str | None, coll: str | None,
          fallback: tuple[str | None, str | None]) -> tuple[str | None, str | None]:
    """(charset, collation) from an explicit charset and/or collation, else the inherited pair."""
    if cs is None and coll is None:
        return fallback
    if cs is None:
        cs = charset_of_collation(coll)
    if coll is None:
        coll = catalog.default_collation(cs)
    return cs, coll


def _column(node: exp.ColumnDef, table_cs: str | None, table_coll: str | None,
            catalog: Catalog) -> tuple[ColumnDef, bool]:
    """The ColumnDef of a column definition and whether it declares itself the PRIMARY KEY."""
    name = node.name
    kind = node.args.get("kind")
    if not isinstance(kind, exp.DataType):
        raise _NotUnderstood(f"column `{name}` has no data type sluice can read")
    dtype = kind.this.name if hasattr(kind.this, "name") else str(kind.this)
    if dtype not in _TYPES:
        raise _NotUnderstood(f"column `{name}`: type {kind.sql(dialect='mysql')} is not one sluice models")
    dt, unsigned = _TYPES[dtype]
    params = list(kind.expressions or [])
    what = f"column `{name}`"
    nullable, visible, pk, binary_attr = dtype != "SERIAL", True, False, False
    cs: str | None = "utf8mb3" if dtype in ("NCHAR", "NVARCHAR") else None
    coll: str | None = None
    for cons in node.args.get("constraints") or []:
        c = cons.args.get("kind") if isinstance(cons, exp.ColumnConstraint) else cons
        if isinstance(c, exp.NotNullColumnConstraint):
            nullable = bool(c.args.get("allow_null"))
        elif isinstance(c, exp.PrimaryKeyColumnConstraint):
            pk, nullable = True, False
        elif isinstance(c, exp.CharacterSetColumnConstraint):
            cs = normalize_charset(c.this.name)
        elif isinstance(c, exp.CollateColumnConstraint):
            coll = normalize_collation(c.this.name)
        elif isinstance(c, exp.BinaryColumnConstraint):
            binary_attr = True
        elif isinstance(c, exp.ZeroFillColumnConstraint):
            unsigned = True
        elif isinstance(c, exp.InvisibleColumnConstraint):
            visible = False
        elif isinstance(c, exp.Var) and c.name == "VISIBLE":
            visible = True
    length = precision = scale = fsp = None
    enum_values = set_values = None
    if dt == "decimal":
        precision = _int_param(params[0], what) if params else 10
        scale = _int_param(params[1], what) if len(params) > 1 else 0
    elif dt == "float" and len(params) == 1 and _int_param(params[0], what) > 24:
        dt = "double"
    elif dt in ("bit", "char", "binary"):
        length = _int_param(params[0], what) if params else 1
    elif dt in ("varchar", "varbinary"):
        if not params:
            raise _NotUnderstood(f"{what}: {dt} needs a length")
        length = _int_param(params[0], what)
    elif dt in ("time", "datetime", "timestamp"):
        fsp = _int_param(params[0], what) if params else 0
    elif dt == "enum":
        enum_values = tuple(_member(p, what) for p in params)
    elif dt == "set":
        set_values = tuple(_member(p, what) for p in params)
    elif dt == "vector" and params:
        length = _int_param(params[0], what)
    if dt == "json" and catalog.flavor == "mariadb":
        dt, cs, coll = "longtext", "utf8mb4", "utf8mb4_bin"  # MariaDB's JSON is LONGTEXT + CHECK
    if dt in CHARACTER_TYPES:
        if cs is None and coll is None:
            cs, coll = table_cs, table_coll
        else:
            cs, coll = _pair(catalog, cs, coll, (table_cs, table_coll))
        if binary_attr and cs is not None and cs != "binary":
            coll = f"{cs}_bin"
        if cs == "binary":
            coll = "binary"
            dt = {"char": "binary", "varchar": "varbinary"}.get(dt) or _BLOB_OF_TEXT.get(dt, dt)
        if dt in TEXT_TYPES and params:
            dt = sized_blob_type(_int_param(params[0], what) * (mbmaxlen(cs) or 1), text=True)
    if dt in BLOB_TYPES and params:
        dt = sized_blob_type(_int_param(params[0], what), text=False)
    if dt in ("binary", "varbinary", *BLOB_TYPES):
        cs, coll = "binary", "binary"
    elif dt not in CHARACTER_TYPES:
        cs = coll = None
    col = ColumnDef(name, dt, unsigned=unsigned, nullable=nullable, length=length, precision=precision,
                    scale=scale, fsp=fsp, charset=cs, collation=coll, enum_values=enum_values,
                    set_values=set_values, visible=visible)
    return col, pk


def enum_members(column_type: str) -> tuple[str, ...]:
    """The members of an ``enum(...)`` / ``set(...)`` type as ``information_schema.COLUMNS.COLUMN_TYPE``
    writes it (quotes doubled, backslashes escaped), read by the same parser as DDL."""
    try:
        stmt = _parse(f"CREATE TABLE `_` (`_` {column_type})")
        kind = stmt.this.expressions[0].args["kind"]
        return tuple(_member(p, "COLUMN_TYPE") for p in kind.expressions)
    except (_NotUnderstood, SqlglotError, AttributeError, IndexError, KeyError) as exc:
        raise SchemaError(f"cannot read the members of the column type {column_type[:200]!r}: {exc}") from None


def _primary_key_of(node: Any) -> list[str] | None:
    """Column names of a PRIMARY KEY table constraint, or None if the node is no primary key."""
    if isinstance(node, exp.Constraint):
        for e in node.expressions:
            keys = _primary_key_of(e)
            if keys is not None:
                return keys
        return None
    if not isinstance(node, exp.PrimaryKey):
        return None
    names = []
    for part in node.expressions:
        while isinstance(part, (exp.Ordered, exp.ColumnPrefix)):
            part = part.this
        if not isinstance(part, (exp.Identifier, exp.Column)) or not part.name:
            raise _NotUnderstood("a PRIMARY KEY part that is not a column")
        names.append(part.name)
    return names


def _with_pk(table: TableSchema, names: list[str]) -> TableSchema:
    """``table`` with this primary key; its columns become NOT NULL, as the server makes them."""
    cols = list(table.columns)
    pk = []
    for n in names:
        i = table.index_of(n)
        if i is None:
            raise _NotUnderstood(f"the PRIMARY KEY names `{n}`, which {table.db}.{table.name} does not have")
        cols[i] = replace(cols[i], nullable=False)
        pk.append(cols[i].name)
    return replace(table, columns=tuple(cols), primary_key=tuple(pk))


def _unique_names(db: str, name: str, cols: list[ColumnDef]) -> None:
    seen = set()
    for c in cols:
        if c.name.lower() in seen:
            raise _NotUnderstood(f"{db}.{name} would have two columns named `{c.name}`")
        seen.add(c.name.lower())


def _table_options(props: list[Any]) -> tuple[str | None, str | None]:
    cs = coll = None
    for p in props:
        if isinstance(p, exp.CharacterSetProperty):
            cs = normalize_charset(p.this.name)
        elif isinstance(p, exp.CollateProperty):
            coll = normalize_collation(p.this.name)
    return cs, coll


# ---------------------------------------------------------------------------------------- tables

def _create_table(ctx: _Ctx, k: int) -> Catalog:
    ctx.kind = "create_table"
    cut = _top_level_cut(ctx, k + 1, ("PARTITION BY", "START TRANSACTION"))
    stmt = _parse(ctx.text[:ctx.toks[cut].start] if cut < len(ctx.toks) else ctx.text)
    if not isinstance(stmt, exp.Create) or str(stmt.args.get("kind") or "").upper() != "TABLE":
        raise _NotUnderstood(f"sqlglot reads it as {type(stmt).__name__}, not CREATE TABLE")
    target = stmt.this
    schema = target if isinstance(target, exp.Schema) else None
    db, name = _name(ctx, schema.this if schema is not None else target)
    ctx.touch(db, name)
    catalog = ctx.catalog
    props = list(stmt.args["properties"].expressions) if stmt.args.get("properties") else []
    if stmt.args.get("exists") and catalog.get(db, name) is not None:
        return catalog
    nodes = list(schema.expressions) if schema is not None else []
    like = next((p for p in (*props, *nodes) if isinstance(p, exp.LikeProperty)), None)
    if like is not None:
        src_db, src_name = _name(ctx, like.this)
        src = catalog.get(src_db, src_name)
        if src is None:
            raise _NotUnderstood(f"CREATE TABLE ... LIKE {src_db}.{src_name}: that table is not known to the "
                                 "schema history")
        return catalog.with_table(replace(src, db=db, name=name))
    if stmt.expression is not None:
        raise _NotUnderstood("CREATE TABLE ... SELECT: the column types come from the query (in row format the "
                             "servers log the resulting CREATE TABLE instead)")
    if schema is None:
        raise _NotUnderstood("CREATE TABLE without a column list")
    cs, coll = _pair(catalog, *_table_options(props), _db_defaults(catalog, db))
    columns: list[ColumnDef] = []
    pk: list[str] = []
    for node in nodes:
        if isinstance(node, exp.ColumnDef):
            col, inline_pk = _column(node, cs, coll, catalog)
            columns.append(col)
            if inline_pk:
                pk = [col.name]
        else:
            keys = _primary_key_of(node)
            if keys is not None:
                pk = keys
    _unique_names(db, name, columns)
    return catalog.with_table(_with_pk(TableSchema(db, name, tuple(columns), (), cs, coll), pk))


def _drop_table(ctx: _Ctx, k: int) -> Catalog:
    ctx.kind = "drop_table"
    stmt = _parse(ctx.text)
    if not isinstance(stmt, exp.Drop):
        raise _NotUnderstood(f"sqlglot reads it as {type(stmt).__name__}, not DROP TABLE")
    catalog = ctx.catalog
    for t in stmt.args.get("tables") or []:
        db, name = _name(ctx, t)
        ctx.touch(db, name)
        catalog = catalog.without_table(db, name)
    return catalog


def _truncate(ctx: _Ctx) -> Catalog:
    stmt = _parse(ctx.text)
    if not isinstance(stmt, exp.TruncateTable):
        raise _NotUnderstood(f"sqlglot reads it as {type(stmt).__name__}, not TRUNCATE TABLE")
    for t in stmt.expressions:
        ctx.touch(*_name(ctx, t))
    return ctx.catalog


def _rename_table(ctx: _Ctx, k: int) -> Catalog:
    ctx.kind = "rename_table"
    catalog, unknown = ctx.catalog, []
    for a, b in _groups(ctx.toks, k + 1, len(ctx.toks)):
        to = next((i for i in range(a, b) if ctx.word(i) == "TO"), None)
        if to is None:
            raise _NotUnderstood(f"RENAME TABLE: expected `old TO new`, found {ctx.span(a, b)!r}")
        stmt = _parse(f"ALTER TABLE {ctx.span(a, to)} RENAME TO {ctx.span(to + 1, b)}")
        actions = stmt.args.get("actions") or []
        if not isinstance(stmt, exp.Alter) or len(actions) != 1 or not isinstance(actions[0], exp.AlterRename):
            raise _NotUnderstood(f"RENAME TABLE: cannot read {ctx.span(a, b)!r}")
        src, dst = _name(ctx, stmt.this), _name(ctx, actions[0].this)
        ctx.touch(*src)
        ctx.touch(*dst)
        table = catalog.get(*src)
        catalog = catalog.without_table(*src).without_table(*dst)
        if table is None:
            unknown.append(f"{src[0]}.{src[1]}")
        else:
            catalog = catalog.with_table(replace(table, db=dst[0], name=dst[1]))
            ctx.changes.append(TableChange(src, dst))
    if unknown:
        raise _NotUnderstood(f"RENAME TABLE of {', '.join(unknown)}, not known to the schema history", catalog)
    return catalog


# ALTER TABLE clauses that change no column, key or character set.
_NOOP_HEADS = frozenset({"DISABLE", "ENABLE", "DISCARD", "IMPORT", "FORCE", "ORDER", "LOCK", "ALGORITHM",
                         "WITH", "WITHOUT", "ANALYZE", "OPTIMIZE", "REBUILD", "REPAIR", "COALESCE",
                         "REORGANIZE", "EXCHANGE", "SECONDARY_LOAD", "SECONDARY_UNLOAD", "UPGRADE"})


def _alter_table(ctx: _Ctx, k: int) -> Catalog:
    ctx.kind = "alter_table"
    i = k + 1
    if ctx.word(i) == "IF" and ctx.word(i + 1) == "EXISTS":
        i += 2
    db, name, i = _read_name(ctx, i)
    ctx.touch(db, name)
    if ctx.word(i) == "NOWAIT":
        i += 1
    elif ctx.word(i) == "WAIT":
        i += 2
    end = _top_level_cut(ctx, i, ("PARTITION BY", "REMOVE PARTITIONING"))
    ops: list[tuple[Any, ...]] = []
    for a, b in _groups(ctx.toks, i, end):
        if ctx.word(a + 1) == "PARTITION":
            break  # partition maintenance: the rest of the statement is about partitions too
        ops += _alter_clause(ctx, a, b)
    table = ctx.catalog.get(db, name)
    if all(op[0] == "noop" for op in ops):
        return ctx.catalog
    if table is None:
        raise _NotUnderstood(f"ALTER TABLE of {db}.{name}, a table the schema history does not know")
    new, origins = _apply_alter(ctx, table, ops)
    ctx.changes.append(TableChange((db, name), (new.db, new.name), origins))
    catalog = ctx.catalog
    if (new.db, new.name) != (db, name):
        ctx.touch(new.db, new.name)
        catalog = catalog.without_table(db, name)
    return catalog.with_table(new)


def _alter_clause(ctx: _Ctx, a: int, b: int) -> list[tuple[Any, ...]]:
    w0, w1 = ctx.word(a), ctx.word(a + 1)
    if w0 in _NOOP_HEADS:
        return [("noop",)]
    if w0 == "ADD":
        p = a + 2 if w1 == "COLUMN" else a + 1
        if p < b and ctx.toks[p].token_type == TokenType.L_PAREN and ctx.toks[b - 1].token_type == TokenType.R_PAREN:
            stmt = _parse(f"CREATE TABLE `_` ({ctx.span(p + 1, b - 1)})")
            out: list[tuple[Any, ...]] = []
            for node in stmt.this.expressions:
                keys = _primary_key_of(node)
                out.append(("add", node, None, False) if isinstance(node, exp.ColumnDef)
                           else ("noop",) if keys is None else ("add_pk", keys))
            return out
    if w0 == "CONVERT" and w1 == "TO":
        stmt = _parse(f"ALTER TABLE `_` DEFAULT {ctx.span(a + 2, b)}")
        cs, coll = _table_options(list(stmt.args.get("options") or []))
        if cs is None:
            raise _NotUnderstood(f"cannot read {ctx.span(a, b)!r}")
        return [("convert", cs, coll)]
    if w0 == "RENAME" and w1 not in ("COLUMN", "INDEX", "KEY"):
        p = a + 2 if w1 in ("TO", "AS") else a + 1
        db, name, p = _read_name(ctx, p)
        if p != b:
            raise _NotUnderstood(f"cannot read {ctx.span(a, b)!r}")
        return [("rename", db, name)]
    stmt = _parse(f"ALTER TABLE `_` {ctx.span(a, b)}")
    if not isinstance(stmt, exp.Alter):
        raise _NotUnderstood(f"cannot read the ALTER TABLE clause {ctx.span(a, b)!r}")
    ops = []
    for x in stmt.args.get("actions") or []:
        ops += _action(ctx, x)
    for o in stmt.args.get("options") or []:
        if isinstance(o, exp.CharacterSetProperty):
            ops.append(("charset", normalize_charset(o.this.name)))
        elif isinstance(o, exp.CollateProperty):
            ops.append(("collate", normalize_collation(o.this.name)))
        else:
            ops.append(("noop",))
    return ops


def _position(node: exp.ColumnDef) -> tuple[str, str | None] | None:
    pos = node.args.get("position")
    if not isinstance(pos, exp.ColumnPosition):
        return None
    where = str(pos.args.get("position") or "").upper()
    if where == "FIRST":
        return ("FIRST", None)
    return ("AFTER", pos.this.name if pos.this is not None else "")


def _action(ctx: _Ctx, x: Any) -> list[tuple[Any, ...]]:
    if isinstance(x, exp.ColumnDef):
        return [("add", x, _position(x), bool(x.args.get("exists")))]
    if isinstance(x, exp.Drop):
        kind = str(x.args.get("kind") or "").upper()
        if kind == "COLUMN":
            return [("drop", t.name, bool(x.args.get("exists"))) for t in x.args.get("tables") or []]
        if kind in ("INDEX", "KEY", "FOREIGN KEY", "CONSTRAINT", "CHECK"):
            return [("noop",)]
    elif isinstance(x, exp.ModifyColumn):
        cd, old = x.this, x.args.get("rename_from")
        return [("change", old.name if old is not None else cd.name, cd, _position(cd))]
    elif isinstance(x, exp.RenameColumn):
        return [("rename_col", x.this.name, x.args["to"].name)]
    elif isinstance(x, exp.AlterRename):
        return [("rename", *_name(ctx, x.this))]
    elif isinstance(x, exp.AddConstraint):
        out: list[tuple[Any, ...]] = []
        for e in x.expressions:
            keys = _primary_key_of(e)
            out.append(("noop",) if keys is None else ("add_pk", keys))
        return out
    elif isinstance(x, exp.DropPrimaryKey):
        return [("drop_pk",)]
    elif isinstance(x, exp.AlterColumn):
        if x.args.get("dtype") is not None:
            raise _NotUnderstood(f"ALTER COLUMN {x.this.name} ... TYPE is not MySQL syntax")
        visible = x.args.get("visible")
        return [("visible", x.this.name, str(visible).upper() == "VISIBLE")] if visible else [("noop",)]
    elif isinstance(x, (exp.RenameIndex, exp.AlterIndex, exp.ForceProperty)):
        return [("noop",)]
    sql = x.sql(dialect="mysql") if isinstance(x, exp.Expr) else repr(x)
    raise _NotUnderstood(f"the ALTER TABLE clause {sql[:80]!r} is not one sluice models")


def _converted(c: ColumnDef, cs: str, coll: str | None) -> ColumnDef:
    """A character column after CONVERT TO CHARACTER SET: TEXT types grow to hold as many characters."""
    if c.data_type not in CHARACTER_TYPES or c.charset == "binary":
        return c
    dt = c.data_type
    if dt in TEXT_TYPES:
        chars = (blob_max_bytes(dt) or 0) // (mbmaxlen(c.charset) or 1)
        grown = sized_blob_type(chars * (mbmaxlen(cs) or 1), text=True)
        dt = max(dt, grown, key=lambda n: TEXT_TYPES[n])
    return replace(c, data_type=dt, charset=cs, collation=coll)


def _apply_alter(ctx: _Ctx, table: TableSchema,
                 ops: list[tuple[Any, ...]]) -> tuple[TableSchema, tuple[ColumnOrigin, ...]]:
    catalog = ctx.catalog
    cs, coll, convert = table.charset, table.collation, False
    new_cs = new_coll = None
    for op in ops:
        if op[0] in ("charset", "convert"):
            new_cs = op[1] if op[1] != "default" else catalog.database_charset(table.db)
            new_coll = op[2] if op[0] == "convert" else None
            convert = convert or op[0] == "convert"
        elif op[0] == "collate":
            new_coll = op[1]
    if new_cs is not None or new_coll is not None:
        cs, coll = _pair(catalog, new_cs, new_coll, (cs, coll))
    old = {c.name.lower(): c for c in table.columns}
    drops: set[str] = set()
    changed: dict[str, dict[str, Any]] = {}  # old name (lower) -> entry
    entries: list[dict[str, Any]] = []  # changed and added columns, in clause order
    pk_ops: list[list[str] | None] = []
    db, name = table.db, table.name

    def need(column: str) -> str:
        low = column.lower()
        if low not in old or low in drops:
            raise _NotUnderstood(f"{db}.{name} has no column `{column}`")
        return low

    def current(low: str) -> ColumnDef:
        return changed[low]["col"] if low in changed else old[low]

    for op in ops:
        tag = op[0]
        if tag == "add":
            col, inline_pk = _column(op[1], cs, coll, catalog)
            if op[3] and (col.name.lower() in old or any(e["col"].name.lower() == col.name.lower() for e in entries)):
                continue  # ADD COLUMN IF NOT EXISTS of a column that exists
            entries.append({"col": col, "pos": op[2], "fill": column_fill(op[1], col)})
            if inline_pk:
                pk_ops.append([col.name])
        elif tag == "drop":
            low = op[1].lower()
            if low not in old or low in drops:
                if op[2]:
                    continue  # DROP COLUMN IF EXISTS
                need(op[1])
            drops.add(low)
        elif tag == "change":
            low = need(op[1])
            col, inline_pk = _column(op[2], cs, coll, catalog)
            if low in changed:
                entries.remove(changed[low])
            changed[low] = {"col": col, "pos": op[3], "source": old[low].name}
            entries.append(changed[low])
            if inline_pk:
                pk_ops.append([col.name])
        elif tag in ("rename_col", "visible"):
            low = need(op[1])
            col = replace(current(low), name=op[2]) if tag == "rename_col" else replace(current(low), visible=op[2])
            if low in changed:
                changed[low]["col"] = col
            else:
                changed[low] = {"col": col, "pos": None, "source": old[low].name}
                entries.append(changed[low])
        elif tag == "drop_pk":
            pk_ops.append(None)
        elif tag == "add_pk":
            pk_ops.append(list(op[1]))
        elif tag == "rename":
            db, name = op[1], op[2]
    columns: list[ColumnDef] = []
    origin: dict[int, ColumnOrigin] = {}  # id(new column) -> where it comes from
    for low, c in old.items():
        if low in drops:
            continue
        entry = changed.get(low)
        if entry is None:
            columns.append(_converted(c, cs, coll) if convert and cs is not None else c)
            origin[id(columns[-1])] = ColumnOrigin(columns[-1].name, c.name)
        elif entry["pos"] is None:
            columns.append(entry["col"])
            entry["done"] = True
    for entry in entries:
        col = entry["col"]
        origin[id(col)] = ColumnOrigin(col.name, entry.get("source"), entry.get("fill"))
    for entry in entries:
        if entry.get("done"):
            continue
        pos = entry["pos"]
        if pos is None:
            columns.append(entry["col"])
        elif pos[0] == "FIRST":
            columns.insert(0, entry["col"])
        else:
            after = next((i for i, c in enumerate(columns) if c.name.lower() == (pos[1] or "").lower()), None)
            if after is None:
                raise _NotUnderstood(f"{db}.{name}: AFTER `{pos[1]}` names no column of the new layout")
            columns.insert(after + 1, entry["col"])
    _unique_names(db, name, columns)
    pk = []
    for key in table.primary_key:
        low = key.lower()
        if low not in drops:
            pk.append(changed[low]["col"].name if low in changed else key)
    for keys in pk_ops:
        pk = [] if keys is None else keys
    new = TableSchema(db, name, tuple(columns), (), cs, coll)
    return _with_pk(new, pk), tuple(origin[id(c)] for c in columns)


# ---------------------------------------------------------------------------------------- databases

def _db_name(node: Any) -> str:
    """A database name: sqlglot keeps it in ``this`` after DATABASE and in ``db`` after SCHEMA."""
    name = (node.name or node.db) if isinstance(node, exp.Table) else ""
    if not name:
        raise _NotUnderstood("expected a database name")
    return str(name)


def _create_database(ctx: _Ctx, k: int) -> Catalog:
    ctx.kind = "create_database"
    stmt = _parse(ctx.text)
    if not isinstance(stmt, exp.Create) or not isinstance(stmt.this, exp.Table):
        raise _NotUnderstood(f"sqlglot reads it as {type(stmt).__name__}, not CREATE DATABASE")
    name = _db_name(stmt.this)
    ctx.db = name
    catalog = ctx.catalog
    if stmt.args.get("exists") and name in catalog.databases():
        return catalog
    if stmt.args.get("replace"):
        ctx.tables = [(t.db, t.name) for t in catalog.tables(name)]
        catalog = catalog.without_database(name)
    props = list(stmt.args["properties"].expressions) if stmt.args.get("properties") else []
    cs, coll = _pair(catalog, *_table_options(props), _server_defaults(catalog))
    return catalog.with_database(name, cs, coll)


_DB_OPTION_WORDS = frozenset({"DEFAULT", "CHARACTER", "CHARSET", "CHAR", "COLLATE", "ENCRYPTION", "READ",
                              "COMMENT", "UPGRADE"})


def _alter_database(ctx: _Ctx, k: int) -> Catalog:
    ctx.kind = "alter_database"
    toks, i = ctx.toks, k + 1
    has_name = i < len(toks) and (toks[i].token_type == TokenType.IDENTIFIER
                                  or ctx.word(i) not in _DB_OPTION_WORDS)
    name = toks[i].text if has_name else ctx.default_db
    if not name:
        raise _NotUnderstood("ALTER DATABASE without a name and without a default database")
    ctx.db = name
    start = i + 1 if has_name else i
    words = {ctx.word(j) for j in range(start, len(toks))}
    if not words & {"CHARACTER", "CHARSET", "CHAR", "COLLATE"}:
        return ctx.catalog  # READ ONLY, ENCRYPTION, COMMENT, UPGRADE DATA DIRECTORY NAME
    stmt = _parse("CREATE DATABASE `_` " + ctx.span(start, len(toks)))
    props = list(stmt.args["properties"].expressions) if stmt.args.get("properties") else []
    cs, coll = _table_options(props)
    if cs == "default":
        cs, coll = _server_defaults(ctx.catalog)
    cs, coll = _pair(ctx.catalog, cs, coll, _db_defaults(ctx.catalog, name))
    return ctx.catalog.with_database(name, cs, coll)


def _drop_database(ctx: _Ctx, k: int) -> Catalog:
    ctx.kind = "drop_database"
    stmt = _parse(ctx.text)
    tables = stmt.args.get("tables") or [] if isinstance(stmt, exp.Drop) else []
    if len(tables) != 1:
        raise _NotUnderstood("DROP DATABASE: expected one database name")
    name = _db_name(tables[0])
    ctx.db = name
    ctx.tables = [(t.db, t.name) for t in ctx.catalog.tables(name)]
    return ctx.catalog.without_database(name)


_HANDLERS = {
    ("CREATE", "TABLE"): _create_table,
    ("ALTER", "TABLE"): _alter_table,
    ("DROP", "TABLE"): _drop_table,
    ("RENAME", "TABLE"): _rename_table,
    ("CREATE", "DATABASE"): _create_database,
    ("ALTER", "DATABASE"): _alter_database,
    ("DROP", "DATABASE"): _drop_database,
}
