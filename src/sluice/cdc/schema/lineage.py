"""Where each column of a table changed by DDL comes from, and what the server gave existing rows.

``apply_ddl`` reports, beside the new catalog, one ``TableChange`` per table a statement changed:
its old and new name and, for ``ALTER TABLE``, one ``ColumnOrigin`` per column of the new layout —
the old column it was (kept, renamed, retyped or moved) or, for an added column, the value the
server wrote into every existing row (``ColumnFill``). The fill is exact only for what sluice can
compute as the server does: ``NULL``, a literal ``DEFAULT`` of a number or character column, and the
implicit default of a ``NOT NULL`` number, character or ``ENUM`` column. Anything else (an expression
or ``CURRENT_TIMESTAMP``, ``AUTO_INCREMENT``, a generated column, temporal and other types) is marked
inexact: the mirror re-reads that table from the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlglot import exp

from sluice.cdc.schema.model import ColumnDef

__all__ = ["ColumnFill", "ColumnOrigin", "TableChange", "column_fill"]

_NUMBERS = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "float", "double", "year"})
_TEXT = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})

# Column attributes that change nothing about the value existing rows get.
_NEUTRAL = (
    exp.NotNullColumnConstraint, exp.PrimaryKeyColumnConstraint, exp.CharacterSetColumnConstraint,
    exp.CollateColumnConstraint, exp.BinaryColumnConstraint, exp.ZeroFillColumnConstraint,
    exp.InvisibleColumnConstraint, exp.CommentColumnConstraint, exp.UniqueColumnConstraint,
    exp.OnUpdateColumnConstraint, exp.Var,
)


@dataclass(frozen=True, slots=True)
class ColumnFill:
    """The value an ``ADD COLUMN`` gave every existing row (a decoded value), or why it is not known."""

    value: Any = None
    exact: bool = True
    why: str | None = None  # not exact: what sluice cannot compute


@dataclass(frozen=True, slots=True)
class ColumnOrigin:
    """One column of the new layout: the old column it was, or the fill of a new one."""

    name: str
    source: str | None  # the old column's name; None: added by this statement
    fill: ColumnFill | None = None


@dataclass(frozen=True, slots=True)
class TableChange:
    """A table a statement changed: old and new name, and the column lineage (None: columns untouched)."""

    old: tuple[str, str]
    new: tuple[str, str]
    columns: tuple[ColumnOrigin, ...] | None = None


def column_fill(node: exp.ColumnDef, col: ColumnDef) -> ColumnFill:
    """What an added column ``col`` (parsed from ``node``) holds in the rows that existed before."""
    default: exp.Expr | None = None
    for cons in node.args.get("constraints") or []:
        c = cons.args.get("kind") if isinstance(cons, exp.ColumnConstraint) else cons
        if isinstance(c, exp.DefaultColumnConstraint):
            default = c.this
        elif c is not None and not isinstance(c, _NEUTRAL):
            return ColumnFill(exact=False, why=f"column {col.name} is {c.sql(dialect='mysql')[:60]}")
    if default is None:
        if col.nullable:
            return ColumnFill(None)
        return _implicit(col)
    if isinstance(default, exp.Null):
        return ColumnFill(None)
    if isinstance(default, exp.Paren):
        default = default.this
    negative = False
    if isinstance(default, exp.Neg):
        negative, default = True, default.this
    if not isinstance(default, exp.Literal):
        expression = default.sql(dialect="mysql")
        return ColumnFill(exact=False, why=f"the default of {col.name} is the expression {expression}")
    text = default.name
    if negative:
        text = "-" + text
    return _literal(col, text, default.is_string)


def _implicit(col: ColumnDef) -> ColumnFill:
    """MySQL's implicit default of a NOT NULL column without DEFAULT."""
    if col.data_type in _NUMBERS:
        return _literal(col, "0", False)
    if col.data_type in _TEXT:
        return ColumnFill("")
    if col.data_type == "enum" and col.enum_values:
        return ColumnFill(col.enum_values[0])
    return ColumnFill(exact=False, why=f"the implicit default of {col.data_type} column {col.name}")


def _literal(col: ColumnDef, text: str, quoted: bool) -> ColumnFill:
    dt = col.data_type
    inexact = ColumnFill(exact=False, why=f"the default {text!r} of {dt} column {col.name}")
    if dt in _TEXT:
        return ColumnFill(text) if quoted or text else inexact
    if dt == "enum" and col.enum_values is not None:
        return ColumnFill(text) if text in col.enum_values else inexact
    if dt not in _NUMBERS:
        return inexact
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        return inexact
    if dt in ("float", "double"):
        return ColumnFill(float(number))
    if dt == "decimal":
        scale = col.scale or 0
        if number != number.quantize(Decimal(1).scaleb(-scale)):
            return inexact  # the server rounds: leave it to a re-read
        return ColumnFill(number.quantize(Decimal(1).scaleb(-scale)))
    if number != number.to_integral_value():
        return inexact
    return ColumnFill(int(number))
