"""What one DDL statement does to the Delta mirrors: a list of ``MirrorStep``s, decided from the
catalog before the statement, the statement itself and its column lineage (``cdc.schema.lineage``).

- ``CREATE TABLE``: a mirror left under that name by an earlier table is archived; the new one
  is created empty with its columns (a table with a primary key; one without has no mirror).
- ``DROP TABLE`` / ``DROP DATABASE``: the mirror is archived (``LAKE/_sluice/archive/...``).
- ``TRUNCATE TABLE``: the mirror is emptied in one commit.
- ``RENAME TABLE`` / ``ALTER TABLE ... RENAME``: the mirror moves with its history; renamed out of
  the capture it is archived, renamed into it the table is re-read.
- ``ALTER TABLE`` that changes the columns: the mirror is rewritten in the new layout in one commit;
  kept, renamed and moved columns keep their values, widened types keep them exactly, added columns
  get the value the server gave existing rows, dropped columns go.
- What sluice cannot compute exactly (an added column with an expression default, a narrowing or
  other type change, a primary key where there was none, a statement not understood): the table is
  re-read from the server.
- A primary-key change: nothing to rewrite, later MERGEs match on the new key. Anything else
  (indexes, options): nothing.
- Partition and tablespace maintenance that moves rows with no row event in the binlog (DROP,
  TRUNCATE, EXCHANGE, IMPORT PARTITION; IMPORT TABLESPACE; MariaDB's CONVERT PARTITION / TABLE):
  each table whose rows changed is re-read; one converted into a partition is archived.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sluice.cdc.schema import Catalog, ColumnDef, TableSchema, apply_ddl
from sluice.cdc.schema.lineage import ColumnOrigin
from sluice.lake.types.mirror_columns import MirrorColumn
from sluice.lake.types.table_layout import mirror_columns_for_schema

__all__ = ["MirrorStep", "plan_ddl"]

Name = tuple[str, str]


@dataclass(frozen=True, slots=True)
class MirrorStep:
    """One change to one mirror: ``archive``, ``create`` (empty, with ``columns``), ``move`` (to
    ``to``), ``truncate``, ``rewrite`` (into ``columns`` from ``origins``) or ``reread`` (archive,
    then snapshot the table again); for a table routed into the mirror ``to`` of several,
    ``widen`` (add ``columns``) or ``unroute`` (its rows leave it), ``sluice.spark.ddl.routed``."""

    kind: str
    db: str
    table: str
    to: Name | None = None
    columns: tuple[MirrorColumn, ...] = ()
    origins: tuple[ColumnOrigin, ...] = ()
    why: str = ""

    @property
    def name(self) -> str:
        """``db.table`` of the mirror the step changes, for messages."""
        return f"{self.db}.{self.table}"


def plan_ddl(before: Catalog, sql: str, default_db: str | None, captured: Callable[[str, str], bool],
             flavor: str | None, columns: Any = None) -> list[MirrorStep]:
    """The mirror steps of one statement, in order (see the module docstring); ``columns``: the
    ``ColumnRules`` the mirrors follow."""
    masked = (lambda schema: schema) if columns is None else columns.mask_schema
    after, outcome = apply_ddl(before, sql, default_db or None)
    tables = list(dict.fromkeys(outcome.tables))
    if not outcome.understood:
        return [MirrorStep("reread", db, t, why=f"sluice does not understand the statement ({outcome.message})")
                for db, t in tables if captured(db, t) and after.get(db, t) is not None]
    kind = outcome.kind
    steps: list[MirrorStep] = []
    if kind == "truncate_table":
        return [MirrorStep("truncate", db, t) for db, t in tables if captured(db, t)]
    if kind in ("drop_table", "drop_database", "create_table"):
        gone = [(s.db, s.name) for s in before if after.get(s.db, s.name) is None]
        targets = tables if kind == "create_table" else gone
        steps = [MirrorStep("archive", db, t, why=kind.replace("_", " ")) for db, t in targets if captured(db, t)]
        for db, t in targets if kind == "create_table" else ():
            now = after.get(db, t)
            if now is not None and now.primary_key and captured(db, t):
                steps.append(MirrorStep("create", db, t, columns=mirror_columns_for_schema(masked(now), flavor)))
        return steps
    for change in outcome.changes:
        old, new = change.old, change.new
        if old != new:
            if captured(*old) and captured(*new):
                steps.append(MirrorStep("move", *old, to=new))
            elif captured(*old):
                steps.append(MirrorStep("archive", *old, why=f"renamed out of the capture to {new[0]}.{new[1]}"))
            elif captured(*new):
                steps.append(MirrorStep("reread", *new, why=f"renamed into the capture from {old[0]}.{old[1]}"))
                continue
        if change.columns is None or not captured(*new):
            continue
        was, now = before.get(*old), after.get(*new)
        if was is not None and now is not None:
            steps += _alter(was, now, change.columns, flavor, columns)
    stepped = {(s.db, s.table) for s in steps}
    for db, t in tables:  # MariaDB's CONVERT TABLE t TO PARTITION: t is gone into the other table
        if (db, t) not in stepped and before.get(db, t) is not None and after.get(db, t) is None and captured(db, t):
            steps.append(MirrorStep("archive", db, t, why="it became a partition of another table"))
    for db, t in outcome.rows_replaced:
        if captured(db, t) and after.get(db, t) is not None and \
                not any(s.kind == "reread" and (s.db, s.table) == (db, t) for s in steps):
            steps.append(MirrorStep("reread", db, t, why="the statement changed its rows with no row event in the "
                                                         "binlog (partition or tablespace maintenance)"))
    return steps


def _alter(was: TableSchema, now: TableSchema, origins: tuple[ColumnOrigin, ...],
           flavor: str | None, rules: Any = None) -> list[MirrorStep]:
    db, t = now.db, now.name
    if rules is not None:  # columns kept out or hashed: the mirror is of the masked table
        for o in origins:
            rule = rules.rule(db, t, o.name)
            if rule == "hash" and (o.source != o.name or rules.rule(db, t, o.source) != "hash" or not _same_text(
                    was.columns[was.index_of(o.source) or 0], now.columns[now.index_of(o.name) or 0])):
                # a new hashed column's fill, or values whose printed text may change: hashed on a read
                return [MirrorStep("reread", db, t, why=f"column {o.name} is hashed and its values are new")]
            if o.source is not None and rule is None and rules.rule(db, t, o.source) is not None:
                return [MirrorStep("reread", db, t, why=f"column {o.name} was {o.source}, kept out or hashed")]
        origins = tuple(o for o in origins if rules.rule(db, t, o.name) != "exclude")
        was, now = rules.mask_schema(was), rules.mask_schema(now)
    if not now.primary_key:
        return [MirrorStep("archive", db, t, why="it has no primary key any more: change log only")] \
            if was.primary_key else []
    if not was.primary_key:
        return [MirrorStep("reread", db, t, why="it has a primary key now")]
    hidden = {c.name for c in now.columns} - {c.name for c in now.data_columns()}
    origins = tuple(o for o in origins if o.name not in hidden)  # implicit period columns: in no mirror
    old_cols = {c.name: c for c in was.columns}
    for o in origins:
        if o.source is None:
            if o.fill is None or not o.fill.exact:
                why = o.fill.why if o.fill is not None else f"column {o.name} is new"
                return [MirrorStep("reread", db, t, why=f"{why} is not computed by sluice")]
            continue
        before, after = old_cols[o.source], now.columns[now.index_of(o.name) or 0]
        if not widening(before, after):
            return [MirrorStep("reread", db, t, why=f"column {o.source} changed from {before.sql_type()} to "
                                                    f"{after.sql_type()}")]
    columns = mirror_columns_for_schema(now, flavor)
    old_mirror = mirror_columns_for_schema(was, flavor)
    same = [(c.name, c.arrow_type) for c in columns] == [(c.name, c.arrow_type) for c in old_mirror]
    if same and all(o.source == o.name for o in origins):
        return []  # keys, indexes, defaults, nullability: the mirror's rows stay as they are
    return [MirrorStep("rewrite", db, t, columns=columns, origins=origins)]


_INT_RANK = {"tinyint": 1, "smallint": 2, "mediumint": 3, "int": 4, "bigint": 5}
_INT_DIGITS = {"tinyint": 3, "smallint": 5, "mediumint": 8, "int": 10, "bigint": 20}
_CHARS = {"char": 0, "varchar": 1, "tinytext": 2, "text": 3, "mediumtext": 4, "longtext": 5}
_TEXT_CHARS = {"tinytext": 255, "text": 65535, "mediumtext": 16777215, "longtext": 4294967295}


def widening(old: ColumnDef, new: ColumnDef) -> bool:
    """Whether every value of ``old`` keeps its exact value as ``new`` (the server converts nothing)."""
    a, b = old.data_type, new.data_type
    if (a, old.unsigned, old.length, old.precision, old.scale, old.fsp, old.enum_values, old.set_values) == \
            (b, new.unsigned, new.length, new.precision, new.scale, new.fsp, new.enum_values, new.set_values):
        return True  # same type: nullability, default, collation or charset of text that converted
    sign_lost = bool(new.unsigned) and not old.unsigned  # negative values would not fit
    if a in _INT_RANK and b in _INT_RANK:
        if old.unsigned and not new.unsigned:
            return _INT_RANK[b] > _INT_RANK[a]
        return not sign_lost and _INT_RANK[b] >= _INT_RANK[a]
    if a in _INT_RANK and b == "decimal":
        return not sign_lost and (new.precision or 10) - (new.scale or 0) >= _INT_DIGITS[a]
    if a == b == "decimal":
        return (not sign_lost and (new.scale or 0) >= (old.scale or 0)
                and (new.precision or 10) - (new.scale or 0) >= (old.precision or 10) - (old.scale or 0))
    if (a, b) == ("float", "double"):
        return True
    if a in _CHARS and b in _CHARS and b != "char":
        return _chars(new) >= _chars(old) and new.charset == old.charset
    if a == b and a in ("datetime", "timestamp", "time"):
        return (new.fsp or 0) >= (old.fsp or 0)
    if a == b == "enum":
        return new.enum_values[: len(old.enum_values or ())] == old.enum_values if new.enum_values else False
    if a == b == "set":
        return new.set_values[: len(old.set_values or ())] == old.set_values if new.set_values else False
    if a == b and a in ("varbinary", "binary", "tinyblob", "blob", "mediumblob", "longblob"):
        return a != "binary" and (new.length or 0) >= (old.length or 0)
    return False


def _chars(c: ColumnDef) -> int:
    return _TEXT_CHARS.get(c.data_type, c.length or 0)


def _same_text(before: ColumnDef, after: ColumnDef) -> bool:
    """Whether every value of ``before`` prints as the same text in ``after``: its hash stays."""
    if before.sql_type() == after.sql_type():
        return True
    ints = before.data_type in _INT_RANK and after.data_type in _INT_RANK and before.unsigned == after.unsigned
    texts = before.data_type in _CHARS and after.data_type in _CHARS
    return (ints or texts) and widening(before, after)
