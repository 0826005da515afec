"""Decoders for statement events: QUERY (with its status variables), MariaDB's
QUERY_COMPRESSED, XID, XA_PREPARE, INTVAR, RAND, USER_VAR, ROWS_QUERY and MariaDB's ANNOTATE_ROWS.

QUERY post-header (statement_events.h): thread id u32, exec time u32, schema length u8, error
code u16, status-variables length u16; then the status variables (code byte + fixed or
length-prefixed value; a reader stops at the first code it does not know, as the server does),
the schema name and a NUL, and the statement to the end of the body. MariaDB's compressed form
stores the statement as ``0x80 | n`` + n-byte big-endian length + zlib stream
(``binlog_buf_compress`` in MariaDB's sql/log_event.cc).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sluice.binlog.decoders._reader import U16, U32, U64, need, packed_int, take
from sluice.binlog.events import (
    AnnotateRowsEvent,
    IntvarEvent,
    QueryEvent,
    RandEvent,
    RowsQueryEvent,
    UserVarEvent,
    XaPrepareEvent,
    XidEvent,
)
from sluice.binlog.header import EventHeader
from sluice.binlog.redact import redact_credentials

if TYPE_CHECKING:
    from sluice.binlog.decoders.context import DecodeContext

Body = bytes | memoryview
_QUERY_POST = struct.Struct("<IIBHH")
_U16X3 = struct.Struct("<HHH")
_XA = struct.Struct("<BiII")
_U64X2 = struct.Struct("<QQ")
_OVER_MAX_DBS_IN_EVENT_MTS = 254
# MariaDB Q_GTID_FLAGS3 bits that add an 8-byte sequence number (sql/log_event.h).
_FL_COMMIT_ALTER_E1 = 0x04
_FL_ROLLBACK_ALTER_E1 = 0x08


def _short_str(body: Body, pos: int, what: str) -> tuple[str, int]:
    n = body[pos]
    raw, pos = take(body, pos + 1, n, what)
    return raw.decode("utf-8", "surrogateescape"), pos


# Readers of one status variable: (body, pos after its code, end of the variables, fields) -> the
# position after it. Names and layouts from the server's Q_* codes (statement_events.h, MariaDB's
# sql/log_event.h).
_StatusReader = Callable[[Body, int, int, dict[str, Any]], int]


def _fixed(field: str, layout: struct.Struct) -> _StatusReader:
    def read(body: Body, pos: int, _end: int, out: dict[str, Any]) -> int:
        out[field] = layout.unpack_from(body, pos)[0]
        return pos + layout.size
    return read


def _byte(field: str) -> _StatusReader:
    def read(body: Body, pos: int, _end: int, out: dict[str, Any]) -> int:
        out[field] = body[pos]
        return pos + 1
    return read


def _uint24(field: str) -> _StatusReader:
    def read(body: Body, pos: int, _end: int, out: dict[str, Any]) -> int:
        need(body, pos, 3, field)
        out[field] = int.from_bytes(body[pos : pos + 3], "little")
        return pos + 3
    return read


def _catalog(nul: bool) -> _StatusReader:
    """Q_CATALOG_CODE (5.0.0-5.0.3: length, text, NUL) and Q_CATALOG_NZ_CODE (no NUL)."""
    def read(body: Body, pos: int, _end: int, out: dict[str, Any]) -> int:
        out["catalog"], pos = _short_str(body, pos, "catalog")
        return pos + 1 if nul else pos
    return read


def _auto_increment(body: Body, pos: int, _end: int, out: dict[str, Any]) -> int:
    out["auto_increment_increment"], out["auto_increment_offset"] = (
        U16.unpack_from(body, pos)[0], U16.unpack_from(body, pos + 2)[0])
    return pos + 4


def _charset(body: Body, pos: int, _end: int, out: dict[str, Any]) -> int:
    """Client charset, collation_connection, collation_server."""
    out["charset"] = _U16X3.unpack_from(body, pos)
    return pos + 6


def _time_zone(body: Body, pos: int, _end: int, out: dict[str, Any]) -> int:
    out["time_zone"], pos = _short_str(body, pos, "time zone")
    return pos


def _master_data_written(body: Body, pos: int, _end: int, _out: dict[str, Any]) -> int:
    need(body, pos, 4, "status variable")
    return pos + 4


def _invoker(body: Body, pos: int, _end: int, out: dict[str, Any]) -> int:
    """User and host, each length-prefixed."""
    user, pos = _short_str(body, pos, "invoker user")
    host, pos = _short_str(body, pos, "invoker host")
    out["invoker"] = (user, host)
    return pos


def _updated_db_names(body: Body, pos: int, end: int, out: dict[str, Any]) -> int:
    """A count, then as many NUL-terminated names (none past OVER_MAX_DBS_IN_EVENT_MTS)."""
    count = body[pos]
    pos += 1
    names: list[str] = []
    if count != _OVER_MAX_DBS_IN_EVENT_MTS:
        for _ in range(count):
            raw = bytes(body[pos:end])
            i = raw.find(b"\0")
            if i < 0:
                raise ValueError("updated database name without NUL")
            names.append(raw[:i].decode("utf-8", "surrogateescape"))
            pos += i + 1
    out["updated_db_names"] = tuple(names)
    return pos


def _gtid_flags3(body: Body, pos: int, _end: int, out: dict[str, Any]) -> int:
    """MariaDB's flags, and the sequence number of a split ALTER's commit or rollback."""
    flags3 = body[pos]
    pos += 1
    out["gtid_flags3"] = flags3
    if flags3 & (_FL_COMMIT_ALTER_E1 | _FL_ROLLBACK_ALTER_E1):
        out["sa_seq_no"] = U64.unpack_from(body, pos)[0]
        pos += 8
    return pos


def _character_set_collations(body: Body, pos: int, _end: int, out: dict[str, Any]) -> int:
    """MariaDB 11.2+: a count, then (charset, collation) u16 pairs."""
    count = body[pos]
    pos += 1
    need(body, pos, 4 * count, "character set collations")
    out["character_set_collations"] = tuple(
        (U16.unpack_from(body, pos + 4 * i)[0], U16.unpack_from(body, pos + 4 * i + 2)[0]) for i in range(count))
    return pos + 4 * count


_STATUS_READERS: dict[int, _StatusReader] = {
    0: _fixed("flags2", U32),  # Q_FLAGS2_CODE
    1: _fixed("sql_mode", U64),  # Q_SQL_MODE_CODE
    2: _catalog(nul=True),  # Q_CATALOG_CODE
    3: _auto_increment,  # Q_AUTO_INCREMENT
    4: _charset,  # Q_CHARSET_CODE
    5: _time_zone,  # Q_TIME_ZONE_CODE
    6: _catalog(nul=False),  # Q_CATALOG_NZ_CODE
    7: _fixed("lc_time_names", U16),  # Q_LC_TIME_NAMES_CODE
    8: _fixed("charset_database", U16),  # Q_CHARSET_DATABASE_CODE
    9: _fixed("table_map_for_update", U64),  # Q_TABLE_MAP_FOR_UPDATE_CODE
    10: _master_data_written,  # Q_MASTER_DATA_WRITTEN_CODE
    11: _invoker,  # Q_INVOKER
    12: _updated_db_names,  # Q_UPDATED_DB_NAMES
    13: _uint24("microseconds"),  # Q_MICROSECONDS
    16: _byte("explicit_defaults_for_timestamp"),  # Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP
    17: _fixed("ddl_xid", U64),  # Q_DDL_LOGGED_WITH_XID
    18: _fixed("default_collation_for_utf8mb4", U16),  # Q_DEFAULT_COLLATION_FOR_UTF8MB4
    19: _byte("sql_require_primary_key"),  # Q_SQL_REQUIRE_PRIMARY_KEY
    20: _byte("default_table_encryption"),  # Q_DEFAULT_TABLE_ENCRYPTION
    128: _uint24("hrnow"),  # MariaDB Q_HRNOW: microseconds of the statement start
    129: _fixed("xid", U64),  # MariaDB Q_XID
    130: _gtid_flags3,  # MariaDB Q_GTID_FLAGS3
    131: _character_set_collations,  # MariaDB Q_CHARACTER_SET_COLLATIONS
}


def parse_status_vars(body: Body, pos: int, end: int) -> dict[str, Any]:
    """QUERY status variables in ``body[pos:end]`` as ``QueryEvent`` field values. A code with no
    reader ends the parse, as in the server: the rest is kept as ``unparsed_status``."""
    out: dict[str, Any] = {}
    while pos < end:
        reader = _STATUS_READERS.get(body[pos])
        if reader is None:
            out["unparsed_status"] = bytes(body[pos:end])
            return out
        pos = reader(body, pos + 1, end, out)
    if pos != end:
        raise ValueError("status variables run past their declared length")
    return out


def inflate_mariadb(body: Body, pos: int, what: str) -> bytes:
    """Inflate a MariaDB ``binlog_buf_compress`` block that runs to the end of ``body``."""
    head = body[pos]
    if head & 0xE0 != 0x80:
        raise ValueError(f"{what}: compressed block header 0x{head:02x} lacks the 0x80 marker")
    lenlen = head & 0x07
    if not 1 <= lenlen <= 4:
        raise ValueError(f"{what}: compressed length field of {lenlen} bytes")
    need(body, pos + 1, lenlen, what)
    size = int.from_bytes(body[pos + 1 : pos + 1 + lenlen], "big")
    d = zlib.decompressobj()
    out = d.decompress(body[pos + 1 + lenlen :], size + 1)
    if len(out) != size or not d.eof or d.unused_data:
        raise ValueError(f"{what}: inflated to {len(out)} bytes, header says {size}")
    return out


def _decode_query(header: EventHeader, body: Body, p: DecodeContext, compressed: bool) -> QueryEvent:
    thread_id, exec_time, db_len, error_code, status_len = _QUERY_POST.unpack_from(body, 0)
    start = p.post_header_len(header.type_code, 13)
    need(body, start, status_len, "status variables")
    status = parse_status_vars(body, start, start + status_len) if status_len else {}
    pos = start + status_len
    schema, pos = take(body, pos, db_len, "schema name")
    if body[pos] != 0:
        raise ValueError("schema name is not followed by NUL")
    pos += 1
    query = inflate_mariadb(body, pos, "compressed query") if compressed else bytes(body[pos:])
    query = redact_credentials(query)
    return QueryEvent(
        header, thread_id, exec_time, error_code, schema.decode("utf-8", "surrogateescape"), query,
        compressed=compressed, **status,
    )


def decode_query(header: EventHeader, body: Body, p: DecodeContext) -> QueryEvent:
    """QUERY_EVENT body -> ``QueryEvent`` (credentials in the statement redacted)."""
    return _decode_query(header, body, p, False)


def decode_query_compressed(header: EventHeader, body: Body, p: DecodeContext) -> QueryEvent:
    """MariaDB QUERY_COMPRESSED_EVENT body -> ``QueryEvent`` with the statement inflated."""
    return _decode_query(header, body, p, True)


def decode_xid(header: EventHeader, body: Body, p: DecodeContext) -> XidEvent:
    """XID_EVENT body (the u64 transaction id) -> ``XidEvent``."""
    if len(body) != 8:
        raise ValueError(f"XID body of {len(body)} bytes, expected 8")
    return XidEvent(header, U64.unpack_from(body, 0)[0])


def decode_xa_prepare(header: EventHeader, body: Body, p: DecodeContext) -> XaPrepareEvent:
    """XA_PREPARE_LOG_EVENT body (one-phase flag, format id, gtrid, bqual) -> ``XaPrepareEvent``."""
    one_phase, format_id, gl, bl = _XA.unpack_from(body, 0)
    if gl > 64 or bl > 64:
        raise ValueError(f"XA id lengths {gl}+{bl} exceed 64 bytes each")
    gtrid, pos = take(body, 13, gl, "XA gtrid")
    bqual, pos = take(body, pos, bl, "XA bqual")
    if pos != len(body):
        raise ValueError(f"{len(body) - pos} bytes after the XA id")
    return XaPrepareEvent(header, bool(one_phase), format_id, gtrid, bqual)


def decode_intvar(header: EventHeader, body: Body, p: DecodeContext) -> IntvarEvent:
    """INTVAR_EVENT body (kind u8, value u64) -> ``IntvarEvent``."""
    if len(body) != 9:
        raise ValueError(f"INTVAR body of {len(body)} bytes, expected 9")
    return IntvarEvent(header, body[0], U64.unpack_from(body, 1)[0])


def decode_rand(header: EventHeader, body: Body, p: DecodeContext) -> RandEvent:
    """RAND_EVENT body (the two u64 seeds) -> ``RandEvent``."""
    if len(body) != 16:
        raise ValueError(f"RAND body of {len(body)} bytes, expected 16")
    s1, s2 = _U64X2.unpack_from(body, 0)
    return RandEvent(header, s1, s2)


def decode_user_var(header: EventHeader, body: Body, p: DecodeContext) -> UserVarEvent:
    """USER_VAR_EVENT body (name, NULL flag, type, charset, value, flags) -> ``UserVarEvent``."""
    (n,) = U32.unpack_from(body, 0)
    name, pos = take(body, 4, n, "user variable name")
    is_null = body[pos]
    pos += 1
    sname = name.decode("utf-8", "surrogateescape")
    if is_null:
        if pos != len(body):
            raise ValueError("bytes after a NULL user variable")
        return UserVarEvent(header, sname, True)
    vtype = body[pos]
    (charset,) = U32.unpack_from(body, pos + 1)
    (vlen,) = U32.unpack_from(body, pos + 5)
    value, pos = take(body, pos + 9, vlen, "user variable value")
    flags = None
    if pos < len(body):
        flags = body[pos]
        pos += 1
    if pos != len(body):
        raise ValueError(f"{len(body) - pos} bytes after the user variable")
    return UserVarEvent(header, sname, False, vtype, charset, value, flags)


def decode_rows_query(header: EventHeader, body: Body, p: DecodeContext) -> RowsQueryEvent:
    """ROWS_QUERY_LOG_EVENT body -> ``RowsQueryEvent`` (credentials in the statement redacted)."""
    # The first byte holds the length modulo 256 only; the text runs to the end (log_event.cc).
    need(body, 0, 1, "rows query length byte")
    return RowsQueryEvent(header, redact_credentials(bytes(body[1:])))


def decode_annotate_rows(header: EventHeader, body: Body, p: DecodeContext) -> AnnotateRowsEvent:
    """MariaDB ANNOTATE_ROWS_EVENT body (the statement text) -> ``AnnotateRowsEvent``."""
    return AnnotateRowsEvent(header, bytes(body))


__all__ = ["inflate_mariadb", "packed_int"]
