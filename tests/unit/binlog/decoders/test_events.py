"""Byte-level tests of every event family, on event bytes built by hand from the documented layouts."""

from __future__ import annotations

import struct
import uuid
import zlib
from typing import Any

import pytest
import zstandard

from sluice.binlog import events as ev
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.constants import EventType as E
from sluice.binlog.decoders._reader import write_varlen, write_varlen_signed
from sluice.binlog.gtid import MariadbGtid, MysqlGtidSet
from sluice.binlog.parser import EventParser, ParserConfig
from sluice.errors import ChecksumMismatchError, MalformedEventError, SluiceError, UnsupportedError

pytestmark = pytest.mark.unit

# -- builders -------------------------------------------------------------------------------------


def event(
    type_code: int,
    body: bytes,
    *,
    crc: bool = True,
    log_pos: int = 100,
    flags: int = 0,
    server_id: int = 7,
    ts: int = 1_700_000_000,
) -> bytes:
    """Common header (ts u32, type u8, server id u32, size u32, log_pos u32, flags u16) + body + CRC32."""
    size = 19 + len(body) + (4 if crc else 0)
    data = struct.pack("<IBIIIH", ts, type_code, server_id, size, log_pos, flags) + body
    return data + struct.pack("<I", zlib.crc32(data)) if crc else data


def post_header_lengths(n: int = 42) -> bytes:
    phl = bytearray(n)
    for code, length in {
        E.QUERY_EVENT: 13,
        E.ROTATE_EVENT: 8,
        E.FORMAT_DESCRIPTION_EVENT: 84,
        E.TABLE_MAP_EVENT: 8,
        E.WRITE_ROWS_EVENT_V1: 8,
        E.UPDATE_ROWS_EVENT_V1: 8,
        E.DELETE_ROWS_EVENT_V1: 8,
        E.WRITE_ROWS_EVENT_V2: 10,
        E.UPDATE_ROWS_EVENT_V2: 10,
        E.DELETE_ROWS_EVENT_V2: 10,
        E.PARTIAL_UPDATE_ROWS_EVENT: 10,
        E.GTID_LOG_EVENT: 42,
        E.INCIDENT_EVENT: 2,
    }.items():
        if code <= n:
            phl[code - 1] = length
    if n >= 171:
        for code in (
            E.WRITE_ROWS_COMPRESSED_EVENT_V1,
            E.UPDATE_ROWS_COMPRESSED_EVENT_V1,
            E.DELETE_ROWS_COMPRESSED_EVENT_V1,
        ):
            phl[code - 1] = 8
        for code in (
            E.WRITE_ROWS_COMPRESSED_EVENT,
            E.UPDATE_ROWS_COMPRESSED_EVENT,
            E.DELETE_ROWS_COMPRESSED_EVENT,
        ):
            phl[code - 1] = 10
        phl[E.QUERY_COMPRESSED_EVENT - 1] = 13
    return bytes(phl)


def fde_body(version: str = "8.0.36", alg: int = 1, n_types: int = 42) -> bytes:
    """binlog version u16, server version char[50], created u32, header length u8 (19),
    post-header lengths, checksum algorithm u8 (the CRC32 itself is appended by ``event``)."""
    return (
        struct.pack("<H", 4)
        + version.encode().ljust(50, b"\0")
        + struct.pack("<I", 0)
        + bytes([19])
        + post_header_lengths(n_types)
        + bytes([alg])
    )


def fde(version: str = "8.0.36", alg: int = 1, **kw: Any) -> bytes:
    n = 171 if "MariaDB" in version else 42
    body = fde_body(version, alg, n)
    # An FDE always carries 4 checksum bytes when the server knows checksums, even with alg OFF.
    return event(E.FORMAT_DESCRIPTION_EVENT, body, crc=True, **kw)


