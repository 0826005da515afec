"""What a source holds that a mirror built from its binlog cannot follow, found before a run.

Foreign keys whose cascades the binlog does not carry: a foreign key's ``ON DELETE`` /
``ON UPDATE`` ``CASCADE``, ``SET NULL`` or ``SET DEFAULT`` changes child rows inside the storage
engine on MariaDB, and on MySQL when InnoDB handles foreign keys (``innodb_native_foreign_keys=ON``,
and every MySQL before the server-layer handling of 9.x): the binlog then holds the parent's row
event only, and whatever is built from the binlog alone (a mirror, the change log, JSON lines)
misses the child rows. With server-layer handling, MySQL writes the child rows as row events of
their own, before the parent's. ``silent_cascades`` lists them for the tables a capture takes, so
that a run can say which tables are affected.

MariaDB's transaction-precise system-versioned tables (period columns ``BIGINT UNSIGNED GENERATED
ALWAYS AS ROW START`` / ``ROW END``, transaction ids): the server logs every statement that changes
such a table as a statement, also with ``binlog_format=ROW`` (MariaDB 10.11 and 11.8 do), so no
row of it is in the binlog's row events. ``transaction_precise_tables`` lists those a capture would
take, so that a run refuses them up front instead of mirroring none of their changes. (Tables
versioned by timestamp are captured: ``sluice.cdc.records.versioned_op``.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sluice.io.connection import Connection

__all__ = ["Cascade", "cascades_logged", "silent_cascades", "transaction_precise_tables"]

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


def transaction_precise_tables(conn: Connection, include: Callable[[str, str], bool] | None = None) -> list[str]:
    """``db.table`` of the transaction-precise system-versioned tables ``include`` takes (MariaDB),
    in name order: those whose ROW END column is a BIGINT (a transaction id)."""
    if not conn.is_mariadb:
        return []
    rows = conn.query(
        "SELECT c.TABLE_SCHEMA, c.TABLE_NAME FROM information_schema.COLUMNS c JOIN information_schema.TABLES t "
        "ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME WHERE t.TABLE_TYPE = 'SYSTEM VERSIONED' "
        "AND c.GENERATION_EXPRESSION = 'ROW END' AND c.DATA_TYPE = 'bigint' ORDER BY c.TABLE_SCHEMA, c.TABLE_NAME"
    ).rows
    return [f"{db}.{t}" for db, t in rows if include is None or include(str(db), str(t))]
