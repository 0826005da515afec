"""Planning and reading snapshot chunks over a client ``Connection``, between binlog watermarks.

``plan_table`` chooses a table's snapshot key (primary key, else a NOT NULL unique key read from
``information_schema.STATISTICS``), estimates its rows (``information_schema.TABLES.TABLE_ROWS``) and
splits it: a single integer key by even ranges between ``MIN`` and ``MAX``, any other key by walking
the key in the server's order (``SELECT key ... WHERE (key) >= (last) ORDER BY key LIMIT 1 OFFSET n``),
so string keys are cut by their collation, never by Python. ``read_chunk`` records the low
watermark, selects the chunk's rows in key order with the text protocol, converts them with
``sluice.cdc.textvalues`` into the values the binlog decoder produces, and records the high
watermark (``SHOW BINARY LOG STATUS`` / ``SHOW MASTER STATUS`` after the ``SELECT``);
``read_chunk_text`` leaves the rows as text and ``read_chunk_raw`` as undecoded row payloads, for
readers that convert whole columns at once (``sluice.spark.snapshot.text_rows``). On MariaDB the
``SELECT`` runs in a ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` whose binlog position
(``binlog_snapshot_file`` / ``binlog_snapshot_position``) is the exact low watermark. MySQL has no
such status: its binlog position moves when a transaction is written to the binlog, just before
its storage-engine commit, so the low watermark is read ``settle`` seconds before the snapshot
starts, which lets transactions already in the binlog finish committing (reconciliation is correct
for any low watermark at or before the ``SELECT``). The user needs ``SELECT`` on the tables and
``REPLICATION CLIENT`` (the binlog status). Both watermarks name the server they were read on
(``server_identity``, read once per chunk on the chunk's connection); a low watermark taken ahead
on another server (the address moved since) is not used: the chunk takes its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from sluice.binlog.position import Checkpoint, SourceIdentity
from sluice.cdc.schema.model import TableSchema
from sluice.cdc.table_read.chunks import (
    Chunk,
    ChunkRead,
    boundary_chunks,
    choose_key,
    chunk_predicate,
    chunk_rows_for,
    integer_chunks,
    is_integer_key,
    key_columns,
    order_by,
)
from sluice.cdc.textvalues import convert_rows, row_converter, select_list, text_converter, text_converters
from sluice.errors import ConfigError
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status, server_identity
from sluice.wire.commands import com_query
from sluice.wire.resultset import RawResultSet, RawResultSetReader

__all__ = ["SESSION_SETTINGS", "TABLE_CHANGED", "LowMark", "TablePlan", "binlog_position", "low_mark", "plan_table",
           "prepare_session", "read_chunk", "read_chunk_raw", "read_chunk_text", "snapshot_position",
           "table_rows_estimate", "unique_keys"]

_Result = TypeVar("_Result")

#: Session settings the text values are read under (see ``sluice.cdc.textvalues``).
SESSION_SETTINGS = ("SET NAMES utf8mb4", "SET time_zone = '+00:00'", "SET SESSION sql_mode = ''")

#: Server errors that say a table is not what its plan was made for (renamed, dropped or altered
#: since): ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR, ER_WRONG_VALUE_COUNT. Its read is planned again.
TABLE_CHANGED = frozenset({1146, 1054, 1136})


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def prepare_session(conn: Connection) -> None:
    """Put ``conn`` in the session state the snapshot reads in (utf8mb4, UTC, plain sql_mode)."""
    for statement in SESSION_SETTINGS:
        conn.execute(statement)


@dataclass(frozen=True, slots=True)
class TablePlan:
    """A table's snapshot plan: its schema, key (``()`` = no usable key) and chunks."""

    schema: TableSchema
    key: tuple[str, ...]
    chunks: tuple[Chunk, ...]
    rows_estimate: int


def unique_keys(conn: Connection, db: str, table: str) -> list[tuple[str, ...]]:
    """Column lists of the table's UNIQUE indexes other than the primary key, by index name."""
    rows = conn.query(
        "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = "
        f"{_string(db)} AND TABLE_NAME = {_string(table)} AND NON_UNIQUE = 0 AND INDEX_NAME <> 'PRIMARY' "
        "AND SUB_PART IS NULL ORDER BY INDEX_NAME, SEQ_IN_INDEX"
    ).rows
    keys: dict[str, list[str]] = {}
    for index, column in rows:
        keys.setdefault(index or "", []).append(column or "")
    return [tuple(v) for v in keys.values()]


