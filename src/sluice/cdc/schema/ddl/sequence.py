"""MariaDB's sequences replayed on the catalog: CREATE, ALTER and DROP SEQUENCE.

A MariaDB sequence is a table of one row that the server writes (as row events) whenever
``NEXTVAL`` runs past its cache or ``SETVAL`` / ``ALTER SEQUENCE ... RESTART`` moves it, so the
capture needs its columns like any table's. They are fixed (sql/sql_sequence.cc): the sequence's
value type (``AS``, MariaDB 11.5+, BIGINT by default) for ``next_not_cached_value``,
``minimum_value``, ``maximum_value`` and ``start_value``, then ``increment`` BIGINT, ``cache_size``
BIGINT UNSIGNED, ``cycle_option`` TINYINT UNSIGNED and ``cycle_count`` BIGINT, no primary key. A
temporary sequence is not in a row-based binlog.
"""

from __future__ import annotations

from dataclasses import replace

from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.ddl.text import Ctx, NotUnderstood, if_exists, read_name
from sluice.cdc.schema.model import ColumnDef, TableSchema

_VALUE_COLUMNS = ("next_not_cached_value", "minimum_value", "maximum_value", "start_value")
_INT_TYPES = {"TINYINT": "tinyint", "SMALLINT": "smallint", "MEDIUMINT": "mediumint", "INT": "int",
              "INTEGER": "int", "BIGINT": "bigint"}


def sequence_columns(data_type: str = "bigint", unsigned: bool = False) -> tuple[ColumnDef, ...]:
    """The columns of a sequence whose values are ``data_type``."""
    values = tuple(ColumnDef(name, data_type, unsigned, nullable=False) for name in _VALUE_COLUMNS)
    return (*values, ColumnDef("increment", "bigint", nullable=False),
            ColumnDef("cache_size", "bigint", True, nullable=False),
            ColumnDef("cycle_option", "tinyint", True, nullable=False),
            ColumnDef("cycle_count", "bigint", nullable=False))


def create_sequence(ctx: Ctx, k: int) -> Catalog:
    """``CREATE [OR REPLACE] SEQUENCE [IF NOT EXISTS] name [AS type] ...``."""
    ctx.kind = "create_table"
    exists, i = if_exists(ctx, k + 1)
    db, name, i = read_name(ctx, i)
    ctx.touch(db, name)
    if exists and ctx.catalog.get(db, name) is not None:
        return ctx.catalog
    data_type, unsigned = _value_type(ctx, i) or ("bigint", False)
    return ctx.catalog.with_table(TableSchema(db, name, sequence_columns(data_type, unsigned)))


def alter_sequence(ctx: Ctx, k: int) -> Catalog:
    """``ALTER SEQUENCE [IF EXISTS] name ...``: only ``AS type`` changes its columns."""
    ctx.kind = "alter_table"
    _, i = if_exists(ctx, k + 1)
    db, name, i = read_name(ctx, i)
    ctx.touch(db, name)
    value_type = _value_type(ctx, i)
    sequence = ctx.catalog.get(db, name)
    if value_type is None or sequence is None:
        return ctx.catalog
    return ctx.catalog.with_table(replace(sequence, columns=sequence_columns(*value_type)))


def drop_sequence(ctx: Ctx, k: int) -> Catalog:
    """``DROP SEQUENCE [IF EXISTS] name [, name ...]``."""
    ctx.kind = "drop_table"
    _, i = if_exists(ctx, k + 1)
    catalog = ctx.catalog
    while True:
        db, name, i = read_name(ctx, i)
        ctx.touch(db, name)
        catalog = catalog.without_table(db, name)
        if i >= len(ctx.toks) or ctx.toks[i].text != ",":
            return catalog
        i += 1


def _value_type(ctx: Ctx, i: int) -> tuple[str, bool] | None:
    """The ``AS type [SIGNED | UNSIGNED]`` at token ``i``, if there is one."""
    if ctx.word(i) != "AS":
        return None
    data_type = _INT_TYPES.get(ctx.word(i + 1))
    if data_type is None:
        raise NotUnderstood(f"a sequence of type {ctx.toks[i + 1].text if i + 1 < len(ctx.toks) else ''!r}")
    return data_type, ctx.word(i + 2) == "UNSIGNED"