def packed(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def tlv(ftype: int, value: bytes) -> bytes:
    return bytes([ftype]) + packed(len(value)) + value


def table_map_body(
    table_id: int,
    schema: bytes,
    table: bytes,
    types: list[int],
    meta: bytes,
    nullable: bytes,
    optional: bytes = b"",
) -> bytes:
    return (
        table_id.to_bytes(6, "little")
        + struct.pack("<H", 1)
        + bytes([len(schema)])
        + schema
        + b"\0"
        + bytes([len(table)])
        + table
        + b"\0"
        + packed(len(types))
        + bytes(types)
        + packed(len(meta))
        + meta
        + nullable
        + optional
    )


class StubPlan:
    """Stand-in row plan: returns what it was given, so the framing can be checked."""

    def __init__(self, table_map: ev.TableMapEvent) -> None:
        self.table_map = table_map

    def decode_rows(
        self,
        kind: str,
        buf: Any,
        start: int,
        end: int,
        present: int,
        present_after: int | None,
        partial: bool,
    ) -> list[Any]:
        return [(kind, bytes(buf[start:end]), present, present_after, partial)]


def stub_plan_for(table_map: ev.TableMapEvent, columns: Any = None) -> StubPlan:
    return StubPlan(table_map)


def parser(version: str = "8.0.36", alg: int = 1, **config: Any) -> EventParser:
    config.setdefault("plan_for", stub_plan_for)
    p = EventParser(ParserConfig(**config))
    p.parse(fde(version, alg))
    return p


SIMPLE_TM = table_map_body(0x0102030405, b"shop", b"orders", [T.LONG, T.VARCHAR], b"\x50\x00", b"\x02")

# -- header, FDE, checksums ----------------------------------------------------------------------


def test_format_description_mysql() -> None:
    p = EventParser()
    e = p.parse(fde("8.0.36-log", 1))
    assert isinstance(e, ev.FormatDescriptionEvent)
    assert (e.binlog_version, e.server_version, e.header_length, e.checksum_alg) == (4, "8.0.36-log", 19, 1)
    assert e.version == (8, 0, 36) and not e.is_mariadb
    assert e.post_header_length(E.QUERY_EVENT) == 13 and e.post_header_length(250) is None
    assert p.checksum_alg == 1


def test_format_description_mariadb_flavour() -> None:
    e = EventParser().parse(fde("10.11.6-MariaDB-log"))
    assert isinstance(e, ev.FormatDescriptionEvent) and e.is_mariadb and e.version == (10, 11, 6)


@pytest.mark.parametrize("version", ["5.5.62-log", "5.6.0", "5.1.73"])
def test_old_mysql_refused(version: str) -> None:
    with pytest.raises(UnsupportedError, match=r"5\.6\.1"):
        EventParser().parse(fde(version))


def test_old_mariadb_refused() -> None:
    with pytest.raises(UnsupportedError):
        EventParser().parse(fde("5.2.14-MariaDB"))


def test_fde_header_length_must_be_19() -> None:
    body = bytearray(fde_body())
    body[56] = 13
    with pytest.raises(MalformedEventError, match="19"):
        EventParser().parse(event(E.FORMAT_DESCRIPTION_EVENT, bytes(body)))


def test_fde_crc_is_summed_without_in_use_flag() -> None:
    data = bytearray(fde())
    data[17] |= 0x01  # LOG_EVENT_BINLOG_IN_USE_F set after the CRC was computed
    assert isinstance(EventParser().parse(bytes(data)), ev.FormatDescriptionEvent)


def test_fde_crc_mismatch() -> None:
    data = bytearray(fde())
    data[30] ^= 0xFF
    with pytest.raises(ChecksumMismatchError) as info:
        EventParser().parse(bytes(data), file="binlog.000001", offset=4)
    assert info.value.file == "binlog.000001" and info.value.offset == 4


def test_checksum_off_strips_nothing() -> None:
    p = parser(alg=0)
    e = p.parse(event(E.XID_EVENT, struct.pack("<Q", 42), crc=False))
    assert isinstance(e, ev.XidEvent) and e.xid == 42


def test_checksum_can_be_disabled() -> None:
    p = parser(verify_checksum=False)
    data = bytearray(event(E.XID_EVENT, struct.pack("<Q", 42)))
    data[-1] ^= 0xFF
    assert p.parse(bytes(data)).xid == 42  # type: ignore[union-attr]


def test_header_size_must_match_data() -> None:
    p = parser()
    data = event(E.XID_EVENT, struct.pack("<Q", 1))
    with pytest.raises(MalformedEventError, match="truncated"):
        p.parse(data[:-3], file="f", offset=9)
    with pytest.raises(MalformedEventError, match="shorter than the 19-byte"):
        p.parse(data[:10])


# -- ROTATE before the FDE -----------------------------------------------------------------------


def rotate_body(pos: int = 4, name: bytes = b"binlog.000002") -> bytes:
    return struct.pack("<Q", pos) + name


def test_fake_rotate_without_checksum_before_fde() -> None:
    e = EventParser().parse(event(E.ROTATE_EVENT, rotate_body(), crc=False, log_pos=0, flags=0x20))
    assert isinstance(e, ev.RotateEvent) and (e.position, e.next_file) == (4, "binlog.000002")
    assert e.header.artificial


def test_log_pos_zero_alone_is_not_artificial() -> None:
    # MariaDB 11.4+ (binlog_legacy_event_pos=OFF) writes log_pos 0 for every event inside a transaction.
    e = EventParser().parse(event(E.ROTATE_EVENT, rotate_body(), crc=False, log_pos=0, flags=0))
    assert not e.header.artificial


def test_fake_rotate_with_checksum_before_fde() -> None:
    e = EventParser().parse(event(E.ROTATE_EVENT, rotate_body(name=b"mariadb-bin.000007"), log_pos=0))
    assert isinstance(e, ev.RotateEvent) and e.next_file == "mariadb-bin.000007"


def test_rotate_with_configured_initial_checksum() -> None:
    from sluice.binlog.constants import ChecksumAlgorithm

    p = EventParser(ParserConfig(initial_checksum=ChecksumAlgorithm.CRC32))
    data = bytearray(event(E.ROTATE_EVENT, rotate_body()))
    data[-1] ^= 1
    with pytest.raises(ChecksumMismatchError):
        p.parse(bytes(data))


# -- statement events ------------------------------------------------------------------------------


def query_body(query: bytes, status: bytes, schema: bytes = b"shop", error: int = 0) -> bytes:
    """thread id u32, exec time u32, schema length u8, error code u16, status length u16,
    status vars, schema, NUL, statement."""
    return struct.pack("<IIBHH", 11, 2, len(schema), error, len(status)) + status + schema + b"\0" + query


STATUS = (
    b"\x00"
    + struct.pack("<I", 0x4000)  # Q_FLAGS2_CODE
    + b"\x01"
    + struct.pack("<Q", 0x1234)  # Q_SQL_MODE_CODE
    + b"\x06\x03std"  # Q_CATALOG_NZ_CODE
    + b"\x04"
    + struct.pack("<HHH", 33, 255, 8)  # Q_CHARSET_CODE
    + b"\x05\x06+01:00"  # Q_TIME_ZONE_CODE
    + b"\x03"
    + struct.pack("<HH", 2, 1)  # Q_AUTO_INCREMENT
    + b"\x0b\x04root\x09localhost"  # Q_INVOKER
    + b"\x0c\x02db1\x00db2\x00"  # Q_UPDATED_DB_NAMES
    + b"\x10\x01"  # Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP
    + b"\x11"
    + struct.pack("<Q", 99)  # Q_DDL_LOGGED_WITH_XID
    + b"\x12"
    + struct.pack("<H", 255)  # Q_DEFAULT_COLLATION_FOR_UTF8MB4
)


def test_query_status_vars() -> None:
    e = parser().parse(event(E.QUERY_EVENT, query_body(b"CREATE TABLE t (id INT)", STATUS)))
    assert isinstance(e, ev.QueryEvent)
    assert (e.thread_id, e.exec_time, e.schema, e.query) == (11, 2, "shop", b"CREATE TABLE t (id INT)")
    assert (e.flags2, e.sql_mode, e.catalog, e.charset, e.time_zone) == (
        0x4000,
        0x1234,
        "std",
        (33, 255, 8),
        "+01:00",
    )
    assert (e.auto_increment_increment, e.auto_increment_offset) == (2, 1)
    assert e.invoker == ("root", "localhost") and e.updated_db_names == ("db1", "db2")
    assert (e.explicit_defaults_for_timestamp, e.ddl_xid, e.default_collation_for_utf8mb4) == (1, 99, 255)
    assert e.sql == "CREATE TABLE t (id INT)" and not e.compressed


def test_query_mariadb_status_vars_and_unknown_code() -> None:
    status = (
        b"\x81"
        + struct.pack("<Q", 77)  # Q_XID
        + b"\x80\x01\x02\x03"  # Q_HRNOW
        + b"\x83\x01"
        + struct.pack("<HH", 45, 46)  # Q_CHARACTER_SET_COLLATIONS
        + b"\x82\x04"
        + struct.pack("<Q", 5)  # Q_GTID_FLAGS3 with FL_COMMIT_ALTER_E1
        + b"\xc8\xaa\xbb"
    )  # a code this reader does not know: kept raw
    e = parser("10.11.6-MariaDB").parse(event(E.QUERY_EVENT, query_body(b"COMMIT", status)))
    assert isinstance(e, ev.QueryEvent)
    assert (e.xid, e.hrnow, e.character_set_collations, e.gtid_flags3, e.sa_seq_no) == (
        77,
        0x030201,
        ((45, 46),),
        4,
        5,
    )
    assert e.unparsed_status == b"\xc8\xaa\xbb"


def test_query_compressed() -> None:
    text = b"INSERT INTO t VALUES " + b"(1)," * 50 + b"(2)"
    block = bytes([0x80 | 2]) + len(text).to_bytes(2, "big") + zlib.compress(text)
    e = parser("10.6.1-MariaDB").parse(event(E.QUERY_COMPRESSED_EVENT, query_body(block, b"")))
    assert isinstance(e, ev.QueryEvent) and e.query == text and e.compressed


def test_query_compressed_wrong_length() -> None:
    block = b"\x81\x09" + zlib.compress(b"short")
    with pytest.raises(MalformedEventError, match="inflated"):
        parser("10.6.1-MariaDB").parse(event(E.QUERY_COMPRESSED_EVENT, query_body(block, b"")))


def test_simple_events() -> None:
    p = parser()
    assert p.parse(event(E.XID_EVENT, struct.pack("<Q", 2**64 - 1))).xid == 2**64 - 1  # type: ignore[union-attr]
    iv = p.parse(event(E.INTVAR_EVENT, b"\x02" + struct.pack("<Q", 1000)))
    assert isinstance(iv, ev.IntvarEvent) and (iv.kind, iv.value) == (2, 1000)
    r = p.parse(event(E.RAND_EVENT, struct.pack("<QQ", 5, 6)))
    assert isinstance(r, ev.RandEvent) and (r.seed1, r.seed2) == (5, 6)
    xa = p.parse(event(E.XA_PREPARE_LOG_EVENT, struct.pack("<BiII", 1, 1, 3, 2) + b"gtrbq"))
    assert isinstance(xa, ev.XaPrepareEvent) and (xa.one_phase, xa.gtrid, xa.bqual) == (True, b"gtr", b"bq")
    inc = p.parse(event(E.INCIDENT_EVENT, struct.pack("<H", 1) + b"\x04lost"))
    assert isinstance(inc, ev.IncidentEvent) and (inc.incident, inc.message) == (1, "lost")
    rq = p.parse(event(E.ROWS_QUERY_LOG_EVENT, b"\x08UPDATE t"))
    assert isinstance(rq, ev.RowsQueryEvent) and rq.query == b"UPDATE t"
    an = p.parse(event(E.ANNOTATE_ROWS_EVENT, b"DELETE FROM t"))
    assert isinstance(an, ev.AnnotateRowsEvent) and an.query == b"DELETE FROM t"
    ck = p.parse(event(E.BINLOG_CHECKPOINT_EVENT, struct.pack("<I", 5) + b"b.001"))
    assert isinstance(ck, ev.BinlogCheckpointEvent) and ck.binlog_file == "b.001"
    assert isinstance(p.parse(event(E.STOP_EVENT, b"")), ev.StopEvent)
    unk = p.parse(event(E.VIEW_CHANGE_EVENT, b"\x01\x02"))
    assert isinstance(unk, ev.UnknownEvent) and unk.raw == b"\x01\x02"
    assert isinstance(p.parse(event(99, b"zz")), ev.UnknownEvent)


def test_user_var() -> None:
    p = parser()
    body = (
        struct.pack("<I", 1)
        + b"v"
        + b"\x00"
        + b"\x02"
        + struct.pack("<II", 63, 8)
        + struct.pack("<q", -5)
        + b"\x00"
    )
    u = p.parse(event(E.USER_VAR_EVENT, body))
    assert isinstance(u, ev.UserVarEvent)
    assert (u.name, u.is_null, u.value_type, u.charset, u.value, u.flags) == (
        "v",
        False,
        2,
        63,
        struct.pack("<q", -5),
        0,
    )
    n = p.parse(event(E.USER_VAR_EVENT, struct.pack("<I", 2) + b"nv\x01"))
    assert isinstance(n, ev.UserVarEvent) and n.is_null and n.value is None


def test_heartbeats() -> None:
    p = parser()
    h1 = p.parse(event(E.HEARTBEAT_LOG_EVENT, b"binlog.000003", log_pos=777))
    assert isinstance(h1, ev.HeartbeatEvent) and (h1.log_file, h1.position) == ("binlog.000003", 777)
    name = b"binlog.000004"
    body = b"\x01" + packed(len(name)) + name + b"\x02\x04" + packed(70000)
    h2 = p.parse(event(E.HEARTBEAT_LOG_EVENT_V2, body, crc=False))  # checksum detected per heartbeat
    assert isinstance(h2, ev.HeartbeatEvent) and (h2.log_file, h2.position) == ("binlog.000004", 70000)


def test_start_encryption_is_unsupported() -> None:
    with pytest.raises(UnsupportedError, match="encrypted"):
        parser("10.11.6-MariaDB").parse(event(E.START_ENCRYPTION_EVENT, b"\x01" + b"\x00" * 16))


# -- GTID events -----------------------------------------------------------------------------------

SID = uuid.UUID("3d687a2c-b38e-11ed-91ef-3f952e283fc3")


def test_mysql_gtid_full() -> None:
    body = (
        b"\x01"
        + SID.bytes
        + struct.pack("<Q", 283)  # flags, sid, gno
        + b"\x02"
        + struct.pack("<QQ", 10, 11)  # typecode 2, last_committed, sequence_number
        + ((1 << 55) | 1_700_000_000_000_001).to_bytes(7, "little")  # immediate ts, original follows
        + (1_600_000_000_000_000).to_bytes(7, "little")  # original ts
        + packed(1234)  # transaction length
        + struct.pack("<I", (1 << 31) | 80036)
        + struct.pack("<I", 80030)
    )  # versions
    e = parser().parse(event(E.GTID_LOG_EVENT, body))
    assert isinstance(e, ev.GtidEvent)
    assert (e.sid, e.gno, e.tag, e.commit_flag, e.gtid) == (SID, 283, None, True, f"{SID}:283")
    assert (e.last_committed, e.sequence_number) == (10, 11)
    assert (e.immediate_commit_timestamp, e.original_commit_timestamp) == (
        1_700_000_000_000_001,
        1_600_000_000_000_000,
    )
    assert (e.transaction_length, e.immediate_server_version, e.original_server_version) == (
        1234,
        80036,
        80030,
    )


def test_mysql_anonymous_gtid_short() -> None:
    body = b"\x00" + b"\x00" * 16 + struct.pack("<Q", 0) + b"\x02" + struct.pack("<QQ", 0, 1)
    e = parser().parse(event(E.ANONYMOUS_GTID_LOG_EVENT, body))
    assert (
        isinstance(e, ev.GtidEvent) and e.anonymous and e.gtid is None and e.original_commit_timestamp is None
    )


def tagged_gtid_body(tag: str = "batch", gno: int = 42) -> bytes:
    fields = (
        write_varlen(0)
        + write_varlen(0)  # flags
        + write_varlen(1)
        + b"".join(write_varlen(b) for b in SID.bytes)  # sid
        + write_varlen(2)
        + write_varlen_signed(gno)
        + write_varlen(3)
        + write_varlen(len(tag))
        + tag.encode()
        + write_varlen(4)
        + write_varlen_signed(5)
        + write_varlen(5)
        + write_varlen_signed(6)
        + write_varlen(6)
        + write_varlen(1_700_000_000_000_000)
        + write_varlen(8)
        + write_varlen(999)
        + write_varlen(9)
        + write_varlen(90100)
    )
    head_rest = write_varlen(7)  # last non-ignorable field id
    version = write_varlen(1)
    size = len(version) + len(head_rest) + len(fields)
    size += len(write_varlen(size + 1))
    return version + write_varlen(size) + head_rest + fields


def test_mysql_tagged_gtid() -> None:
    e = parser("8.4.0").parse(event(E.GTID_TAGGED_LOG_EVENT, tagged_gtid_body()))
    assert isinstance(e, ev.GtidEvent)
    assert (e.sid, e.tag, e.gno, e.gtid) == (SID, "batch", 42, f"{SID}:batch:42")
    assert (e.last_committed, e.sequence_number, e.transaction_length) == (5, 6, 999)
    assert e.immediate_commit_timestamp == e.original_commit_timestamp == 1_700_000_000_000_000
    assert e.immediate_server_version == e.original_server_version == 90100


def test_previous_gtids() -> None:
    s = MysqlGtidSet.parse(f"{SID}:1-5:7")
    e = parser().parse(event(E.PREVIOUS_GTIDS_LOG_EVENT, s.encode()))
    assert isinstance(e, ev.PreviousGtidsEvent) and e.gtid_set == s


def test_mariadb_gtid_with_commit_id_and_xa() -> None:
    p = parser("10.11.6-MariaDB")
    body = struct.pack("<QIB", 100, 1, ev.FL_GROUP_COMMIT_ID | ev.FL_TRANSACTIONAL) + struct.pack("<Q", 55)
    e = p.parse(event(E.GTID_EVENT, body, server_id=3))
    assert isinstance(e, ev.MariadbGtidEvent) and (e.seq_no, e.domain_id, e.commit_id, e.gtid) == (
        100,
        1,
        55,
        "1-3-100",
    )
    assert not e.standalone
    body = struct.pack("<QIB", 8, 0, ev.FL_STANDALONE) + b"\x00" * 6  # zero padding to 19 bytes
    assert p.parse(event(E.GTID_EVENT, body)).standalone  # type: ignore[union-attr]
    body = (
        struct.pack("<QIB", 9, 0, ev.FL_PREPARED_XA)
        + struct.pack("<IBB", 1, 2, 1)
        + b"abc"
        + bytes([ev.FL_EXTRA_THREAD_ID])
        + struct.pack("<I", 31)
    )
    x = p.parse(event(E.GTID_EVENT, body))
    assert isinstance(x, ev.MariadbGtidEvent) and (x.xa_gtrid, x.xa_bqual, x.thread_id) == (b"ab", b"c", 31)


def test_mariadb_gtid_list() -> None:
    body = struct.pack("<I", 2) + struct.pack("<IIQ", 0, 1, 100) + struct.pack("<IIQ", 1, 2, 5)
    e = parser("10.11.6-MariaDB").parse(event(E.GTID_LIST_EVENT, body))
    assert isinstance(e, ev.MariadbGtidListEvent) and e.gtids == (
        MariadbGtid(0, 1, 100),
        MariadbGtid(1, 2, 5),
    )


# -- CRC failure and truncation, per family ----------------------------------------------------------

FAMILIES: list[tuple[str, str, int, bytes, int]] = [
    # name, server, type, body, a body length at which the event must be rejected
    ("rotate", "8.0.36", E.ROTATE_EVENT, rotate_body(), 5),
    ("query", "8.0.36", E.QUERY_EVENT, query_body(b"BEGIN", STATUS), 20),
    ("xid", "8.0.36", E.XID_EVENT, struct.pack("<Q", 5), 7),
    ("xa_prepare", "8.0.36", E.XA_PREPARE_LOG_EVENT, struct.pack("<BiII", 0, 1, 3, 2) + b"gtrbq", 15),
    ("intvar", "8.0.36", E.INTVAR_EVENT, b"\x01" + struct.pack("<Q", 3), 5),
    ("rand", "8.0.36", E.RAND_EVENT, struct.pack("<QQ", 1, 2), 12),
    ("user_var", "8.0.36", E.USER_VAR_EVENT, struct.pack("<I", 4) + b"name\x01", 6),
    ("incident", "8.0.36", E.INCIDENT_EVENT, struct.pack("<H", 1) + b"\x04lost", 4),
    ("checkpoint", "10.11.6-MariaDB", E.BINLOG_CHECKPOINT_EVENT, struct.pack("<I", 5) + b"b.001", 6),
    ("gtid", "8.0.36", E.GTID_LOG_EVENT, b"\x01" + SID.bytes + struct.pack("<Q", 1), 20),
    ("gtid_tagged", "8.4.0", E.GTID_TAGGED_LOG_EVENT, tagged_gtid_body(), 30),
    ("previous_gtids", "8.0.36", E.PREVIOUS_GTIDS_LOG_EVENT, MysqlGtidSet.parse(f"{SID}:1-3").encode(), 30),
    (
        "mariadb_gtid",
        "10.11.6-MariaDB",
        E.GTID_EVENT,
        struct.pack("<QIB", 1, 0, 2) + struct.pack("<Q", 1),
        16,
    ),
    (
        "gtid_list",
        "10.11.6-MariaDB",
        E.GTID_LIST_EVENT,
        struct.pack("<I", 1) + struct.pack("<IIQ", 0, 1, 2),
        12,
    ),
    ("table_map", "8.0.36", E.TABLE_MAP_EVENT, SIMPLE_TM, 18),
    ("heartbeat_v2", "8.0.36", E.HEARTBEAT_LOG_EVENT_V2, b"\x01\x03abc\x02\x01\x05", 3),
]


@pytest.mark.parametrize(("name", "server", "code", "body", "cut"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_family_decodes_rejects_bad_crc_and_truncation(
    name: str, server: str, code: int, body: bytes, cut: int
) -> None:
    p = parser(server)
    assert not isinstance(p.parse(event(code, body)), ev.UnknownEvent)
    bad = bytearray(event(code, body))
    bad[19] ^= 0x5A
    if code not in (E.HEARTBEAT_LOG_EVENT, E.HEARTBEAT_LOG_EVENT_V2):
        with pytest.raises(ChecksumMismatchError) as info:
            parser(server).parse(bytes(bad), file="binlog.000009", offset=1234)
        assert (info.value.file, info.value.offset, info.value.event_type) == ("binlog.000009", 1234, code)
    with pytest.raises(MalformedEventError) as minfo:
        parser(server).parse(event(code, body[:cut]), file="binlog.000009", offset=99)
    assert minfo.value.offset == 99 and minfo.value.header is not None
    assert isinstance(minfo.value.__cause__, Exception)


def test_transaction_boundaries_clear_table_maps() -> None:
    p = parser()
    p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM))
    assert list(p.table_maps) == [0x0102030405]
    p.parse(event(E.XID_EVENT, struct.pack("<Q", 1)))
    assert p.table_maps == {}
    p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM))
    p.parse(event(E.QUERY_EVENT, query_body(b"COMMIT", b"")))
    assert p.table_maps == {}
    p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM))
    p.parse(event(E.QUERY_EVENT, query_body(b"INSERT INTO t VALUES (1)", b"")))
    assert p.table_maps != {}


def test_only_sluice_errors() -> None:
    assert issubclass(MalformedEventError, SluiceError) and issubclass(ChecksumMismatchError, SluiceError)


def test_zstd_payload_helper_available() -> None:
    assert zstandard.ZstdCompressor().compress(b"x")
