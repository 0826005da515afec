"""ALTER TABLE replayed on one table definition, with the lineage of every resulting column.

Clauses are read one by one and applied in the server's order (``mysql_prepare_alter_table``,
sql/sql_table.cc): DROP, CHANGE, MODIFY and RENAME COLUMN name the old columns; added and
re-positioned columns then go in clause order, AFTER naming the new layout. ALTER TABLE ...
CONVERT TO / RENAME AS / ADD (a, b) are re-shaped into statements sqlglot parses.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp
from sqlglot.tokens import TokenType

from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.ddl.column_defs import (
    column_def,
    converted,
    db_defaults,
    name_pair,
    primary_key_of,
    table_options,
    unique_names,
    with_pk,
)
from sluice.cdc.schema.ddl.text import (
    Ctx,
    NotUnderstood,
    if_exists,
    object_name,
    paren_groups,
    parse_statement,
    read_name,
    top_level_cut,
)
from sluice.cdc.schema.lineage import ColumnOrigin, TableChange, column_fill
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.schema.typemap import (
    normalize_charset,
    normalize_collation,
)

_NOOP_HEADS = frozenset({"DISABLE", "ENABLE", "DISCARD", "IMPORT", "FORCE", "ORDER", "LOCK", "ALGORITHM",
                         "WITH", "WITHOUT", "ANALYZE", "OPTIMIZE", "REBUILD", "REPAIR", "COALESCE",
                         "REORGANIZE", "EXCHANGE", "SECONDARY_LOAD", "SECONDARY_UNLOAD", "UPGRADE"})


def alter_table(ctx: Ctx, k: int) -> Catalog:
    """ALTER TABLE (at token ``k``) replayed on the catalog: the changed table and its lineage."""
    ctx.kind = "alter_table"
    _, i = if_exists(ctx, k + 1)
    db, name, i = read_name(ctx, i)
    ctx.touch(db, name)
    if ctx.word(i) == "NOWAIT":
        i += 1
    elif ctx.word(i) == "WAIT":
        i += 2
    end = top_level_cut(ctx, i, ("PARTITION BY", "REMOVE PARTITIONING"))
    ops: list[tuple[Any, ...]] = []
    for a, b in paren_groups(ctx.toks, i, end):
        if ctx.word(a + 1) == "PARTITION" or (ctx.word(a) == "CONVERT" and ctx.word(a + 1) == "TABLE"):
            _partition_clause(ctx, db, name, a, b)
            break  # partition maintenance: the rest of the statement is about partitions too
        if ctx.word(a) == "IMPORT":  # IMPORT TABLESPACE: the rows come from a file
            ctx.rows_replaced.append((db, name))
        ops += _alter_clause(ctx, a, b)
    table = ctx.catalog.get(db, name)
    if all(op[0] == "noop" for op in ops):
        return ctx.catalog
    if table is None:
        raise NotUnderstood(f"ALTER TABLE of {db}.{name}, a table the schema history does not know")
    new, origins = _apply_alter(ctx, table, ops)
    ctx.changes.append(TableChange((db, name), (new.db, new.name), origins))
    catalog = ctx.catalog
    if (new.db, new.name) != (db, name):
        ctx.touch(new.db, new.name)
        catalog = catalog.without_table(db, name)
    return catalog.with_table(new)


def _partition_clause(ctx: Ctx, db: str, name: str, a: int, b: int) -> None:
    """A partition clause that moves rows with no row event: DROP, TRUNCATE, IMPORT PARTITION;
    EXCHANGE PARTITION p WITH TABLE t (both tables); MariaDB's CONVERT PARTITION p TO TABLE t (a new
    table with the partitioned one's definition) and CONVERT TABLE t TO PARTITION p (t is gone).
    ADD, COALESCE, REORGANIZE, REBUILD and the rest keep every row where it was."""
    head = ctx.word(a)
    if head not in ("DROP", "TRUNCATE", "IMPORT", "EXCHANGE", "CONVERT"):
        return
    ctx.rows_replaced.append((db, name))
    words = [ctx.word(k) for k in range(a, b)]
    if head == "EXCHANGE" and "WITH" in words and words[words.index("WITH") + 1:][:1] == ["TABLE"]:
        other_db, other, _ = read_name(ctx, a + words.index("WITH") + 2)
        ctx.touch(other_db, other)
        ctx.rows_replaced.append((other_db, other))
    elif head == "CONVERT" and ctx.word(a + 1) == "TABLE":  # CONVERT TABLE t TO PARTITION p ...
        other_db, other, _ = read_name(ctx, a + 2)
        ctx.touch(other_db, other)
        ctx.catalog = ctx.catalog.without_table(other_db, other)
    elif head == "CONVERT" and "TO" in words and words[words.index("TO") + 1:][:1] == ["TABLE"]:
        other_db, other, _ = read_name(ctx, a + words.index("TO") + 2)
        table = ctx.catalog.get(db, name)
        if table is None:
            raise NotUnderstood(f"CONVERT PARTITION of {db}.{name}, a table the schema history does not know")
        ctx.touch(other_db, other)
        ctx.catalog = ctx.catalog.with_table(replace(table, db=other_db, name=other))
        ctx.rows_replaced.append((other_db, other))


def _alter_clause(ctx: Ctx, a: int, b: int) -> list[tuple[Any, ...]]:
    w0, w1 = ctx.word(a), ctx.word(a + 1)
    if w0 in _NOOP_HEADS:
        return [("noop",)]
    if w0 == "ADD":
        p = a + 2 if w1 == "COLUMN" else a + 1
        if p < b and ctx.toks[p].token_type == TokenType.L_PAREN and ctx.toks[b - 1].token_type == TokenType.R_PAREN:
            stmt = parse_statement(f"CREATE TABLE `_` ({ctx.span(p + 1, b - 1)})")
            out: list[tuple[Any, ...]] = []
            for node in stmt.this.expressions:
                keys = primary_key_of(node)
                out.append(("add", node, None, False) if isinstance(node, exp.ColumnDef)
                           else ("noop",) if keys is None else ("add_pk", keys))
            return out
    if w0 == "CONVERT" and w1 == "TO":
        stmt = parse_statement(f"ALTER TABLE `_` DEFAULT {ctx.span(a + 2, b)}")
        cs, coll = table_options(list(stmt.args.get("options") or []))
        if cs is None:
            raise NotUnderstood(f"cannot read {ctx.span(a, b)!r}")
        return [("convert", cs, coll)]
    if w0 == "RENAME" and w1 not in ("COLUMN", "INDEX", "KEY"):
        p = a + 2 if w1 in ("TO", "AS") else a + 1
        db, name, p = read_name(ctx, p)
        if p != b:
            raise NotUnderstood(f"cannot read {ctx.span(a, b)!r}")
        return [("rename", db, name)]
    stmt = parse_statement(f"ALTER TABLE `_` {ctx.span(a, b)}")
    if not isinstance(stmt, exp.Alter):
        raise NotUnderstood(f"cannot read the ALTER TABLE clause {ctx.span(a, b)!r}")
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


def _action(ctx: Ctx, x: Any) -> list[tuple[Any, ...]]:
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
        return [("rename", *object_name(ctx, x.this))]
    elif isinstance(x, exp.AddConstraint):
        out: list[tuple[Any, ...]] = []
        for e in x.expressions:
            keys = primary_key_of(e)
            out.append(("noop",) if keys is None else ("add_pk", keys))
        return out
    elif isinstance(x, exp.DropPrimaryKey):
        return [("drop_pk",)]
    elif isinstance(x, exp.AlterColumn):
        if x.args.get("dtype") is not None:
            raise NotUnderstood(f"ALTER COLUMN {x.this.name} ... TYPE is not MySQL syntax")
        visible = x.args.get("visible")
        return [("visible", x.this.name, str(visible).upper() == "VISIBLE")] if visible else [("noop",)]
    elif isinstance(x, (exp.RenameIndex, exp.AlterIndex, exp.ForceProperty)):
        return [("noop",)]
    sql = x.sql(dialect="mysql") if isinstance(x, exp.Expr) else repr(x)
    raise NotUnderstood(f"the ALTER TABLE clause {sql[:80]!r} is not one sluice models")


def _apply_alter(ctx: Ctx, table: TableSchema,
                 ops: list[tuple[Any, ...]]) -> tuple[TableSchema, tuple[ColumnOrigin, ...]]:
    cs, coll, convert = _alter_charset(ctx.catalog, table, ops)
    edits = _ColumnEdits(table, cs, coll, ctx.catalog)
    for op in ops:
        edits.apply(op)
    columns, origin = edits.layout(convert)
    unique_names(edits.db, edits.name, columns)
    new = TableSchema(edits.db, edits.name, tuple(columns), (), cs, coll)
    return with_pk(new, edits.primary_key(table)), tuple(origin[id(c)] for c in columns)


def _alter_charset(catalog: Any, table: TableSchema,
                   ops: list[tuple[Any, ...]]) -> tuple[str | None, str | None, bool]:
    """The table's character set and collation after the ALTER's CHARACTER SET / COLLATE / CONVERT TO
    clauses, and whether CONVERT TO changes its text columns too."""
    cs, coll, convert = table.charset, table.collation, False
    new_cs = new_coll = None
    for op in ops:
        if op[0] in ("charset", "convert"):
            new_cs = op[1] if op[1] != "default" else db_defaults(catalog, table.db)[0]
            if new_cs is None:
                raise NotUnderstood(f"CHARACTER SET DEFAULT: the default character set of the database "
                                     f"{table.db} is not known (its CREATE DATABASE is not in the binlog read)")
            new_coll = op[2] if op[0] == "convert" else None
            convert = convert or op[0] == "convert"
        elif op[0] == "collate":
            new_coll = op[1]
    if new_cs is not None or new_coll is not None:
        cs, coll = name_pair(catalog, new_cs, new_coll, (cs, coll))
    return cs, coll, convert


class _ColumnEdits:
    """An ALTER's column and key clauses applied in order (``apply``), then the new layout (``layout``)
    and primary key (``primary_key``). Columns are known by their old names, lower-cased."""

    def __init__(self, table: TableSchema, cs: str | None, coll: str | None, catalog: Any) -> None:
        self.old = {c.name.lower(): c for c in table.columns}
        self.drops: set[str] = set()
        self.changed: dict[str, dict[str, Any]] = {}  # old name (lower) -> entry
        self.entries: list[dict[str, Any]] = []  # changed and added columns, in clause order
        self.pk_ops: list[list[str] | None] = []
        self.db, self.name = table.db, table.name
        self.cs, self.coll, self.catalog = cs, coll, catalog

    def _need(self, column: str) -> str:
        low = column.lower()
        if low not in self.old or low in self.drops:
            raise NotUnderstood(f"{self.db}.{self.name} has no column `{column}`")
        return low

    def _current(self, low: str) -> ColumnDef:
        return self.changed[low]["col"] if low in self.changed else self.old[low]

    def apply(self, op: tuple[Any, ...]) -> None:
        tag, old, changed = op[0], self.old, self.changed
        if tag == "add":
            col, inline_pk = column_def(op[1], self.cs, self.coll, self.catalog)
            low = col.name.lower()
            if op[3] and (low in old or any(e["col"].name.lower() == low for e in self.entries)):
                return  # ADD COLUMN IF NOT EXISTS of a column that exists
            self.entries.append({"col": col, "pos": op[2], "fill": column_fill(op[1], col)})
            if inline_pk:
                self.pk_ops.append([col.name])
        elif tag == "drop":
            low = op[1].lower()
            if low not in old or low in self.drops:
                if op[2]:
                    return  # DROP COLUMN IF EXISTS
                self._need(op[1])
            self.drops.add(low)
        elif tag == "change":
            low = self._need(op[1])
            col, inline_pk = column_def(op[2], self.cs, self.coll, self.catalog)
            if low in changed:
                self.entries.remove(changed[low])
            changed[low] = {"col": col, "pos": op[3], "source": old[low].name}
            self.entries.append(changed[low])
            if inline_pk:
                self.pk_ops.append([col.name])
        elif tag in ("rename_col", "visible"):
            low = self._need(op[1])
            col = (replace(self._current(low), name=op[2]) if tag == "rename_col"
                   else replace(self._current(low), visible=op[2]))
            if low in changed:
                changed[low]["col"] = col
            else:
                changed[low] = {"col": col, "pos": None, "source": old[low].name}
                self.entries.append(changed[low])
        elif tag == "drop_pk":
            self.pk_ops.append(None)
        elif tag == "add_pk":
            self.pk_ops.append(list(op[1]))
        elif tag == "rename":
            self.db, self.name = op[1], op[2]

    def layout(self, convert: bool) -> tuple[list[ColumnDef], dict[int, ColumnOrigin]]:
        """The new columns in order (kept ones in place, moved and added ones where their clause puts
        them), and where each comes from (by ``id`` of the new column)."""
        columns: list[ColumnDef] = []
        origin: dict[int, ColumnOrigin] = {}
        for low, c in self.old.items():
            if low in self.drops:
                continue
            entry = self.changed.get(low)
            if entry is None:
                columns.append(converted(c, self.cs, self.coll) if convert and self.cs is not None else c)
                origin[id(columns[-1])] = ColumnOrigin(columns[-1].name, c.name)
            elif entry["pos"] is None:
                columns.append(entry["col"])
                entry["done"] = True
        for entry in self.entries:
            col = entry["col"]
            origin[id(col)] = ColumnOrigin(col.name, entry.get("source"), entry.get("fill"))
        for entry in self.entries:
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
                    raise NotUnderstood(f"{self.db}.{self.name}: AFTER `{pos[1]}` names no column of the new layout")
                columns.insert(after + 1, entry["col"])
        return columns, origin

    def primary_key(self, table: TableSchema) -> list[str]:
        """The old key with renamed columns followed and dropped ones gone, unless a DROP/ADD PRIMARY
        KEY clause (or a column's inline PRIMARY KEY) replaced it: the last of those wins."""
        pk = []
        for key in table.primary_key:
            low = key.lower()
            if low not in self.drops:
                pk.append(self.changed[low]["col"].name if low in self.changed else key)
        for keys in self.pk_ops:
            pk = [] if keys is None else keys
        return pk
