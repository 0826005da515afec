"""The schema sluice tracks: column definitions and table definitions (the catalog of all tables
is ``sluice.cdc.schema.catalog``).

``ColumnDef`` is one declared column (lower-case base type plus the facts that decide how its
binlog values decode), ``TableSchema`` one table. Names are case-sensitive exactly as stored, as on
servers with ``lower_case_table_names=0``; column names are looked up case-insensitively, as the
server does. Both serialise to plain JSON values (``to_json`` / ``from_json``) for the schema
history file; ``from_json`` raises ``ConfigError`` saying which field is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from sluice.binlog.column_info import BINARY_COLLATION, ColumnInfo
from sluice.cdc.schema.period import SystemTime
from sluice.cdc.schema.typemap import (
    BINARY_TYPES,
    CHARACTER_TYPES,
    FIXED_BINARY_TYPES,
    GEOMETRY_TYPES,
    NUMERIC_TYPES,
    collation_id,
)
from sluice.errors import ConfigError

__all__ = ["ColumnDef", "SystemTime", "TableSchema"]


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
