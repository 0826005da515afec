"""Payloads of the client commands sluice sends.

This module owns the byte layout of COM_QUERY, COM_PING, COM_QUIT, COM_REGISTER_SLAVE (how a replica
announces itself), COM_BINLOG_DUMP (stream from a file and a 4-byte position; MariaDB also starts
GTID streams with it after setting ``@slave_connect_state``) and MySQL's COM_BINLOG_DUMP_GTID (a
file, an 8-byte position and an encoded GTID set). Each builder returns the whole payload, command
byte first; framing is ``sluice.wire.packet``'s job. See ``sql/rpl_source.cc`` / ``sql/sql_repl.cc``.
"""

from __future__ import annotations

import struct

from sluice.wire.constants import Command

_REGISTER_SLAVE_ID = struct.Struct("<BI")  # command, server_id
_REGISTER_SLAVE_TAIL = struct.Struct("<HII")  # port, replication rank, master id
_BINLOG_DUMP = struct.Struct("<BIHI")  # command, position, flags, server_id
_BINLOG_DUMP_GTID = struct.Struct("<BHII")  # command, flags, server_id, filename length
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")


def com_query(sql: str | bytes) -> bytes:
    """COM_QUERY with the statement text (UTF-8)."""
    text = sql.encode("utf-8") if isinstance(sql, str) else sql
    return bytes((Command.COM_QUERY,)) + text


def com_ping() -> bytes:
    """COM_PING: ask the server whether it is alive (it answers OK)."""
    return bytes((Command.COM_PING,))


def com_quit() -> bytes:
    """COM_QUIT: tell the server the client closes the connection."""
    return bytes((Command.COM_QUIT,))


def _short_string(value: str, what: str) -> bytes:
    raw = value.encode("utf-8")
    if len(raw) > 255:
        raise ValueError(f"COM_REGISTER_SLAVE {what} is limited to 255 bytes, got {len(raw)}")
    return bytes((len(raw),)) + raw


def com_register_slave(server_id: int, host: str = "", user: str = "", password: str = "",
                       port: int = 0) -> bytes:
    """COM_REGISTER_SLAVE: what ``SHOW REPLICAS`` shows about this replica."""
    return b"".join((
        _REGISTER_SLAVE_ID.pack(Command.COM_REGISTER_SLAVE, server_id),
        _short_string(host, "host"),
        _short_string(user, "user"),
        _short_string(password, "password"),
        _REGISTER_SLAVE_TAIL.pack(port, 0, 0),
    ))


def com_binlog_dump(position: int, flags: int, server_id: int, filename: str) -> bytes:
    """COM_BINLOG_DUMP: stream ``filename`` from ``position`` (a 4-byte field)."""
    if not 0 <= position <= 0xFFFFFFFF:
        raise ValueError(
            f"COM_BINLOG_DUMP carries a 4-byte position, got {position}; use COM_BINLOG_DUMP_GTID "
            "for positions beyond 4 GiB"
        )
    return _BINLOG_DUMP.pack(Command.COM_BINLOG_DUMP, position, flags, server_id) + filename.encode("utf-8")


def com_binlog_dump_gtid(flags: int, server_id: int, filename: str, position: int,
                         encoded_gtid_set: bytes) -> bytes:
    """COM_BINLOG_DUMP_GTID (MySQL): ``encoded_gtid_set`` is the binary GTID set
    (``Gtid_set::encode``); the server sends what is not in it."""
    name = filename.encode("utf-8")
    return b"".join((
        _BINLOG_DUMP_GTID.pack(Command.COM_BINLOG_DUMP_GTID, flags, server_id, len(name)),
        name,
        _U64.pack(position),
        _U32.pack(len(encoded_gtid_set)),
        encoded_gtid_set,
    ))


__all__ = [
    "com_binlog_dump",
    "com_binlog_dump_gtid",
    "com_ping",
    "com_query",
    "com_quit",
    "com_register_slave",
]
