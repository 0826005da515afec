"""What a source holds that a mirror built from its binlog cannot follow, found before a run.

Foreign keys whose cascades the binlog does not carry: a foreign key's ``ON DELETE`` /
``ON UPDATE`` ``CASCADE``, ``SET NULL`` or ``SET DEFAULT`` changes child rows inside the storage
engine on MariaDB, and on MySQL when InnoDB handles foreign keys (``innodb_native_foreign_keys=ON``,
and every MySQL before the server-layer handling of 9.x): the binlog then holds the parent's row
event only, and whatever is built from the binlog alone (a mirror, the change log, JSON lines)
misses the child rows. With server-layer handling, MySQL writes the child rows as row events of
their own, before the parent's. ``silent_cascades`` lists them for the tables a capture takes, so
that a run can say which tables are affected.

MariaDB's system-versioned tables: the server keeps every old version of a row in the table itself
(an update writes the new row and inserts the old one as history; a delete turns the row into
history) behind hidden ``row_start`` / ``row_end`` columns that ``information_schema`` does not list.
sluice does not model them yet; ``versioned_tables`` lists those a capture would take, so that a
run refuses them up front instead of failing at their first row event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sluice.io.connection import Connection

__all__ = ["Cascade", "cascades_logged", "silent_cascades", "versioned_tables"]

_ACTIONS = ("CASCADE", "SET NULL", "SET DEFAULT")


@dataclass(frozen=True, slots=True)
class Cascade:
    """A foreign key of ``db.table`` on ``parent`` with at least one changing action."""

    db: str
    table: str
    name: str
    parent: str  # db.table
    on_delete: str
    on_update: str

    def describe(self) -> str:
        """``shop.line (fk_order on shop.orders: ON DELETE CASCADE)``, the changing actions only."""
        actions = [f"ON {what} {rule}" for what, rule in (("DELETE", self.on_delete), ("UPDATE", self.on_update))
                   if rule in _ACTIONS]
        return f"{self.db}.{self.table} ({self.name} on {self.parent}: {', '.join(actions)})"


def cascades_logged(conn: Connection) -> bool:
    """Whether the server writes the rows a foreign key's cascade changes as row events (MySQL with
    ``innodb_native_foreign_keys=OFF``)."""
    if conn.is_mariadb:
        return False
    rows = conn.query("SHOW VARIABLES LIKE 'innodb_native_foreign_keys'").rows
    return bool(rows) and str(rows[0][1]).upper() in ("OFF", "0")


def silent_cascades(conn: Connection, include: Callable[[str, str], bool] | None = None) -> list[Cascade]:
    """The foreign keys of the tables ``include`` takes whose cascades the server does not log, in
    name order; none when it logs them."""
    if cascades_logged(conn):
        return []
    rules = ", ".join(f"'{rule}'" for rule in _ACTIONS)
    rows = conn.query(
        "SELECT CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, UNIQUE_CONSTRAINT_SCHEMA, REFERENCED_TABLE_NAME, "
        "DELETE_RULE, UPDATE_RULE FROM information_schema.REFERENTIAL_CONSTRAINTS "
        f"WHERE DELETE_RULE IN ({rules}) OR UPDATE_RULE IN ({rules}) "
        "ORDER BY CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME"
    ).rows
    return [Cascade(str(db), str(t), str(name), f"{pdb}.{pt}", str(on_delete), str(on_update))
            for db, t, name, pdb, pt, on_delete, on_update in rows
            if include is None or include(str(db), str(t))]


def versioned_tables(conn: Connection, include: Callable[[str, str], bool] | None = None) -> list[str]:
    """``db.table`` of the system-versioned tables ``include`` takes (MariaDB), in name order."""
    if not conn.is_mariadb:
        return []
    rows = conn.query(
        "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'SYSTEM VERSIONED' "
        "ORDER BY TABLE_SCHEMA, TABLE_NAME"
    ).rows
    return [f"{db}.{t}" for db, t in rows if include is None or include(str(db), str(t))]
