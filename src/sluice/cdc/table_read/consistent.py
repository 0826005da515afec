"""Tables without a usable key: one consistent scan and the binlog position it is consistent with.

``consistent_scan`` reads every row of a table inside ``START TRANSACTION WITH CONSISTENT SNAPSHOT``
and returns them with the position the streaming phase continues from. How the position is made
to match the snapshot, and the privileges each way needs (besides ``SELECT`` on the table and
``REPLICATION CLIENT``):

* MariaDB: ``SHOW STATUS LIKE 'binlog_snapshot_%'`` inside the snapshot transaction gives its
  exact position. No extra privilege, no lock.
* MySQL, first choice: ``LOCK INSTANCE FOR BACKUP`` (blocks DDL, not writes) and the binlog
  position and executed GTIDs of ``performance_schema.log_status`` read just before and just after
  the snapshot starts; the two must be equal (no transaction was written meanwhile), otherwise it
  tries again a few times. Needs ``BACKUP_ADMIN`` (and ``SELECT`` on ``performance_schema``). A
  transaction already in the binlog but still committing in the storage engine while both reads
  and the snapshot start happen would escape it; ``FLUSH TABLES WITH READ LOCK`` waits for such
  commits and is exact (``prefer_flush=True``).
* MySQL, fallback: ``FLUSH TABLES WITH READ LOCK`` while the snapshot starts and the position is
  read, released at once — writes wait for that moment only. Needs ``RELOAD`` (and ``LOCK TABLES``).

When neither MySQL way is permitted, ``AccessDeniedError`` names both privileges.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from sluice.binlog.position import Checkpoint
from sluice.cdc.schema.model import TableSchema
from sluice.cdc.table_read.reader import binlog_position, snapshot_position
from sluice.cdc.textvalues import convert_rows, row_converter, select_list, text_converters
from sluice.errors import AccessDeniedError, ServerError
from sluice.io.connection import Connection

__all__ = ["ConsistentRead", "consistent_scan"]

log = logging.getLogger(__name__)

_DENIED = frozenset({1044, 1045, 1142, 1227, 1370})  # access denied / command denied / need privilege


@dataclass(frozen=True, slots=True)
class ConsistentRead:
    """All rows of ``db.table`` as of ``position``: the stream applies every change from there on."""

    db: str
    table: str
    position: Checkpoint
    rows: list[dict[str, Any]]
    method: str  # "binlog_snapshot", "backup_lock" or "flush_tables"


def _log_status(conn: Connection) -> Checkpoint:
    text = conn.query("SELECT LOCAL FROM performance_schema.log_status").rows[0][0] or "{}"
    local = json.loads(text)
    binlog = local.get("binary_log_file"), local.get("binary_log_position")
    gtid = (local.get("gtid_executed") or "").replace("\n", "")
    if not binlog[0] or binlog[1] is None:
        raise ServerError(0, "HY000", "performance_schema.log_status reports no binary log position")
    return Checkpoint(str(binlog[0]), int(binlog[1]), gtid or None)


def _backup_lock_start(conn: Connection, attempts: int) -> Checkpoint | None:
    conn.execute("LOCK INSTANCE FOR BACKUP")
    try:
        for _ in range(attempts):
            before = _log_status(conn)
            conn.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            after = _log_status(conn)
            if before == after:
                return before
            conn.execute("ROLLBACK")
        return None
    finally:
        conn.execute("UNLOCK INSTANCE")


def _flush_tables_start(conn: Connection) -> Checkpoint:
    conn.execute("FLUSH TABLES WITH READ LOCK")
    try:
        conn.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        return binlog_position(conn)
    finally:
        conn.execute("UNLOCK TABLES")


def _mysql_start(conn: Connection, attempts: int, prefer_flush: bool) -> tuple[Checkpoint, str]:
    denied: list[str] = []
    try:
        position = None if prefer_flush else _backup_lock_start(conn, attempts)
        if position is not None:
            return position, "backup_lock"
        if not prefer_flush:
            log.info("writes moved the binlog while the snapshot started %d times; using FLUSH TABLES WITH READ LOCK",
                     attempts)
    except ServerError as exc:
        if exc.errno not in _DENIED:
            raise
        denied.append(f"LOCK INSTANCE FOR BACKUP / performance_schema.log_status: {exc}")
    try:
        return _flush_tables_start(conn), "flush_tables"
    except ServerError as exc:
        if exc.errno not in _DENIED:
            raise
        denied.append(f"FLUSH TABLES WITH READ LOCK: {exc}")
    raise AccessDeniedError(
        1227, "42000",
        f"a table without a primary or NOT NULL unique key is read in one consistent scan, which on MySQL needs "
        f"the privilege BACKUP_ADMIN (for LOCK INSTANCE FOR BACKUP and performance_schema.log_status) or RELOAD "
        f"(for FLUSH TABLES WITH READ LOCK); the user {conn.config.user!r} has neither ({'; '.join(denied)}). "
        "Grant one of them, or give the table a primary key",
    )


def consistent_scan(conn: Connection, schema: TableSchema, *, attempts: int = 5,
                    prefer_flush: bool = False) -> ConsistentRead:
    """Every row of ``schema``'s table in one consistent snapshot, with its binlog position.

    ``conn`` must be in the session state of ``sluice.cdc.table_read.reader.prepare_session``.
    ``attempts`` bounds the MySQL backup-lock tries before falling back to FLUSH TABLES;
    ``prefer_flush`` goes to FLUSH TABLES WITH READ LOCK at once (MySQL).
    """
    flavor = conn.flavor
    converters = text_converters(schema, flavor)
    if conn.is_mariadb:
        conn.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        method = "binlog_snapshot"
        try:
            position = snapshot_position(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    else:
        position, method = _mysql_start(conn, attempts, prefer_flush)
    try:
        result = conn.query(f"SELECT {select_list(schema)} FROM `{schema.db.replace('`', '``')}`."
                            f"`{schema.name.replace('`', '``')}`")
    finally:
        conn.execute("COMMIT")
    names = schema.names
    rows = [dict(zip(names, values, strict=True))
            for values in convert_rows(schema, converters, result.rows, row_converter(converters))]
    return ConsistentRead(schema.db, schema.name, position, rows, method)
