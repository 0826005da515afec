"""Column definitions of DDL as ``ColumnDef``s: types, lengths, character sets and keys.

Character sets cascade column <- table <- database <- server (``Catalog``); MariaDB's JSON is a
LONGTEXT with a JSON check. ``converted`` is a character column after CONVERT TO CHARACTER SET.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.ddl.text import (
    GEOMCOLLECTION,
    MULTIPOINT,
    UFLOAT,
    NotUnderstood,
    parse_statement,
)
from sluice.cdc.schema.model import ColumnDef, TableSchema
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
from sluice.dsn import Flavor
from sluice.errors import SchemaError

# ---------------------------------------------------------------------------------------- columns

_INTS = {"TINYINT": "tinyint", "SMALLINT": "smallint", "MEDIUMINT": "mediumint", "INT": "int", "BIGINT": "bigint"}
_TYPES: dict[str, tuple[str, bool]] = {
    **{k: (v, False) for k, v in _INTS.items()},
    **{"U" + k: (v, True) for k, v in _INTS.items()},
    "BOOLEAN": ("tinyint", False), "SERIAL": ("bigint", True),
    "DECIMAL": ("decimal", False), "UDECIMAL": ("decimal", True), "FLOAT": ("float", False),
    UFLOAT.name: ("float", True), "DOUBLE": ("double", False), "UDOUBLE": ("double", True), "BIT": ("bit", False),
    "DATE": ("date", False), "TIME": ("time", False), "DATETIME": ("datetime", False),
    "TIMESTAMP": ("timestamp", False), "TIMESTAMPTZ": ("timestamp", False), "TIMESTAMPLTZ": ("timestamp", False),
    "YEAR": ("year", False), "CHAR": ("char", False), "NCHAR": ("char", False), "VARCHAR": ("varchar", False),
    "NVARCHAR": ("varchar", False), "BINARY": ("binary", False), "VARBINARY": ("varbinary", False),
    **{k.upper(): (k, False) for k in (*TEXT_TYPES, *BLOB_TYPES)},
    "JSON": ("json", False), "ENUM": ("enum", False), "SET": ("set", False), "GEOMETRY": ("geometry", False),
    "POINT": ("point", False), "LINESTRING": ("linestring", False), "POLYGON": ("polygon", False),
    MULTIPOINT.name: ("multipoint", False), "MULTILINESTRING": ("multilinestring", False),
    "MULTIPOLYGON": ("multipolygon", False), GEOMCOLLECTION.name: ("geometrycollection", False),
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
    raise NotUnderstood(f"{what}: expected a whole number, found {p.sql() if isinstance(p, exp.Expr) else p!r}")


def _member(p: Any, what: str) -> str:
    if isinstance(p, exp.Introducer):
        p = p.expression
    if isinstance(p, exp.Literal) and p.is_string:
        return str(p.this)
    raise NotUnderstood(f"{what}: expected a quoted member, found {p.sql() if isinstance(p, exp.Expr) else p!r}")


def server_defaults(catalog: Catalog) -> tuple[str | None, str | None]:
    """The server's character set and collation as the binlog or the server told them, else
    (None, None): a flavor's compiled-in default is no evidence of what a server was set to."""
    if catalog.server_charset is not None:
        return catalog.server_charset, catalog.server_collation or catalog.default_collation(catalog.server_charset)
    return None, None


def db_defaults(catalog: Catalog, db: str) -> tuple[str | None, str | None]:
    """A database's defaults when sluice saw them (read from the server, or its CREATE / ALTER
    DATABASE replayed), else (None, None): a database created before the binlog sluice reads may
    have any character set, so a column that inherits it has an unknown one."""
    cs = catalog.database_charset(db)
    return (cs, catalog.database_collation(db)) if cs is not None else (None, None)


def name_pair(catalog: Catalog, cs: str | None, coll: str | None,
          fallback: tuple[str | None, str | None]) -> tuple[str | None, str | None]:
    """(charset, collation) from an explicit charset and/or collation, else the inherited pair.

    MariaDB 11's ``uca1400_*`` collation names carry no character set: they name that collation of
    the charset given with them, else of the inherited one (``utf8mb4_uca1400_ai_ci``)."""
    if cs is None and coll is None:
        return fallback
    if coll is not None and coll.startswith("uca1400_"):
        cs = cs or fallback[0]
        coll = f"{cs}_{coll}" if cs is not None else None
    if cs is None:
        cs = charset_of_collation(coll)
    if coll is None:
        coll = catalog.default_collation(cs)
    return cs, coll


