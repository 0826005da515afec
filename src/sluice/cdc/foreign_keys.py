"""Foreign keys whose cascades the binlog does not carry.

A foreign key's ``ON DELETE`` / ``ON UPDATE`` ``CASCADE``, ``SET NULL`` or ``SET DEFAULT`` changes
child rows inside the storage engine on MariaDB, and on MySQL when InnoDB handles foreign keys
(``innodb_native_foreign_keys=ON``, and every MySQL before the server-layer handling of 9.x): the
binlog then holds the parent's row event only, and whatever is built from the binlog alone (a
mirror, the change log, JSON lines) misses the child rows. With server-layer handling, MySQL writes
the child rows as row events of their own, before the parent's. ``silent_cascades`` lists, for the
tables a capture takes, the foreign keys whose cascades the server does not log, so that a run can
say which tables are affected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sluice.io.connection import Connection

__all__ = ["Cascade", "cascades_logged", "silent_cascades"]

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
