"""DDL found in QUERY events, replayed on a ``Catalog``: ``apply_ddl`` and the statement handlers.

``apply_ddl`` replays one statement on a catalog and reports what it did as a ``DdlOutcome``,
with the lineage of every table it changed (``lineage``). It dispatches on the statement's verb and
object: CREATE / DROP / TRUNCATE / RENAME TABLE and the database statements are here, ALTER TABLE
in ``ddl.alter``, MariaDB's sequences in ``ddl.sequence``, column definitions in ``ddl.column_defs``,
the dialect and token helpers in ``ddl.text``. Pre-processing of the text is limited to
unwrapping executable comments, cutting partition clauses and MySQL's ``START TRANSACTION``
suffix, and re-shaping what sqlglot reads as opaque commands into statements it parses. Temporary
tables are not in row-based binlogs and do not change the catalog. ``apply_ddl`` never raises:
anything sqlglot cannot parse, or a clause sluice does not model, comes back with
``understood=False`` and the reason, and the tables concerned keep their old definition.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.ddl.alter import (
    alter_table,
)
from sluice.cdc.schema.ddl.column_defs import (
    column_def,
    db_defaults,
    name_pair,
    primary_key_of,
    server_defaults,
    table_options,
    unique_names,
    with_pk,
)
from sluice.cdc.schema.ddl.sequence import alter_sequence, create_sequence, drop_sequence
from sluice.cdc.schema.ddl.text import (
    DIALECT,
    Ctx,
    NotUnderstood,
    object_name,
    paren_groups,
    parse_statement,
    quiet,
    top_level_cut,
    unwrap,
)
from sluice.cdc.schema.ddl.versioning import settle_versioning, strip_versioning
from sluice.cdc.schema.lineage import TableChange
from sluice.cdc.schema.model import ColumnDef, TableSchema

__all__ = ["DdlOutcome", "apply_ddl"]


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
    # Tables whose rows the statement changed with no row event in the binlog (partitions dropped,
    # truncated, exchanged or converted, a tablespace imported): only the server has their rows now.
    rows_replaced: tuple[tuple[str, str], ...] = ()


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
    ctx = Ctx(catalog, default_db or None, db=default_db or None)
    try:
        plain, versioning = strip_versioning(sql)
        new = _dispatch(ctx, plain)
        if versioning is not None or ctx.kind == "alter_table":
            new = settle_versioning(versioning, ctx.kind, ctx.tables, ctx.changes, catalog, new)
    except NotUnderstood as exc:
        cat = exc.catalog if exc.catalog is not None else catalog
        return cat, DdlOutcome(ctx.kind, ctx.db, tuple(ctx.tables), False, exc.message)
    except SqlglotError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return catalog, DdlOutcome(ctx.kind, ctx.db, tuple(ctx.tables), False, f"sqlglot cannot parse it: {first}")
    except Exception as exc:  # the contract: a statement never stops the stream; the message says why
        return catalog, DdlOutcome(ctx.kind, ctx.db, tuple(ctx.tables), False,
                                   f"cannot replay it ({type(exc).__name__}: {exc})")
    return new, DdlOutcome(ctx.kind, ctx.db, tuple(ctx.tables), True, None, tuple(ctx.changes),
                           tuple(dict.fromkeys(ctx.rows_replaced)))


def _dispatch(ctx: Ctx, sql: str) -> Catalog:
    ctx.text = unwrap(sql)
    with quiet():
        toks = list(DIALECT.tokenize(ctx.text))
    while toks and toks[-1].token_type == TokenType.SEMICOLON:
        toks.pop()
    ctx.toks = toks
    if not toks:
        raise NotUnderstood("the statement is empty")
    verb = ctx.word(0)
    if verb in _ADMIN:
        ctx.kind = "other_ddl"
        return ctx.catalog
    if verb not in _VERBS:
        raise NotUnderstood(f"not a DDL statement (it starts with {toks[0].text[:40]!r})")
    if verb == "TRUNCATE":
        ctx.kind = "truncate_table"
        return _truncate(ctx)
    k, temporary = 1, False
    while k < min(len(toks), 24) and ctx.word(k) not in _OBJECTS:
        temporary = temporary or ctx.word(k) == "TEMPORARY"
        k += 1
    obj = ctx.word(k)
    if not obj:
        raise NotUnderstood(f"{verb} of what? no TABLE, DATABASE or other object keyword found")
    if obj in ("TABLE", "TABLES", "SEQUENCE") and temporary:
        ctx.kind = "other_ddl"  # temporary tables are not in row-based binlogs
        return ctx.catalog
    handler = _HANDLERS.get((verb, "TABLE" if obj == "TABLES" else "DATABASE" if obj == "SCHEMA" else obj))
    if handler is None:
        ctx.kind = "other_ddl"
        return ctx.catalog
    return handler(ctx, k)


# ---------------------------------------------------------------------------------------- tables

def _create_table(ctx: Ctx, k: int) -> Catalog:
    ctx.kind = "create_table"
    cut = top_level_cut(ctx, k + 1, ("PARTITION BY", "START TRANSACTION"))
    stmt = parse_statement(ctx.text[:ctx.toks[cut].start] if cut < len(ctx.toks) else ctx.text)
    if not isinstance(stmt, exp.Create) or str(stmt.args.get("kind") or "").upper() != "TABLE":
        raise NotUnderstood(f"sqlglot reads it as {type(stmt).__name__}, not CREATE TABLE")
    target = stmt.this
    schema = target if isinstance(target, exp.Schema) else None
    db, name = object_name(ctx, schema.this if schema is not None else target)
    ctx.touch(db, name)
    catalog = ctx.catalog
    props = list(stmt.args["properties"].expressions) if stmt.args.get("properties") else []
    if stmt.args.get("exists") and catalog.get(db, name) is not None:
        return catalog
    nodes = list(schema.expressions) if schema is not None else []
    like = next((p for p in (*props, *nodes) if isinstance(p, exp.LikeProperty)), None)
    if like is not None:
        src_db, src_name = object_name(ctx, like.this)
        src = catalog.get(src_db, src_name)
        if src is None:
            raise NotUnderstood(f"CREATE TABLE ... LIKE {src_db}.{src_name}: that table is not known to the "
                                 "schema history")
        return catalog.with_table(replace(src, db=db, name=name))
    if stmt.expression is not None:
        raise NotUnderstood("CREATE TABLE ... SELECT: the column types come from the query (in row format the "
                             "servers log the resulting CREATE TABLE instead)")
    if schema is None:
        raise NotUnderstood("CREATE TABLE without a column list")
    cs, coll = name_pair(catalog, *table_options(props), db_defaults(catalog, db))
    columns: list[ColumnDef] = []
    pk: list[str] = []
    for node in nodes:
        if isinstance(node, exp.ColumnDef):
            col, inline_pk = column_def(node, cs, coll, catalog)
            columns.append(col)
            if inline_pk:
                pk = [col.name]
        else:
            keys = primary_key_of(node)
            if keys is not None:
                pk = keys
    unique_names(db, name, columns)
    return catalog.with_table(with_pk(TableSchema(db, name, tuple(columns), (), cs, coll), pk))


def _drop_table(ctx: Ctx, k: int) -> Catalog:
    ctx.kind = "drop_table"
    stmt = parse_statement(ctx.text)
    if not isinstance(stmt, exp.Drop):
        raise NotUnderstood(f"sqlglot reads it as {type(stmt).__name__}, not DROP TABLE")
    catalog = ctx.catalog
    for t in stmt.args.get("tables") or []:
        db, name = object_name(ctx, t)
        ctx.touch(db, name)
        catalog = catalog.without_table(db, name)
    return catalog


def _truncate(ctx: Ctx) -> Catalog:
    stmt = parse_statement(ctx.text)
    if not isinstance(stmt, exp.TruncateTable):
        raise NotUnderstood(f"sqlglot reads it as {type(stmt).__name__}, not TRUNCATE TABLE")
    for t in stmt.expressions:
        ctx.touch(*object_name(ctx, t))
    return ctx.catalog


def _rename_table(ctx: Ctx, k: int) -> Catalog:
    ctx.kind = "rename_table"
    catalog, unknown = ctx.catalog, []
    for a, b in paren_groups(ctx.toks, k + 1, len(ctx.toks)):
        to = next((i for i in range(a, b) if ctx.word(i) == "TO"), None)
        if to is None:
            raise NotUnderstood(f"RENAME TABLE: expected `old TO new`, found {ctx.span(a, b)!r}")
        stmt = parse_statement(f"ALTER TABLE {ctx.span(a, to)} RENAME TO {ctx.span(to + 1, b)}")
        actions = stmt.args.get("actions") or []
        if not isinstance(stmt, exp.Alter) or len(actions) != 1 or not isinstance(actions[0], exp.AlterRename):
            raise NotUnderstood(f"RENAME TABLE: cannot read {ctx.span(a, b)!r}")
        src, dst = object_name(ctx, stmt.this), object_name(ctx, actions[0].this)
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
        raise NotUnderstood(f"RENAME TABLE of {', '.join(unknown)}, not known to the schema history", catalog)
    return catalog


# ALTER TABLE clauses that change no column, key or character set.


# ---------------------------------------------------------------------------------------- databases

def _db_name(node: Any) -> str:
    """A database name: sqlglot keeps it in ``this`` after DATABASE and in ``db`` after SCHEMA."""
    name = (node.name or node.db) if isinstance(node, exp.Table) else ""
    if not name:
        raise NotUnderstood("expected a database name")
    return str(name)


def _create_database(ctx: Ctx, k: int) -> Catalog:
    ctx.kind = "create_database"
    stmt = parse_statement(ctx.text)
    if not isinstance(stmt, exp.Create) or not isinstance(stmt.this, exp.Table):
        raise NotUnderstood(f"sqlglot reads it as {type(stmt).__name__}, not CREATE DATABASE")
    name = _db_name(stmt.this)
    ctx.db = name
    catalog = ctx.catalog
    if stmt.args.get("exists") and name in catalog.databases():
        return catalog
    if stmt.args.get("replace"):
        ctx.tables = [(t.db, t.name) for t in catalog.tables(name)]
        catalog = catalog.without_database(name)
    props = list(stmt.args["properties"].expressions) if stmt.args.get("properties") else []
    cs, coll = name_pair(catalog, *table_options(props), server_defaults(catalog))
    return catalog.with_database(name, cs, coll)


_DB_OPTION_WORDS = frozenset({"DEFAULT", "CHARACTER", "CHARSET", "CHAR", "COLLATE", "ENCRYPTION", "READ",
                              "COMMENT", "UPGRADE"})


def _alter_database(ctx: Ctx, k: int) -> Catalog:
    ctx.kind = "alter_database"
    toks, i = ctx.toks, k + 1
    has_name = i < len(toks) and (toks[i].token_type == TokenType.IDENTIFIER
                                  or ctx.word(i) not in _DB_OPTION_WORDS)
    name = toks[i].text if has_name else ctx.default_db
    if not name:
        raise NotUnderstood("ALTER DATABASE without a name and without a default database")
    ctx.db = name
    start = i + 1 if has_name else i
    words = {ctx.word(j) for j in range(start, len(toks))}
    if not words & {"CHARACTER", "CHARSET", "CHAR", "COLLATE"}:
        return ctx.catalog  # READ ONLY, ENCRYPTION, COMMENT, UPGRADE DATA DIRECTORY NAME
    stmt = parse_statement("CREATE DATABASE `_` " + ctx.span(start, len(toks)))
    props = list(stmt.args["properties"].expressions) if stmt.args.get("properties") else []
    cs, coll = table_options(props)
    if cs == "default":
        cs, coll = server_defaults(ctx.catalog)
    cs, coll = name_pair(ctx.catalog, cs, coll, db_defaults(ctx.catalog, name))
    return ctx.catalog.with_database(name, cs, coll)


def _drop_database(ctx: Ctx, k: int) -> Catalog:
    ctx.kind = "drop_database"
    stmt = parse_statement(ctx.text)
    tables = stmt.args.get("tables") or [] if isinstance(stmt, exp.Drop) else []
    if len(tables) != 1:
        raise NotUnderstood("DROP DATABASE: expected one database name")
    name = _db_name(tables[0])
    ctx.db = name
    ctx.tables = [(t.db, t.name) for t in ctx.catalog.tables(name)]
    return ctx.catalog.without_database(name)


_HANDLERS = {
    ("CREATE", "TABLE"): _create_table,
    ("ALTER", "TABLE"): alter_table,
    ("DROP", "TABLE"): _drop_table,
    ("RENAME", "TABLE"): _rename_table,
    ("CREATE", "DATABASE"): _create_database,
    ("ALTER", "DATABASE"): _alter_database,
    ("DROP", "DATABASE"): _drop_database,
    ("CREATE", "SEQUENCE"): create_sequence,
    ("ALTER", "SEQUENCE"): alter_sequence,
    ("DROP", "SEQUENCE"): drop_sequence,
}