def column_def(node: exp.ColumnDef, table_cs: str | None, table_coll: str | None,
            catalog: Catalog) -> tuple[ColumnDef, bool]:
    """The ColumnDef of a column definition and whether it declares itself the PRIMARY KEY."""
    name = node.name
    kind = node.args.get("kind")
    if not isinstance(kind, exp.DataType):
        raise NotUnderstood(f"column `{name}` has no data type sluice can read")
    dtype = kind.this.name if hasattr(kind.this, "name") else str(kind.this)
    if dtype not in _TYPES:
        raise NotUnderstood(f"column `{name}`: type {kind.sql(dialect='mysql')} is not one sluice models")
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
            raise NotUnderstood(f"{what}: {dt} needs a length")
        length = _int_param(params[0], what)
    elif dt in ("time", "datetime", "timestamp"):
        fsp = _int_param(params[0], what) if params else 0
    elif dt == "enum":
        enum_values = tuple(_member(p, what) for p in params)
    elif dt == "set":
        set_values = tuple(_member(p, what) for p in params)
    elif dt == "vector" and params:
        length = _int_param(params[0], what)
    if dt == "json" and catalog.flavor == Flavor.MARIADB:
        dt, cs, coll = "longtext", "utf8mb4", "utf8mb4_bin"  # MariaDB's JSON is LONGTEXT + CHECK
    if dt in CHARACTER_TYPES:
        if cs is None and coll is None:
            cs, coll = table_cs, table_coll
        else:
            cs, coll = name_pair(catalog, cs, coll, (table_cs, table_coll))
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
        stmt = parse_statement(f"CREATE TABLE `_` (`_` {column_type})")
        kind = stmt.this.expressions[0].args["kind"]
        return tuple(_member(p, "COLUMN_TYPE") for p in kind.expressions)
    except (NotUnderstood, SqlglotError, AttributeError, IndexError, KeyError) as exc:
        raise SchemaError(f"cannot read the members of the column type {column_type[:200]!r}: {exc}") from None


def primary_key_of(node: Any) -> list[str] | None:
    """Column names of a PRIMARY KEY table constraint, or None if the node is no primary key."""
    if isinstance(node, exp.Constraint):
        for e in node.expressions:
            keys = primary_key_of(e)
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
            raise NotUnderstood("a PRIMARY KEY part that is not a column")
        names.append(part.name)
    return names


def with_pk(table: TableSchema, names: list[str]) -> TableSchema:
    """``table`` with this primary key; its columns become NOT NULL, as the server makes them."""
    cols = list(table.columns)
    pk = []
    for n in names:
        i = table.index_of(n)
        if i is None:
            raise NotUnderstood(f"the PRIMARY KEY names `{n}`, which {table.db}.{table.name} does not have")
        cols[i] = replace(cols[i], nullable=False)
        pk.append(cols[i].name)
    return replace(table, columns=tuple(cols), primary_key=tuple(pk))


def unique_names(db: str, name: str, cols: list[ColumnDef]) -> None:
    """Refuse a table that would have two columns of one name (names compare case-insensitively)."""
    seen = set()
    for c in cols:
        if c.name.lower() in seen:
            raise NotUnderstood(f"{db}.{name} would have two columns named `{c.name}`")
        seen.add(c.name.lower())


def table_options(props: list[Any]) -> tuple[str | None, str | None]:
    """A table's own character set and collation from its options, None where it names none."""
    cs = coll = None
    for p in props:
        if isinstance(p, exp.CharacterSetProperty):
            cs = normalize_charset(p.this.name)
        elif isinstance(p, exp.CollateProperty):
            coll = normalize_collation(p.this.name)
    return cs, coll


def converted(c: ColumnDef, cs: str, coll: str | None) -> ColumnDef:
    """A character column after CONVERT TO CHARACTER SET: TEXT types grow to hold as many characters."""
    if c.data_type not in CHARACTER_TYPES or c.charset == "binary":
        return c
    dt = c.data_type
    if dt in TEXT_TYPES:
        chars = (blob_max_bytes(dt) or 0) // (mbmaxlen(c.charset) or 1)
        grown = sized_blob_type(chars * (mbmaxlen(cs) or 1), text=True)
        dt = max(dt, grown, key=lambda n: TEXT_TYPES[n])
    return replace(c, data_type=dt, charset=cs, collation=coll)