def table_rows_estimate(conn: Connection, db: str, table: str) -> int:
    """The server's row-count estimate of a table (``information_schema.TABLES.TABLE_ROWS``)."""
    return _table_statistics(conn, db, table)[0]


def _table_statistics(conn: Connection, db: str, table: str) -> tuple[int, int]:
    """The server's estimates of a table's rows and of their average size in bytes (0 when unknown).
    MySQL 8.0+ answers ``information_schema.TABLES`` from a cache kept for a day
    (``information_schema_stats_expiry``): the session asks for the storage engine's own figures."""
    if not conn.is_mariadb and conn.server_version_tuple >= (8, 0, 3):
        conn.execute("SET SESSION information_schema_stats_expiry = 0")
    rows = conn.query(
        f"SELECT TABLE_ROWS, AVG_ROW_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = {_string(db)} "
        f"AND TABLE_NAME = {_string(table)}"
    ).rows
    return (int(rows[0][0] or 0), int(rows[0][1] or 0)) if rows else (0, 0)


def _key_values(conn: Connection, schema: TableSchema, key: tuple[str, ...], text: tuple[str | None, ...]) -> tuple:
    flavor = conn.flavor
    out = []
    for column, value in zip(key_columns(schema, key), text, strict=True):
        convert = text_converter(column, flavor)
        out.append(value if convert is None or value is None else convert(value))
    return tuple(out)


def plan_table(conn: Connection, schema: TableSchema, chunk_rows: int | None = None, *,
               merged: bool = False) -> TablePlan:
    """Choose the key of ``schema`` and cut it into chunks of about ``chunk_rows`` rows, by default
    ``chunk_rows_for`` the table's average row (``merged``: into a mirror that holds rows; ``conn``
    in the session state of ``prepare_session``, whose plain sql_mode the quoted names are written for)."""
    if chunk_rows is not None and chunk_rows < 1:
        raise ConfigError(f"the snapshot chunk size must be at least 1 row, found {chunk_rows}")
    db, name = schema.db, schema.name
    key = choose_key(schema, unique_keys(conn, db, name))
    estimate, row_bytes = _table_statistics(conn, db, name)
    if chunk_rows is None:
        chunk_rows = chunk_rows_for(row_bytes, merged=merged)
    if not key:
        return TablePlan(schema, (), (), estimate)
    table = f"{_quote(db)}.{_quote(name)}"
    if is_integer_key(schema, key):
        k = _quote(key[0])
        low, high = conn.query(f"SELECT MIN({k}), MAX({k}) FROM {table}").rows[0]
        chunks = integer_chunks(db, name, key[0], None if low is None else int(low),
                                None if high is None else int(high), estimate, chunk_rows)
        return TablePlan(schema, key, tuple(chunks), estimate)
    columns = ", ".join(_quote(k) for k in key)
    boundaries: list[tuple[Any, ...]] = []
    while True:
        where = ""
        if boundaries:
            where = " WHERE " + chunk_predicate(schema, Chunk(db, name, 0, key, boundaries[-1], None))
        rows = conn.query(f"SELECT {columns} FROM {table}{where} ORDER BY {columns} LIMIT 1 OFFSET {chunk_rows}").rows
        if not rows:
            break
        boundaries.append(_key_values(conn, schema, key, rows[0]))
    return TablePlan(schema, key, tuple(boundary_chunks(db, name, key, boundaries)), estimate)


def binlog_position(conn: Connection, source: SourceIdentity | None = None) -> Checkpoint:
    """The end of the server's binlog now, with its executed GTIDs as the server reports them (read
    apart from the position: ``sluice.cdc.table_read.watermarks`` makes them exact), on ``source``."""
    status = server_binlog_status(conn)
    return Checkpoint(status.file, status.pos, status.gtid_executed or None, source)


def snapshot_position(conn: Connection) -> Checkpoint:
    """MariaDB: the binlog position of the consistent snapshot the session's transaction started."""
    values = {str(r[0]).lower(): r[1] for r in conn.query("SHOW STATUS LIKE 'binlog_snapshot_%'").rows}
    file, pos = values.get("binlog_snapshot_file"), values.get("binlog_snapshot_position")
    if not file or pos is None:
        raise ConfigError(
            f"the server at {conn.config.redacted()} reports no binlog_snapshot_file/position: "
            "a consistent snapshot needs the binary log (--log-bin)"
        )
    return Checkpoint(str(file), int(pos), None)


