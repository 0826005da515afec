"""The schema sluice tracks: column definitions, table definitions and the catalog of all tables.

``ColumnDef`` is one declared column (lower-case base type plus the facts that decide how its
binlog values decode), ``TableSchema`` one table, and ``Catalog`` an immutable value holding every
tracked table, the default character set and collation of every known database and of the server,
and the server flavor (MariaDB's JSON is a LONGTEXT, MySQL's is not). Operations on a ``Catalog``
return a new one, so a catalog can be handed around and remembered per binlog position. Names are
case-sensitive exactly as stored, as on servers with ``lower_case_table_names=0``; column names are
looked up case-insensitively, as the server does. All three serialise to plain JSON values
(``to_json`` / ``from_json``) for the schema history file; ``from_json`` raises ``ConfigError``
saying which field is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from sluice.binlog.columns import BINARY_COLLATION, ColumnInfo
from sluice.cdc.schema.period import SystemTime
from sluice.cdc.schema.typemap import (
    BINARY_TYPES,
    CHARACTER_TYPES,
    FIXED_BINARY_TYPES,
    GEOMETRY_TYPES,
    NUMERIC_TYPES,
    charset_of_collation,
    collation_id,
    default_collation,
)
from sluice.errors import ConfigError

__all__ = ["Catalog", "ColumnDef", "SystemTime", "TableSchema"]


@dataclass(frozen=True, slots=True)
class ColumnDef:
    """One declared column, as ``information_schema.COLUMNS`` or a CREATE TABLE describes it."""

    name: str
    data_type: str  # lower-case base type: "int", "varchar", "decimal", "enum", "json", ...
    unsigned: bool = False
    nullable: bool = True
    length: int | None = None  # chars for char/varchar, bytes for binary/varbinary, bits for bit
    precision: int | None = None  # decimal precision
    scale: int | None = None  # decimal scale
    fsp: int | None = None  # time/datetime/timestamp fractional digits
    charset: str | None = None  # "utf8mb4", "latin1", "binary" (binary/varbinary/blob), ...
    collation: str | None = None
    enum_values: tuple[str, ...] | None = None
    set_values: tuple[str, ...] | None = None
    visible: bool = True  # False for INVISIBLE columns (still in every row image)

    def column_info(self) -> ColumnInfo:
        """What the row decoder needs: name, signedness of numbers, collation id of strings
        (63 for binary ones), ENUM/SET members, geometry subtype, visibility."""
        dt = self.data_type
        if dt in CHARACTER_TYPES:
            coll = BINARY_COLLATION if self.charset == "binary" else collation_id(self.charset, self.collation)
        elif dt in BINARY_TYPES or dt in FIXED_BINARY_TYPES:
            coll = BINARY_COLLATION
        else:
            coll = None
        return ColumnInfo(
            name=self.name,
            unsigned=self.unsigned if dt in NUMERIC_TYPES else None,
            collation=coll,
            enum_values=self.enum_values,
            set_values=self.set_values,
            geometry_type=GEOMETRY_TYPES.get(dt),
            vector_dimension=self.length if dt == "vector" else None,
            visible=self.visible,
            mariadb_type=dt if dt in FIXED_BINARY_TYPES else None,
        )

    def sql_type(self) -> str:
        """The type as SQL, for messages: ``decimal(10,2) unsigned``, ``varchar(20) utf8mb4``."""
        dt = self.data_type
        if dt in ("enum", "set"):
            members = self.enum_values if dt == "enum" else self.set_values
            text = dt + "(" + ",".join("'" + m.replace("'", "''") + "'" for m in members or ()) + ")"
        elif dt == "decimal" and self.precision is not None:
            text = f"decimal({self.precision},{self.scale or 0})"
        elif self.length is not None:
            text = f"{dt}({self.length})"
        elif self.fsp:
            text = f"{dt}({self.fsp})"
        else:
            text = dt
        if self.unsigned:
            text += " unsigned"
        if self.charset and dt in CHARACTER_TYPES:
            text += f" {self.charset}"
        return text

    def to_json(self) -> dict[str, Any]:
        """The column as a JSON object: name, type and the fields that differ from their default."""
        out: dict[str, Any] = {"name": self.name, "type": self.data_type}
        for f in fields(self)[2:]:
            value = getattr(self, f.name)
            if value != f.default:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, d: Any) -> ColumnDef:
        """Inverse of ``to_json``; an unknown field or a wrong type raises ``ConfigError``."""
        if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not isinstance(d.get("type"), str):
            raise ConfigError(f"a column must be an object with string 'name' and 'type', found {d!r:.200}")
        kwargs: dict[str, Any] = {"name": d["name"], "data_type": d["type"]}
        known = {f.name: f for f in fields(cls)[2:]}
        for key, value in d.items():
            if key in ("name", "type"):
                continue
            if key not in known:
                raise ConfigError(f"column {d['name']!r}: unknown field {key!r}")
            if key in ("enum_values", "set_values") and value is not None:
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise ConfigError(f"column {d['name']!r}: {key} must be a list of strings")
                value = tuple(value)
            elif key in ("unsigned", "nullable", "visible") and not isinstance(value, bool):
                raise ConfigError(f"column {d['name']!r}: {key} must be true or false, found {value!r}")
            elif key in ("length", "precision", "scale", "fsp") and (
                    not isinstance(value, int) or isinstance(value, bool)):
                raise ConfigError(f"column {d['name']!r}: {key} must be an integer, found {value!r}")
            elif key in ("charset", "collation") and not isinstance(value, str):
                raise ConfigError(f"column {d['name']!r}: {key} must be a string, found {value!r}")
            kwargs[key] = value
        return cls(**kwargs)


@dataclass(frozen=True, slots=True)
class TableSchema:
    """One table: its columns in order, primary key column names and default character set.

    A system-versioned table (``system_time``) has its period columns among ``columns`` as its rows
    have them, and ``primary_key`` is the key as declared, without the row end the server appends
    to it: it names a row among the current ones, which is what the mirror is keyed by."""

    db: str
    name: str
    columns: tuple[ColumnDef, ...]
    primary_key: tuple[str, ...] = ()
    charset: str | None = None  # table default charset
    collation: str | None = None  # table default collation
    system_time: SystemTime | None = None

    def data_columns(self) -> tuple[ColumnDef, ...]:
        """Every column but implicit period columns: what ``SELECT *`` of the table lists (with its
        INVISIBLE columns) and what a mirror holds."""
        st = self.system_time
        if st is None or not st.implicit:
            return self.columns
        hidden = (st.start.lower(), st.end.lower())
        return tuple(c for c in self.columns if c.name.lower() not in hidden)

    def selected(self) -> TableSchema:
        """The table as a ``SELECT`` of it reads it (the snapshot's chunks, ``sluice verify``): the
        columns of ``data_columns``; of a system-versioned table, only the current rows come."""
        columns = self.data_columns()
        return self if columns is self.columns else replace(self, columns=columns)

    def row_end_index(self) -> int | None:
        """The position of the period's row end column of a system-versioned table, else None."""
        return None if self.system_time is None else self.index_of(self.system_time.end)

    def column_infos(self) -> tuple[ColumnInfo, ...]:
        """The row decoder's ``ColumnInfo`` of each column, in order."""
        return tuple(c.column_info() for c in self.columns)

    @property
    def names(self) -> tuple[str, ...]:
        """Column names, in order."""
        return tuple(c.name for c in self.columns)

    def index_of(self, column: str) -> int | None:
        """Position of a column, matched case-insensitively like the server does; None if absent."""
        low = column.lower()
        for i, c in enumerate(self.columns):
            if c.name.lower() == low:
                return i
        return None

    def describe(self) -> str:
        """``db.t (id int, name varchar(20) utf8mb4)`` for messages."""
        return f"{self.db}.{self.name} (" + ", ".join(f"{c.name} {c.sql_type()}" for c in self.columns) + ")"

    def to_json(self) -> dict[str, Any]:
        """The table as a JSON object (primary key and defaults only when set)."""
        out: dict[str, Any] = {"db": self.db, "name": self.name, "columns": [c.to_json() for c in self.columns]}
        if self.primary_key:
            out["primary_key"] = list(self.primary_key)
        if self.charset is not None:
            out["charset"] = self.charset
        if self.collation is not None:
            out["collation"] = self.collation
        if self.system_time is not None:
            out["system_time"] = self.system_time.to_json()
        return out

    @classmethod
    def from_json(cls, d: Any) -> TableSchema:
        """Inverse of ``to_json``; another shape raises ``ConfigError``."""
        if not isinstance(d, dict):
            raise ConfigError(f"a table must be a JSON object, found {d!r:.200}")
        db, name, columns = d.get("db"), d.get("name"), d.get("columns")
        if not isinstance(db, str) or not isinstance(name, str) or not isinstance(columns, list):
            raise ConfigError(f"a table needs string 'db' and 'name' and a 'columns' list, found {d!r:.200}")
        unknown = set(d) - {"db", "name", "columns", "primary_key", "charset", "collation", "system_time"}
        if unknown:
            raise ConfigError(f"table {db}.{name}: unknown field(s) {sorted(unknown)}")
        pk = d.get("primary_key", [])
        if not isinstance(pk, list) or not all(isinstance(p, str) for p in pk):
            raise ConfigError(f"table {db}.{name}: primary_key must be a list of column names")
        for key in ("charset", "collation"):
            if d.get(key) is not None and not isinstance(d[key], str):
                raise ConfigError(f"table {db}.{name}: {key} must be a string")
        system_time = None if d.get("system_time") is None else SystemTime.from_json(d["system_time"])
        return cls(db, name, tuple(ColumnDef.from_json(c) for c in columns), tuple(pk),
                   d.get("charset"), d.get("collation"), system_time)


DbDefaults = tuple[str | None, str | None]  # (charset, collation)


class Catalog:
    """Every tracked table plus the character-set defaults DDL needs. Immutable: the ``with_*`` /
    ``without_*`` methods return a new catalog. Table and database names are case-sensitive."""

    __slots__ = ("_collations", "_databases", "_tables", "flavor", "server_charset", "server_collation")

    def __init__(
        self,
        tables: Iterable[TableSchema] = (),
        databases: Mapping[str, DbDefaults] | None = None,
        *,
        server_charset: str | None = None,
        server_collation: str | None = None,
        flavor: str | None = None,
        default_collations: Mapping[str, str] | None = None,
    ) -> None:
        self._tables: dict[tuple[str, str], TableSchema] = {(t.db, t.name): t for t in tables}
        self._databases: dict[str, DbDefaults] = dict(databases or {})
        self.server_charset = server_charset
        self.server_collation = server_collation
        self.flavor = flavor
        self._collations: dict[str, str] = dict(default_collations or {})

    def _copy(self) -> Catalog:
        new = Catalog.__new__(Catalog)
        new._tables = dict(self._tables)
        new._databases = dict(self._databases)
        new.server_charset = self.server_charset
        new.server_collation = self.server_collation
        new.flavor = self.flavor
        new._collations = dict(self._collations)
        return new

    # ------------------------------------------------------------------ tables

    def get(self, db: str, table: str) -> TableSchema | None:
        """The tracked table ``db.table``, or None."""
        return self._tables.get((db, table))

    def with_table(self, t: TableSchema) -> Catalog:
        """A copy with ``t`` added, or replacing the table of the same name."""
        new = self._copy()
        new._tables[(t.db, t.name)] = t
        return new

    def without_table(self, db: str, table: str) -> Catalog:
        """A copy without ``db.table`` (this catalog when it has no such table)."""
        if (db, table) not in self._tables:
            return self
        new = self._copy()
        del new._tables[(db, table)]
        return new

    def tables(self, db: str | None = None) -> Iterator[TableSchema]:
        """The tracked tables (of one database when given), ordered by (db, name)."""
        for key in sorted(self._tables):
            if db is None or key[0] == db:
                yield self._tables[key]

    def __iter__(self) -> Iterator[TableSchema]:
        return self.tables()

    def __len__(self) -> int:
        return len(self._tables)

    def __contains__(self, key: object) -> bool:
        return key in self._tables

    # ------------------------------------------------------------------ databases and defaults

    def databases(self) -> tuple[str, ...]:
        """Names of every known database: created, bootstrapped or holding a tracked table."""
        return tuple(sorted(set(self._databases) | {db for db, _ in self._tables}))

    def database_defaults(self) -> dict[str, DbDefaults]:
        """``{db: (charset, collation)}`` of every database whose defaults are known."""
        return dict(self._databases)

    def with_database(self, db: str, charset: str | None = None, collation: str | None = None) -> Catalog:
        """A copy that knows ``db`` with these default charset and collation."""
        new = self._copy()
        new._databases[db] = (charset, collation)
        return new

    def with_database_defaults(self, databases: Mapping[str, DbDefaults]) -> Catalog:
        """A copy whose known databases and their defaults are exactly ``databases``."""
        new = self._copy()
        new._databases = dict(databases)
        return new

    def without_database(self, db: str) -> Catalog:
        """Forget a database and every table in it."""
        new = self._copy()
        new._databases.pop(db, None)
        for key in [k for k in new._tables if k[0] == db]:
            del new._tables[key]
        return new

    def database_charset(self, db: str) -> str | None:
        """The database's default charset when known (from its collation if only that is), else None:
        a database whose defaults were never seen may have any, not necessarily the server's."""
        cs, coll = self._databases.get(db, (None, None))
        return cs if cs is not None or coll is None else charset_of_collation(coll)

    def database_collation(self, db: str) -> str | None:
        """The database's default collation (or its charset's default) when known, else None."""
        cs, coll = self._databases.get(db, (None, None))
        return coll if coll is not None else self.default_collation(cs)

    def default_collation(self, charset: str | None) -> str | None:
        """The collation a column of ``charset`` gets when none is named: the server's (recorded by
        bootstrap) or else the compiled-in default of the flavor."""
        if charset is None:
            return None
        return self._collations.get(charset) or default_collation(charset, self.flavor)

    def default_collations(self) -> dict[str, str]:
        """``{charset: collation}`` of the server's default collations recorded at bootstrap."""
        return dict(self._collations)

    def with_server_defaults(
        self,
        *,
        server_charset: str | None = None,
        server_collation: str | None = None,
        flavor: str | None = None,
        default_collations: Mapping[str, str] | None = None,
    ) -> Catalog:
        """A copy with the given server facts replaced (None keeps the current value)."""
        new = self._copy()
        if server_charset is not None:
            new.server_charset = server_charset
        if server_collation is not None:
            new.server_collation = server_collation
        if flavor is not None:
            new.flavor = flavor
        if default_collations is not None:
            new._collations = dict(default_collations)
        return new

    # ------------------------------------------------------------------ values

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Catalog):
            return NotImplemented
        return (self._tables == other._tables and self._databases == other._databases
                and self.server_charset == other.server_charset
                and self.server_collation == other.server_collation
                and self.flavor == other.flavor and self._collations == other._collations)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"Catalog({len(self._tables)} tables, {len(self.databases())} databases, "
                f"server {self.server_charset}/{self.server_collation}, flavor {self.flavor})")

    def to_json(self) -> dict[str, Any]:
        """The catalog as a JSON object (tables ordered by db and name)."""
        out: dict[str, Any] = {
            "flavor": self.flavor,
            "server_charset": self.server_charset,
            "server_collation": self.server_collation,
            "databases": {db: {"charset": cs, "collation": coll} for db, (cs, coll) in sorted(self._databases.items())},
            "tables": [t.to_json() for t in self.tables()],
        }
        if self._collations:
            out["default_collations"] = dict(sorted(self._collations.items()))
        return out

    @classmethod
    def from_json(cls, d: Any) -> Catalog:
        """Inverse of ``to_json``; another shape raises ``ConfigError``."""
        if not isinstance(d, dict):
            raise ConfigError(f"a catalog must be a JSON object, found {d!r:.200}")
        dbs = d.get("databases", {})
        tables = d.get("tables", [])
        colls = d.get("default_collations", {})
        if not isinstance(dbs, dict) or not isinstance(tables, list) or not isinstance(colls, dict):
            raise ConfigError("a catalog needs a 'databases' object, a 'tables' list and a 'default_collations' object")
        databases: dict[str, DbDefaults] = {}
        for db, v in dbs.items():
            if not isinstance(v, dict) or set(v) - {"charset", "collation"}:
                raise ConfigError(f"database {db!r}: expected {{'charset': ..., 'collation': ...}}, found {v!r:.200}")
            databases[db] = (v.get("charset"), v.get("collation"))
        for key in ("flavor", "server_charset", "server_collation"):
            if d.get(key) is not None and not isinstance(d[key], str):
                raise ConfigError(f"catalog field {key!r} must be a string or null, found {d[key]!r:.100}")
        return cls(
            (TableSchema.from_json(t) for t in tables), databases,
            server_charset=d.get("server_charset"), server_collation=d.get("server_collation"),
            flavor=d.get("flavor"), default_collations=colls,
        )

