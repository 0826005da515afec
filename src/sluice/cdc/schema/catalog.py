"""The catalog of all tracked tables: ``Catalog``, an immutable value holding every tracked table
(``sluice.cdc.schema.model.TableSchema``), the default character set and collation of every known
database and of the server, and the server flavor (MariaDB's JSON is a LONGTEXT, MySQL's is not).

Operations on a ``Catalog`` return a new one, so a catalog can be handed around and remembered per
binlog position. Table and database names are case-sensitive exactly as stored, as on servers with
``lower_case_table_names=0``. It serialises to a plain JSON value (``to_json`` / ``from_json``)
for the schema history file; ``from_json`` raises ``ConfigError`` saying which field is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from sluice.cdc.schema.model import TableSchema
from sluice.cdc.schema.typemap import (
    charset_of_collation,
    default_collation,
)
from sluice.errors import ConfigError

__all__ = ["Catalog", "DbDefaults"]


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

