"""A catalog read from a live server's ``information_schema``.

``bootstrap_catalog`` takes an already open ``Connection`` and reads the server's default character
set and collation (``@@character_set_server``, ``@@collation_server``, and the default collation
of every character set, with MySQL's ``default_collation_for_utf8mb4`` and MariaDB's
``character_set_collations`` applied), every database's defaults (SCHEMATA), the tables (TABLES:
base tables, MariaDB's system-versioned ones and sequences), their columns in order (COLUMNS) and
primary keys (STATISTICS), skipping the system schemas.
A system-versioned table (TABLE_TYPE ``SYSTEM VERSIONED``) gets its period (``TableSchema.system_time``):
explicit period columns are in COLUMNS, ``STORED GENERATED`` with the GENERATION_EXPRESSION ``ROW
START`` / ``ROW END``; when it has none, the server added the implicit ``row_start`` / ``row_end``,
which COLUMNS does not list, and they are appended as the last two columns, where every row image
has them (the TABLE_MAP check of the tracker then holds the column count to the binlog's). Its
primary key is read without the row end the server appends to it. A table that a DDL removes between the
reads (listed, but without columns) is left out, as the binlog will say.
Column facts come from the dedicated columns (DATA_TYPE, lengths, precision, charset,
collation, IS_NULLABLE); COLUMN_TYPE only for UNSIGNED and ENUM/SET members, which are read by the
DDL parser. The result describes each table exactly as ``apply_ddl`` of its CREATE TABLE does.
The caller makes the read consistent with the binlog position it records (for instance under
FLUSH TABLES WITH READ LOCK, or while no DDL runs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.ddl import IMPLICIT_PERIOD, enum_members
from sluice.cdc.schema.model import ColumnDef, SystemTime, TableSchema
from sluice.cdc.schema.typemap import (
    BINARY_TYPES,
    CHARACTER_TYPES,
    charset_of_collation,
    normalize_charset,
    normalize_collation,
)
from sluice.dsn import Flavor
from sluice.errors import SchemaError, ServerError

if TYPE_CHECKING:
    from sluice.io.connection import Connection

__all__ = ["SYSTEM_SCHEMAS", "bootstrap_catalog"]

SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
_NOT_SYSTEM = "NOT IN (" + ", ".join(f"'{s}'" for s in SYSTEM_SCHEMAS) + ")"


def _optional(conn: Connection, sql: str) -> str | None:
    """A single value, or None when the server does not have that variable."""
    try:
        rows = conn.query(sql).rows
    except ServerError:
        return None
    return rows[0][0] if rows else None


def _default_collations(conn: Connection, flavor: str) -> dict[str, str]:
    defaults = {}
    for coll, cs in conn.query(
        "SELECT COLLATION_NAME, CHARACTER_SET_NAME FROM information_schema.COLLATIONS WHERE IS_DEFAULT = 'Yes'"
    ).rows:
        if coll and cs:
            defaults[normalize_charset(cs) or cs] = normalize_collation(coll) or coll
    if flavor == Flavor.MYSQL:
        utf8mb4 = _optional(conn, "SELECT @@default_collation_for_utf8mb4")
        if utf8mb4:
            defaults["utf8mb4"] = utf8mb4.lower()
    else:  # MariaDB 11.2+: per-charset default collations, e.g. utf8mb4=utf8mb4_uca1400_ai_ci
        for item in (_optional(conn, "SELECT @@character_set_collations") or "").split(","):
            cs, _, coll = item.strip().partition("=")
            if cs and coll:
                defaults[normalize_charset(cs) or cs] = normalize_collation(coll) or coll
    return defaults


def _int(value: str | None) -> int | None:
    return None if value is None else int(value)


def _column(db: str, table: str, row: tuple[str | None, ...]) -> ColumnDef:
    (name, data_type, column_type, is_nullable, char_len, num_precision, num_scale, dt_precision,
     charset, collation, extra) = row
    dt = (data_type or "").lower()
    if dt == "geomcollection":
        dt = "geometrycollection"
    ctype = (column_type or "").lower()
    length = precision = scale = fsp = None
    enum_values = set_values = None
    if dt in ("char", "varchar", "binary", "varbinary"):
        length = _int(char_len)
    elif dt == "bit":
        length = _int(num_precision)
    elif dt == "decimal":
        precision, scale = _int(num_precision), _int(num_scale)
    elif dt in ("time", "datetime", "timestamp"):
        fsp = _int(dt_precision) or 0
    elif dt in ("enum", "set"):
        try:
            members = enum_members(column_type or "")
        except SchemaError as exc:
            raise SchemaError(f"bootstrap of {db}.{table}, column `{name}`: {exc}") from None
        if dt == "enum":
            enum_values = members
        else:
            set_values = members
    elif dt == "vector" and "(" in ctype:
        length = int(ctype[ctype.index("(") + 1:ctype.index(")")])
    cs: str | None
    coll: str | None
    if dt in BINARY_TYPES:
        cs, coll = "binary", "binary"
    elif dt in CHARACTER_TYPES:
        coll = normalize_collation(collation)
        cs = normalize_charset(charset) or charset_of_collation(coll)
        if cs == "binary":
            coll = "binary"
    else:
        cs = coll = None
    return ColumnDef(
        name=name or "",
        data_type=dt,
        unsigned=" unsigned" in ctype,
        nullable=is_nullable == "YES",
        length=length,
        precision=precision,
        scale=scale,
        fsp=fsp,
        charset=cs,
        collation=coll,
        enum_values=enum_values,
        set_values=set_values,
        visible="INVISIBLE" not in (extra or "").upper(),
    )


def _period(columns: list[ColumnDef], pk: list[str],
            roles: dict[str, str]) -> tuple[list[ColumnDef], list[str], SystemTime]:
    """A system-versioned table's columns, primary key and period: its explicit period columns
    (NOT NULL, as the server makes them), or the implicit ones appended."""
    start, end = roles.get("ROW START"), roles.get("ROW END")
    if start and end:
        ends = (start.lower(), end.lower())
        columns = [replace(c, nullable=False) if c.name.lower() in ends else c for c in columns]
        system_time = SystemTime(start, end, False)
    else:
        columns = [*columns, *IMPLICIT_PERIOD]
        system_time = SystemTime(IMPLICIT_PERIOD[0].name, IMPLICIT_PERIOD[1].name, True)
    return columns, [k for k in pk if k.lower() != system_time.end.lower()], system_time


def bootstrap_catalog(conn: Connection, include: Callable[[str, str], bool] | None = None) -> Catalog:
    """Every base table of the server (those ``include(db, table)`` accepts) as a ``Catalog``.

    ``conn`` is an open ``sluice.io.connection.Connection`` whose user may read
    ``information_schema`` for the tables wanted. Raises ``ServerError`` / ``TransportError`` from
    the connection, ``SchemaError`` for a column type it cannot read.
    """
    flavor = conn.flavor
    server_cs, server_coll = conn.query("SELECT @@character_set_server, @@collation_server").rows[0]
    defaults = _default_collations(conn, flavor)
    databases = {}
    for db, cs, coll in conn.query(
        "SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA "
        f"WHERE SCHEMA_NAME {_NOT_SYSTEM}"
    ).rows:
        if db is not None:
            databases[db] = (normalize_charset(cs), normalize_collation(coll))
    wanted: dict[tuple[str, str], str | None] = {}
    versioned: set[tuple[str, str]] = set()
    for db, table, coll, kind in conn.query(
        "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_COLLATION, TABLE_TYPE FROM information_schema.TABLES "
        f"WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED', 'SEQUENCE') AND TABLE_SCHEMA {_NOT_SYSTEM}"
    ).rows:
        if db is not None and table is not None and (include is None or include(db, table)):
            wanted[(db, table)] = normalize_collation(coll)
            if kind == "SYSTEM VERSIONED":
                versioned.add((db, table))
    columns: dict[tuple[str, str], list[ColumnDef]] = {key: [] for key in wanted}
    roles: dict[tuple[str, str], dict[str, str]] = {}
    for row in conn.query(
        "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, "
        "CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, CHARACTER_SET_NAME, "
        "COLLATION_NAME, EXTRA, GENERATION_EXPRESSION FROM information_schema.COLUMNS "
        f"WHERE TABLE_SCHEMA {_NOT_SYSTEM} ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION"
    ).rows:
        key = (row[0] or "", row[1] or "")
        if key in columns:
            columns[key].append(_column(key[0], key[1], row[2:-1]))
            if key in versioned and (row[-1] or "").upper() in ("ROW START", "ROW END"):
                roles.setdefault(key, {})[(row[-1] or "").upper()] = row[2] or ""
    keys: dict[tuple[str, str], list[str]] = {}
    for db, table, column in conn.query(
        "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
        f"WHERE INDEX_NAME = 'PRIMARY' AND TABLE_SCHEMA {_NOT_SYSTEM} ORDER BY TABLE_SCHEMA, TABLE_NAME, SEQ_IN_INDEX"
    ).rows:
        keys.setdefault((db or "", table or ""), []).append(column or "")
    tables = []
    for (db, table), coll in wanted.items():
        if not columns[(db, table)]:
            continue  # dropped or renamed between the two reads: gone, as the binlog will say
        cs = charset_of_collation(coll)
        cols, pk, system_time = columns[(db, table)], keys.get((db, table), []), None
        if (db, table) in versioned:
            cols, pk, system_time = _period(cols, pk, roles.get((db, table), {}))
        tables.append(TableSchema(db, table, tuple(cols), tuple(pk), cs, coll, system_time))
    return Catalog(
        tables, databases,
        server_charset=normalize_charset(server_cs), server_collation=normalize_collation(server_coll),
        flavor=flavor, default_collations=defaults,
    )
