"""Decoders for GTID events: MySQL GTID / ANONYMOUS_GTID / GTID_TAGGED and PREVIOUS_GTIDS,
MariaDB GTID (162) and GTID_LIST (163).

MySQL untagged GTID (libs/mysql/binlog/event/control_events.h ``Gtid_event``): flags u8, sid
16 bytes, gno u64, then optional parts that newer servers append: logical-clock typecode 2 with
last_committed and sequence_number (u64 each), immediate commit timestamp (7 bytes; bit 55 set
means a 7-byte original timestamp follows), transaction length (packed), immediate server
version (u32; bit 31 set means an original version u32 follows), commit group ticket (u64).
GTID_TAGGED uses the MySQL serialization library: a varlen format version, the message size
(counting from the first byte), the last non-ignorable field id, then ``field id, value`` pairs.
MariaDB GTID (sql/log_event.cc ``Gtid_log_event``): seq_no u64, domain u32, flags u8, then a
commit id or an XA id, an optional ``flags_extra`` part, zero padding up to 19 bytes.
"""

from __future__ import annotations

import struct
import uuid
from typing import TYPE_CHECKING, Any

from sluice.binlog import events as ev
from sluice.binlog.decoders._reader import (
    U32,
    U64,
    packed_int,
    read_varlen,
    read_varlen_signed,
    take,
)
from sluice.binlog.gtid import MariadbGtid, MysqlGtidSet
from sluice.binlog.header import EventHeader

if TYPE_CHECKING:
    from sluice.binlog.decoders.context import DecodeContext

Body = bytes | memoryview
_GTID_HEAD = struct.Struct("<B16sQ")
_U64X2 = struct.Struct("<QQ")
_MARIA_HEAD = struct.Struct("<QIB")
_MARIA_LIST_ITEM = struct.Struct("<IIQ")
_LOGICAL_TIMESTAMP_TYPECODE = 2
_TS_ORIGINAL_BIT = 1 << 55
_VERSION_ORIGINAL_BIT = 1 << 31


def decode_gtid(header: EventHeader, body: Body, p: DecodeContext) -> ev.GtidEvent:
    """GTID_LOG_EVENT / ANONYMOUS_GTID_LOG_EVENT body, with the optional parts present -> ``GtidEvent``."""
    flags, sid, gno = _GTID_HEAD.unpack_from(body, 0)
    pos, end = 25, len(body)
    extra: dict[str, int] = {}
    if pos < end and body[pos] == _LOGICAL_TIMESTAMP_TYPECODE:
        extra["last_committed"], extra["sequence_number"] = _U64X2.unpack_from(body, pos + 1)
        pos += 17
        if pos + 7 <= end:
            ts = int.from_bytes(body[pos : pos + 7], "little")
            pos += 7
            if ts & _TS_ORIGINAL_BIT:
                ts &= ~_TS_ORIGINAL_BIT
                if pos + 7 > end:
                    raise ValueError("GTID event ends inside the original commit timestamp")
                extra["original_commit_timestamp"] = int.from_bytes(body[pos : pos + 7], "little")
                pos += 7
            else:
                extra["original_commit_timestamp"] = ts
            extra["immediate_commit_timestamp"] = ts
        if pos < end:
            extra["transaction_length"], pos = packed_int(body, pos)
        if pos + 4 <= end:
            (v,) = U32.unpack_from(body, pos)
            pos += 4
            if v & _VERSION_ORIGINAL_BIT:
                v &= ~_VERSION_ORIGINAL_BIT
                extra["original_server_version"] = U32.unpack_from(body, pos)[0]
                pos += 4
            else:
                extra["original_server_version"] = v
            extra["immediate_server_version"] = v
        if pos + 8 <= end:
            extra["commit_group_ticket"] = U64.unpack_from(body, pos)[0]
            pos += 8
    if pos != end:
        raise ValueError(f"{end - pos} unexpected bytes at the end of the GTID event")
    return ev.GtidEvent(header, flags, uuid.UUID(bytes=sid), gno, **extra)  # type: ignore[arg-type]


# Field ids of the tagged GTID event (control_events.h Gtid_event::define_fields).
_F_FLAGS, _F_SID, _F_GNO, _F_TAG, _F_LAST_COMMITTED, _F_SEQUENCE_NUMBER = 0, 1, 2, 3, 4, 5
_F_IMMEDIATE_TS, _F_ORIGINAL_TS, _F_TX_LENGTH, _F_IMMEDIATE_VERSION, _F_ORIGINAL_VERSION = 6, 7, 8, 9, 10
_F_COMMIT_GROUP_TICKET = 11
_UNSIGNED_FIELDS = {
    _F_IMMEDIATE_TS: "immediate_commit_timestamp",
    _F_ORIGINAL_TS: "original_commit_timestamp",
    _F_TX_LENGTH: "transaction_length",
    _F_IMMEDIATE_VERSION: "immediate_server_version",
    _F_ORIGINAL_VERSION: "original_server_version",
    _F_COMMIT_GROUP_TICKET: "commit_group_ticket",
}
_SIGNED_FIELDS = {_F_GNO: "gno", _F_LAST_COMMITTED: "last_committed", _F_SEQUENCE_NUMBER: "sequence_number"}