def _query_raw(conn: Connection, sql: str) -> RawResultSet:
    conn.send_command(com_query(sql))
    result = RawResultSetReader(conn.capabilities).read_blocks(conn.read_rows)
    if isinstance(result, RawResultSet):
        return result
    return RawResultSet((), [])


def low_mark(conn: Connection, source: SourceIdentity | None = None) -> LowMark:
    """A low watermark taken now on ``source`` (the server ``conn`` reaches), ahead of the chunk that
    will use it (MySQL): the binlog's end, then the server's clock, so that the chunk's task waits
    only for what is left of the settle."""
    low = binlog_position(conn, source)
    return LowMark(low, _server_seconds(conn))


@dataclass(frozen=True, slots=True)
class LowMark:
    """A low watermark and the server's clock (seconds) just after it was read."""

    low: Checkpoint
    at: float

    def to_json(self) -> dict[str, Any]:
        """The mark as a JSON object (checkpoint and server clock)."""
        return {"low": self.low.to_json(), "at": self.at}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LowMark:
        """Inverse of ``to_json``."""
        return cls(Checkpoint.from_json(data["low"]), float(data["at"]))


def _server_seconds(conn: Connection) -> float:
    return float(str(conn.query("SELECT UNIX_TIMESTAMP(NOW(6))").rows[0][0]))


def _read(conn: Connection, plan: TablePlan, chunk: Chunk, settle: float,
          query: Callable[[str], _Result], early: LowMark | None = None) -> tuple[Checkpoint, Checkpoint, _Result]:
    schema = plan.schema
    sql = (f"SELECT {select_list(schema)} FROM {_quote(schema.db)}.{_quote(schema.name)} "
           f"WHERE {chunk_predicate(schema, chunk)} ORDER BY {order_by(chunk)}")
    source = server_identity(conn)
    if early is not None and early.low.source is not None and not early.low.source.same_server(source):
        early = None  # taken on the server the address reached before: its position means nothing here
    if conn.is_mariadb:
        conn.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        try:
            low = snapshot_position(conn).on(source)
            result = query(sql)
        finally:
            conn.execute("COMMIT")
    else:
        # MySQL writes a transaction to the binlog before its engine commit: a SELECT started right
        # after the low watermark may not see the last transactions before it. Wait ``settle``
        # seconds of the server's clock after the low watermark (a mark taken ahead by the driver
        # has usually waited them out already).
        if early is None:
            low = binlog_position(conn, source)
            if settle > 0:
                time.sleep(settle)
        else:
            low = early.low
            left = early.at + settle - _server_seconds(conn)
            if left > 0:
                time.sleep(left)
        result = query(sql)
    high = binlog_position(conn, source)
    return low, high, result


def read_chunk_text(conn: Connection, plan: TablePlan, chunk: Chunk, *, settle: float = 0.2,
                    early: LowMark | None = None) -> tuple[Checkpoint, Checkpoint, list[tuple[str | None, ...]]]:
    """The low watermark, the high watermark and the text rows of ``chunk`` in key order, as the
    server printed them (``select_list`` order; convert with ``sluice.cdc.textvalues``).

    ``conn`` must be in the session state of ``prepare_session``. ``settle`` (MySQL only) is how
    long the low watermark is read before the ``SELECT``'s snapshot starts; ``early``: a low
    watermark taken before (``low_mark``), MySQL only.
    """
    low, high, result = _read(conn, plan, chunk, settle, conn.query, early)
    return low, high, result.rows


def read_chunk_raw(conn: Connection, plan: TablePlan, chunk: Chunk, *, settle: float = 0.2,
                   early: LowMark | None = None) -> tuple[Checkpoint, Checkpoint, RawResultSet]:
    """``read_chunk_text`` with the rows left as their undecoded text-row payloads."""
    return _read(conn, plan, chunk, settle, partial(_query_raw, conn), early)


def read_chunk(conn: Connection, plan: TablePlan, chunk: Chunk, *, settle: float = 0.2,
               early: LowMark | None = None) -> ChunkRead:
    """The rows of ``chunk`` in key order between a low and a high watermark, as decoded values.

    ``conn`` must be in the session state of ``prepare_session``. ``settle`` (MySQL only) is how
    long the low watermark is read before the ``SELECT``'s snapshot starts.
    """
    schema = plan.schema
    converters = text_converters(schema, conn.flavor)
    low, high, text_rows = read_chunk_text(conn, plan, chunk, settle=settle, early=early)
    names = schema.names
    rows = [dict(zip(names, values, strict=True))
            for values in convert_rows(schema, converters, text_rows, row_converter(converters))]
    return ChunkRead(chunk, low, high, rows)