def decode_gtid_tagged(header: EventHeader, body: Body, p: DecodeContext) -> ev.GtidEvent:
    """GTID_TAGGED_LOG_EVENT body (serialization-library fields) -> ``GtidEvent``."""
    _version, pos = read_varlen(body, 0)
    size, pos = read_varlen(body, pos)
    last_non_ignorable, pos = read_varlen(body, pos)
    end = len(body)
    if size != end:
        raise ValueError(f"tagged GTID message declares {size} bytes, the event body has {end}")
    vals: dict[str, int] = {}
    flags = 0
    sid = b"\0" * 16
    tag: str | None = None
    while pos < end:
        fid, pos = read_varlen(body, pos)
        if fid == _F_FLAGS:
            flags, pos = read_varlen(body, pos)
        elif fid == _F_SID:
            raw = bytearray()
            for _ in range(16):
                b, pos = read_varlen(body, pos)
                if b > 255:
                    raise ValueError("tagged GTID sid byte out of range")
                raw.append(b)
            sid = bytes(raw)
        elif fid == _F_TAG:
            n, pos = read_varlen(body, pos)
            t, pos = take(body, pos, n, "GTID tag")
            tag = t.decode("ascii") or None
        elif fid in _SIGNED_FIELDS:
            v, pos = read_varlen_signed(body, pos)
            if v < 0:
                raise ValueError(f"negative {_SIGNED_FIELDS[fid]} in tagged GTID event")
            vals[_SIGNED_FIELDS[fid]] = v
        elif fid in _UNSIGNED_FIELDS:
            vals[_UNSIGNED_FIELDS[fid]], pos = read_varlen(body, pos)
        elif fid <= last_non_ignorable:
            raise ValueError(f"tagged GTID event has unknown required field {fid}")
        else:
            break  # fields newer than this reader; all ignorable by the format's rules
    if pos > end:
        raise ValueError("tagged GTID fields run past the event body")
    vals.setdefault("original_commit_timestamp", vals.get("immediate_commit_timestamp", 0))
    vals.setdefault("original_server_version", vals.get("immediate_server_version", 0))
    gno = vals.pop("gno", 0)
    return ev.GtidEvent(header, flags, uuid.UUID(bytes=sid), gno, tag, **vals)


def decode_previous_gtids(header: EventHeader, body: Body, p: DecodeContext) -> ev.PreviousGtidsEvent:
    """PREVIOUS_GTIDS_LOG_EVENT body (an encoded GTID set) -> ``PreviousGtidsEvent``."""
    return ev.PreviousGtidsEvent(header, MysqlGtidSet.decode(body))


def decode_mariadb_gtid(header: EventHeader, body: Body, p: DecodeContext) -> ev.MariadbGtidEvent:
    """MariaDB GTID_EVENT body -> ``MariadbGtidEvent``, with its commit id, XA id and extra flags."""
    seq_no, domain_id, flags = _MARIA_HEAD.unpack_from(body, 0)
    pos, end = 13, len(body)
    extra: dict[str, Any] = {}
    if flags & ev.FL_GROUP_COMMIT_ID:
        extra["commit_id"] = U64.unpack_from(body, pos)[0]
        pos += 8
    if flags & (ev.FL_PREPARED_XA | ev.FL_COMPLETED_XA):
        (extra["xa_format_id"],) = U32.unpack_from(body, pos)
        gl, bl = body[pos + 4], body[pos + 5]
        extra["xa_gtrid"], pos = take(body, pos + 6, gl, "XA gtrid")
        extra["xa_bqual"], pos = take(body, pos, bl, "XA bqual")
    if pos < end:
        fx = body[pos]
        pos += 1
        extra["flags_extra"] = fx
        if fx & ev.FL_EXTRA_MULTI_ENGINE:
            extra["extra_engines"] = body[pos]
            pos += 1
        if fx & (ev.FL_COMMIT_ALTER | ev.FL_ROLLBACK_ALTER):
            extra["sa_seq_no"] = U64.unpack_from(body, pos)[0]
            pos += 8
        if fx & ev.FL_EXTRA_THREAD_ID:
            extra["thread_id"] = U32.unpack_from(body, pos)[0]
            pos += 4
    if pos > end or any(body[pos:end]):
        raise ValueError("MariaDB GTID event has unexpected bytes after its fields")
    return ev.MariadbGtidEvent(header, seq_no, domain_id, flags, **extra)


def decode_mariadb_gtid_list(header: EventHeader, body: Body, p: DecodeContext) -> ev.MariadbGtidListEvent:
    """MariaDB GTID_LIST_EVENT body (count and flags, then domain, server, seq) -> event."""
    (word,) = U32.unpack_from(body, 0)
    count, flags = word & 0x0FFFFFFF, word >> 28
    # An empty list is written padded with zero bytes (seen from MariaDB 10.11); allow only zeros.
    if 4 + 16 * count > len(body) or any(body[4 + 16 * count :]):
        raise ValueError(
            f"GTID list of {count} entries needs {4 + 16 * count} bytes, the body has {len(body)}"
        )
    gtids = tuple(MariadbGtid(*_MARIA_LIST_ITEM.unpack_from(body, 4 + 16 * i)) for i in range(count))
    return ev.MariadbGtidListEvent(header, flags, gtids)
