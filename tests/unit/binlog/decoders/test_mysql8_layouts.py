"""MySQL 8.0 and 8.4 binlog layouts that the live tests, run on MySQL 9.x, never produce.

Covered: the FORMAT_DESCRIPTION post-header length arrays of 8.0 (41 event types) and 8.4 (42, its
V1 rows entries zeroed), and TRANSACTION_PAYLOAD, whose declared post-header length (40) its reader
does not use; the GTID_LOG_EVENT bodies the GTID reader accepts, from the bare GTID through the
commit timestamps, transaction length and server versions 8.0 releases added to the commit group
ticket, the parts a body lacks decoding as None; a tagged GTID relayed with its original timestamp,
original version and ticket; the QUERY status variables 8.0 writes, in the order it writes them,
and the codes a reader stops at (the unused Q_COMMIT_TS pair, a newer server's
Q_ENABLE_CASCADE_TRIGGERS); HEARTBEAT_LOG_EVENT_V2 with a position past 4 GiB; and a group
replication view change (GTID, BEGIN, VIEW_CHANGE, COMMIT) captured end to end.

The byte layouts come from the MySQL server source: libbinlogevents (``libbinlogevents/`` in the
8.0 tree, ``libs/mysql/binlog/event/`` in later ones), the readers: ``binlog_event.h`` (post-header
lengths), ``control_events.h``/``.cpp`` (FORMAT_DESCRIPTION, GTID and tagged GTID, heartbeat,
VIEW_CHANGE), ``statement_events.h``/``.cpp`` (status variables), ``codecs/binary.cpp``
(TRANSACTION_PAYLOAD and heartbeat fields). The writers: ``sql/log_event.cc`` (status variables,
GTID body, VIEW_CHANGE body), ``sql/rpl_binlog_sender.cc`` (heartbeat) and group replication's
``certification_handler.cc`` (the view change transaction).
"""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import Any

import pytest
import zstandard

from sluice.binlog import events as ev
from sluice.binlog.constants import EventType as E
from sluice.binlog.decoders._reader import write_varlen, write_varlen_signed
from sluice.binlog.gtid import MysqlGtidSet
from sluice.binlog.header import LOG_EVENT_IGNORABLE_F
from sluice.binlog.parser import EventParser, ParserConfig
from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, ChangeCapture
from sluice.errors import MalformedEventError
from sluice.io.binlog_file import BINLOG_MAGIC, iter_raw_spans
from tests.unit.binlog.decoders.test_events import SID, SIMPLE_TM, event, packed, query_body, stub_plan_for
from tests.unit.binlog.decoders.test_events_rows import TID, rows_v2

pytestmark = pytest.mark.unit

GOLDEN_9X = Path(__file__).resolve().parents[3] / "data" / "mysql-matrix.binlog"

# -- FORMAT_DESCRIPTION ---------------------------------------------------------------------------


def server_post_header_lengths(types: int) -> bytes:
    """The array ``Format_description_event(4, version)`` writes, one length per event type 1 ..
    ``types`` (control_events.cpp ``server_event_header_length``, the lengths binlog_event.h
    ``enum_post_header_length``). 8.0 knows 41 types; 8.4 adds GTID_TAGGED_LOG_EVENT and, having
    dropped the V1 rows events, writes 0 for them. TRANSACTION_PAYLOAD's entry is the source's
    ``TRANSACTION_PAYLOAD_EVENT``: the type code 40 itself, not its header length 0."""
    v1_rows = 8 if types == 41 else 0
    lengths = {
        E.QUERY_EVENT: 4 + 4 + 1 + 2 + 2,  # QUERY_HEADER_LEN
        E.ROTATE_EVENT: 8,
        E.APPEND_BLOCK_EVENT: 4,
        E.DELETE_FILE_EVENT: 4,
        E.FORMAT_DESCRIPTION_EVENT: (2 + 50 + 4) + 1 + types,  # START_V3_HEADER_LEN + 1 + types
        E.BEGIN_LOAD_QUERY_EVENT: 4,
        E.EXECUTE_LOAD_QUERY_EVENT: 13 + (4 + 4 + 4 + 1),  # QUERY_HEADER_LEN + its extra 13
        E.TABLE_MAP_EVENT: 8,
        E.WRITE_ROWS_EVENT_V1: v1_rows,
        E.UPDATE_ROWS_EVENT_V1: v1_rows,
        E.DELETE_ROWS_EVENT_V1: v1_rows,
        E.INCIDENT_EVENT: 2,
        E.WRITE_ROWS_EVENT_V2: 10,
        E.UPDATE_ROWS_EVENT_V2: 10,
        E.DELETE_ROWS_EVENT_V2: 10,
        E.GTID_LOG_EVENT: 1 + 16 + 8 + 1 + 16,  # flags, sid, gno, typecode, two logical clocks
        E.ANONYMOUS_GTID_LOG_EVENT: 1 + 16 + 8 + 1 + 16,
        E.TRANSACTION_CONTEXT_EVENT: 18,
        E.VIEW_CHANGE_EVENT: 52,
        E.PARTIAL_UPDATE_ROWS_EVENT: 10,
        E.TRANSACTION_PAYLOAD_EVENT: int(E.TRANSACTION_PAYLOAD_EVENT),
    }
    return bytes(lengths.get(code, 0) for code in range(1, types + 1))


MYSQL_80, MYSQL_84 = server_post_header_lengths(41), server_post_header_lengths(42)


def fde_body(version: str, phl: bytes) -> bytes:
    """binlog version 4, server version char[50], created u32, header length 19, the lengths, the
    checksum algorithm (CRC32)."""
    return struct.pack("<H", 4) + version.encode().ljust(50, b"\0") + struct.pack("<I", 0) + b"\x13" + phl + b"\x01"


def fde_event(version: str, phl: bytes) -> bytes:
    return event(E.FORMAT_DESCRIPTION_EVENT, fde_body(version, phl))


@pytest.mark.parametrize(("version", "phl"), [("8.0.36", MYSQL_80), ("8.4.3", MYSQL_84)])
def test_format_description_lengths_of_8_0_and_8_4(version: str, phl: bytes) -> None:
    p = EventParser()
    e = p.parse(fde_event(version, phl))
    assert isinstance(e, ev.FormatDescriptionEvent) and e.server_version == version
    assert e.post_header_lengths == phl and p.checksum_alg == e.checksum_alg == 1
    assert e.post_header_length(E.FORMAT_DESCRIPTION_EVENT) == 57 + len(phl)  # 98, 99
    assert e.post_header_length(E.QUERY_EVENT) == 13 and e.post_header_length(E.GTID_LOG_EVENT) == 42
    assert e.post_header_length(E.VIEW_CHANGE_EVENT) == 52 and e.post_header_length(E.HEARTBEAT_LOG_EVENT_V2) == 0
    if version.startswith("8.0"):
        assert len(phl) == 41 and e.post_header_length(E.GTID_TAGGED_LOG_EVENT) is None
        assert e.post_header_length(E.WRITE_ROWS_EVENT_V1) == 8
    else:
        assert len(phl) == 42 and e.post_header_length(E.GTID_TAGGED_LOG_EVENT) == 0
        assert e.post_header_length(E.WRITE_ROWS_EVENT_V1) == 0


def test_8_4_lengths_are_those_a_9x_server_wrote() -> None:
    data = GOLDEN_9X.read_bytes()
    e = EventParser().parse(data[4 : 4 + int.from_bytes(data[13:17], "little")])
    assert isinstance(e, ev.FormatDescriptionEvent) and e.version >= (9, 0, 0)
    assert e.post_header_lengths == MYSQL_84
    # 8.0 differs in its own length (98), the V1 rows entries (8) and the missing GTID_TAGGED.
    differ = {code for code in range(1, 42) if MYSQL_80[code - 1] != MYSQL_84[code - 1]}
    assert differ == {E.FORMAT_DESCRIPTION_EVENT, E.WRITE_ROWS_EVENT_V1, E.UPDATE_ROWS_EVENT_V1,
                      E.DELETE_ROWS_EVENT_V1}


def parser80(**config: Any) -> EventParser:
    config.setdefault("plan_for", stub_plan_for)
    p = EventParser(ParserConfig(**config))
    p.parse(fde_event("8.0.36", MYSQL_80))
    return p


def payload_fields(ctype: int, size: int, usize: int | None) -> bytes:
    """``Transaction_payload::encode``: compression type, the uncompressed size unless the type is
    NONE, the payload size, the end mark; each field ``type, length, value`` in packed integers."""
    def field(ftype: int, value: int) -> bytes:
        return packed(ftype) + packed(len(packed(value))) + packed(value)

    usize_field = field(3, usize) if usize is not None else b""
    return field(2, ctype) + usize_field + field(1, size) + b"\x00"


@pytest.mark.parametrize("compressed", [True, False], ids=["zstd", "none"])
def test_transaction_payload_starts_at_its_body_not_its_declared_length(compressed: bool) -> None:
    inner = b"".join(event(code, body, crc=False, log_pos=0) for code, body in [
        (E.QUERY_EVENT, query_body(b"BEGIN", b"")),
        (E.TABLE_MAP_EVENT, SIMPLE_TM),
        (E.WRITE_ROWS_EVENT_V2, rows_v2(TID, 2, b"\x03", b"R")),
        (E.XID_EVENT, struct.pack("<Q", 31)),
    ])
    data = zstandard.ZstdCompressor().compress(inner) if compressed else inner
    fields = payload_fields(0, len(data), len(inner)) if compressed else payload_fields(255, len(data), None)
    p = parser80()
    assert p.post_header_len(E.TRANSACTION_PAYLOAD_EVENT, 0) == 40
    e = p.parse(event(E.TRANSACTION_PAYLOAD_EVENT, fields + data))
    assert isinstance(e, ev.TransactionPayloadEvent)
    assert (e.compression_type, e.payload_size) == (0 if compressed else 255, len(data))
    assert e.uncompressed_size == (len(inner) if compressed else None)
    assert [type(x).__name__ for x in e.events] == ["QueryEvent", "TableMapEvent", "RowsEvent", "XidEvent"]
    assert e.events[3].xid == 31


# -- GTID_LOG_EVENT -------------------------------------------------------------------------------

GNO = 77
HEAD = b"\x00" + SID.bytes + struct.pack("<Q", GNO)  # flags (rows only), sid, gno
CLOCK = b"\x02" + struct.pack("<QQ", 9, 10)  # LOGICAL_TIMESTAMP_TYPECODE, last_committed, sequence_number
IMMEDIATE, ORIGINAL = 1_700_000_000_000_002, 1_699_999_999_000_001
COMMIT_TS = IMMEDIATE.to_bytes(7, "little")  # original == immediate: bit 55 clear, one timestamp
COMMIT_TS_RELAYED = (IMMEDIATE | 1 << 55).to_bytes(7, "little") + ORIGINAL.to_bytes(7, "little")
TRX_LENGTH = packed(300)  # net_store_length: 0xfc + u16
VERSION = struct.pack("<I", 80036)  # original == immediate: bit 31 clear, one version
VERSION_RELAYED = struct.pack("<II", 80036 | 1 << 31, 80027)
TICKET = struct.pack("<Q", 5)

# The parts Gtid_event::Gtid_event reads, each only when its bytes remain. mysqlbinlog guards the
# session variables it sets from them with /*!80001*/ (original_commit_timestamp) and
# /*!80014*/ (original/immediate_server_version), the releases from which servers have them.
# (last_committed, sequence_number, immediate ts, original ts, length, immediate version,
# original version, ticket)
GTID_BODIES: list[tuple[str, bytes, tuple[Any, ...]]] = [
    ("bare", b"", (None,) * 8),
    ("logical-clock", CLOCK, (9, 10) + (None,) * 6),
    ("commit-ts", CLOCK + COMMIT_TS, (9, 10, IMMEDIATE, IMMEDIATE) + (None,) * 4),
    ("commit-ts-relayed", CLOCK + COMMIT_TS_RELAYED, (9, 10, IMMEDIATE, ORIGINAL) + (None,) * 4),
    ("trx-length", CLOCK + COMMIT_TS + TRX_LENGTH, (9, 10, IMMEDIATE, IMMEDIATE, 300, None, None, None)),
    ("server-version", CLOCK + COMMIT_TS + TRX_LENGTH + VERSION,
     (9, 10, IMMEDIATE, IMMEDIATE, 300, 80036, 80036, None)),
    ("server-version-relayed", CLOCK + COMMIT_TS_RELAYED + TRX_LENGTH + VERSION_RELAYED,
     (9, 10, IMMEDIATE, ORIGINAL, 300, 80036, 80027, None)),
    ("commit-group-ticket", CLOCK + COMMIT_TS + TRX_LENGTH + VERSION + TICKET,
     (9, 10, IMMEDIATE, IMMEDIATE, 300, 80036, 80036, 5)),
]


def gtid_fields(e: ev.GtidEvent) -> tuple[Any, ...]:
    return (e.last_committed, e.sequence_number, e.immediate_commit_timestamp, e.original_commit_timestamp,
            e.transaction_length, e.immediate_server_version, e.original_server_version, e.commit_group_ticket)


@pytest.mark.parametrize(("tail", "expected"), [b[1:] for b in GTID_BODIES], ids=[b[0] for b in GTID_BODIES])
def test_gtid_body_parts_a_body_lacks_are_none(tail: bytes, expected: tuple[Any, ...]) -> None:
    e = parser80().parse(event(E.GTID_LOG_EVENT, HEAD + tail))
    assert isinstance(e, ev.GtidEvent) and (e.sid, e.gno, e.gtid) == (SID, GNO, f"{SID}:{GNO}")
    assert not e.commit_flag and gtid_fields(e) == expected


@pytest.mark.parametrize("tail", [
    CLOCK + COMMIT_TS_RELAYED[:10],  # bit 55 says an original timestamp follows; 3 of its 7 bytes do
    CLOCK + COMMIT_TS + TRX_LENGTH + VERSION_RELAYED[:6],  # bit 31 says an original version follows
    CLOCK + COMMIT_TS + b"\xfc\x2c",  # a 3-byte packed length cut after 2
], ids=["original-ts", "original-version", "trx-length"])
def test_gtid_body_cut_inside_a_part_is_malformed(tail: bytes) -> None:
    with pytest.raises(MalformedEventError):
        parser80().parse(event(E.GTID_LOG_EVENT, HEAD + tail))


def serialized(fields: bytes, last_non_ignorable: int) -> bytes:
    """A serialization-library message: format version, message size counting from its first
    byte, the last non-ignorable field id (it bounds the fields a reader may not skip; every
    field here is one sluice reads), then the fields."""
    rest = write_varlen(last_non_ignorable) + fields
    n = len(write_varlen(1)) + len(rest)
    size = next(n + k for k in range(1, 10) if len(write_varlen(n + k)) == k)
    return write_varlen(1) + write_varlen(size) + rest


def test_tagged_gtid_relayed_with_original_timestamp_version_and_ticket() -> None:
    f = write_varlen
    fields = (
        f(0) + f(1) + f(1) + b"".join(f(b) for b in SID.bytes) + f(2) + write_varlen_signed(GNO)
        + f(3) + f(5) + b"batch" + f(4) + write_varlen_signed(9) + f(5) + write_varlen_signed(10)
        + f(6) + f(IMMEDIATE) + f(7) + f(ORIGINAL) + f(8) + f(420)
        + f(9) + f(80403) + f(10) + f(80036) + f(11) + f(12)
    )
    p = EventParser(ParserConfig(plan_for=stub_plan_for))
    p.parse(fde_event("8.4.3", MYSQL_84))
    e = p.parse(event(E.GTID_TAGGED_LOG_EVENT, serialized(fields, 11)))
    assert isinstance(e, ev.GtidEvent) and e.commit_flag and e.gtid == f"{SID}:batch:{GNO}"
    assert gtid_fields(e) == (9, 10, IMMEDIATE, ORIGINAL, 420, 80403, 80036, 12)


# -- QUERY status variables -----------------------------------------------------------------------

FLAGS2 = b"\x00" + struct.pack("<I", 0x4000)  # Q_FLAGS2_CODE
SQL_MODE = b"\x01" + struct.pack("<Q", 1168113696)  # Q_SQL_MODE_CODE
CATALOG = b"\x06\x03std"  # Q_CATALOG_NZ_CODE
CHARSET = b"\x04" + struct.pack("<HHH", 255, 255, 255)  # Q_CHARSET_CODE
UTF8MB4 = b"\x12" + struct.pack("<H", 255)  # Q_DEFAULT_COLLATION_FOR_UTF8MB4

# Query_log_event::write writes the codes in increasing order, each only when it applies:
# Q_SQL_REQUIRE_PRIMARY_KEY (19) for CREATE/ALTER TABLE, Q_DEFAULT_TABLE_ENCRYPTION (20) for
# CREATE DATABASE without an ENCRYPTION clause, one byte each (the header's table says 2; the
# writer and the reader use 1).
QUERIES: list[tuple[str, bytes, bytes, dict[str, Any]]] = [
    ("create-table", b"CREATE TABLE t (id INT PRIMARY KEY, at TIMESTAMP)",
     FLAGS2 + SQL_MODE + CATALOG + CHARSET
     + b"\x0c\x01shop\x00"  # Q_UPDATED_DB_NAMES: one name, NUL-terminated
     + b"\x10\x01"  # Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP
     + b"\x11" + struct.pack("<Q", 4242)  # Q_DDL_LOGGED_WITH_XID
     + UTF8MB4 + b"\x13\x01",  # Q_SQL_REQUIRE_PRIMARY_KEY
     {"updated_db_names": ("shop",), "explicit_defaults_for_timestamp": 1, "ddl_xid": 4242,
      "default_collation_for_utf8mb4": 255, "sql_require_primary_key": 1, "default_table_encryption": None}),
    ("create-database", b"CREATE DATABASE archive",
     FLAGS2 + SQL_MODE + CATALOG + CHARSET + b"\x0c\x01archive\x00" + b"\x11" + struct.pack("<Q", 4243)
     + UTF8MB4 + b"\x14\x00",  # Q_DEFAULT_TABLE_ENCRYPTION
     {"updated_db_names": ("archive",), "ddl_xid": 4243, "default_table_encryption": 0,
      "sql_require_primary_key": None}),
    ("multi-table-update", b"UPDATE a.t, b.t SET a.t.at = NOW(6) WHERE a.t.id = b.t.id",
     FLAGS2 + SQL_MODE + CATALOG
     + b"\x03" + struct.pack("<HH", 5, 2)  # Q_AUTO_INCREMENT: increment, offset
     + CHARSET + b"\x05\x06+02:00"  # Q_TIME_ZONE_CODE
     + b"\x07" + struct.pack("<H", 4)  # Q_LC_TIME_NAMES_CODE
     + b"\x08" + struct.pack("<H", 8)  # Q_CHARSET_DATABASE_CODE
     + b"\x09" + struct.pack("<Q", 0b11)  # Q_TABLE_MAP_FOR_UPDATE_CODE
     + b"\x0c\xfe"  # Q_UPDATED_DB_NAMES: OVER_MAX_DBS_IN_EVENT_MTS, no names follow
     + b"\x0d" + (654321).to_bytes(3, "little")  # Q_MICROSECONDS
     + UTF8MB4,
     {"auto_increment_increment": 5, "auto_increment_offset": 2, "time_zone": "+02:00", "lc_time_names": 4,
      "charset_database": 8, "table_map_for_update": 3, "updated_db_names": (), "microseconds": 654321,
      "ddl_xid": None}),
]


@pytest.mark.parametrize(("sql", "status", "expected"), [q[1:] for q in QUERIES], ids=[q[0] for q in QUERIES])
def test_query_status_variables_8_0_writes(sql: bytes, status: bytes, expected: dict[str, Any]) -> None:
    e = parser80().parse(event(E.QUERY_EVENT, query_body(sql, status)))
    assert isinstance(e, ev.QueryEvent) and (e.schema, e.query, e.unparsed_status) == ("shop", sql, b"")
    assert (e.flags2, e.sql_mode, e.catalog, e.charset) == (0x4000, 1168113696, "std", (255, 255, 255))
    assert {name: getattr(e, name) for name in expected} == expected


@pytest.mark.parametrize("code", [14, 15, 21], ids=["Q_COMMIT_TS", "Q_COMMIT_TS2", "Q_ENABLE_CASCADE_TRIGGERS"])
def test_query_reader_stops_at_a_code_it_does_not_read(code: int) -> None:
    # Query_event's reader jumps to the end of the status block at a code it has no case for (the
    # writer keeps codes in increasing order for that): 14 and 15 in every release, 21 in those
    # before its Q_ENABLE_CASCADE_TRIGGERS. sluice keeps the rest raw.
    sql = b"CREATE TABLE t (id INT PRIMARY KEY)"
    status = FLAGS2 + SQL_MODE + UTF8MB4 + bytes([code, 1])
    e = parser80().parse(event(E.QUERY_EVENT, query_body(sql, status)))
    assert isinstance(e, ev.QueryEvent) and (e.sql_mode, e.default_collation_for_utf8mb4) == (1168113696, 255)
    assert (e.unparsed_status, e.schema, e.query) == (bytes([code, 1]), "shop", sql)


# -- HEARTBEAT_LOG_EVENT_V2 ---------------------------------------------------------------------------


@pytest.mark.parametrize("crc", [True, False], ids=["crc32", "no-checksum"])
def test_heartbeat_v2_position_past_4_gib(crc: bool) -> None:
    # Heartbeat::encode: the file name field, the position field (its length the packed
    # position's size, then the packed position), the end mark. Binlog_sender sends the event
    # without padding, the header's log_pos the position cut to 32 bits.
    name, position = b"binlog.000042", 5_000_000_000
    body = b"\x01" + packed(len(name)) + name + b"\x02" + packed(len(packed(position))) + packed(position) + b"\x00"
    assert body[-12:-10] == b"\x02\x09"  # 9 bytes: 0xfe and the u64
    e = parser80().parse(event(E.HEARTBEAT_LOG_EVENT_V2, body, crc=crc, log_pos=position & 0xFFFF_FFFF))
    assert isinstance(e, ev.HeartbeatEvent) and (e.log_file, e.position) == ("binlog.000042", position)
    assert e.header.log_pos == position - (1 << 32)


# -- group replication view change ----------------------------------------------------------------


def binlog_file(*events: tuple[int, bytes, int]) -> bytes:
    """A binlog file of ``(type, body, flags)`` events, each ``log_pos`` the end of the event."""
    out, pos = [BINLOG_MAGIC], 4
    for code, body, flags in events:
        end = pos + 19 + len(body) + 4
        out.append(event(code, body, log_pos=end, flags=flags))
        pos = end
    return b"".join(out)


def test_view_change_transaction_is_committed_empty_and_consumes_its_gtid() -> None:
    # certification_handler.cc logs a view change as GTID, BEGIN, VIEW_CHANGE, COMMIT; the
    # VIEW_CHANGE (view id char[40], seq_number u64, cert info count u32, then key u16-prefixed and
    # value u32-prefixed) carries LOG_EVENT_IGNORABLE_F. sluice keeps it as UnknownEvent.
    key, value = bytes(range(16)), MysqlGtidSet.parse(f"{SID}:1-76").encode()  # a write-set hash, a GTID set
    view = (b"17040672000000000:3".ljust(40, b"\0") + struct.pack("<QI", 77, 1)
            + struct.pack("<H", len(key)) + key + struct.pack("<I", len(value)) + value)

    def gtid(gno: int, flags: int = 0, clock: bytes = CLOCK) -> tuple[int, bytes, int]:
        body = bytes([flags]) + SID.bytes + struct.pack("<Q", gno) + clock + COMMIT_TS + TRX_LENGTH + VERSION
        return E.GTID_LOG_EVENT, body, 0

    def query(sql: bytes) -> tuple[int, bytes, int]:
        return E.QUERY_EVENT, query_body(sql, FLAGS2 + SQL_MODE + CATALOG + CHARSET + UTF8MB4), 0

    previous = MysqlGtidSet.parse(f"{SID}:1-75").encode()
    data = binlog_file(
        (E.FORMAT_DESCRIPTION_EVENT, fde_body("8.0.36", MYSQL_80), 0),
        (E.PREVIOUS_GTIDS_LOG_EVENT, previous, 0),
        gtid(76, 1), query(b"CREATE TABLE orders (id INT, note VARCHAR(20)) CHARSET utf8mb4"),
        gtid(77, 1, b"\x02" + bytes(16)), query(b"BEGIN"),  # group-made GTID: clocks 0
        (E.VIEW_CHANGE_EVENT, view, LOG_EVENT_IGNORABLE_F), query(b"COMMIT"),
        gtid(78), query(b"BEGIN"), (E.TABLE_MAP_EVENT, SIMPLE_TM, 0),
        (E.WRITE_ROWS_EVENT_V2, rows_v2(TID, 2, b"\x03", b"\x00" + struct.pack("<i", 7) + b"\x01x"), 0),
        (E.XID_EVENT, struct.pack("<Q", 99), 0),
    )
    capture = ChangeCapture(CaptureConfig(), Checkpoint("binlog.000001", 4))
    txs = list(capture.feed_file("binlog.000001", "binlog.000001", iter_raw_spans(io.BytesIO(data))))
    assert [(t.transaction.gtid, t.transaction.kind, t.row_count, str(t.end.gtid_set)) for t in txs] == [
        (f"{SID}:76", "ddl", 0, f"{SID}:1-76"), (f"{SID}:77", "dml", 0, f"{SID}:1-77"),
        (f"{SID}:78", "dml", 1, f"{SID}:1-78")]
    unknown = [e for _, _, e in txs[1].transaction.events if isinstance(e, ev.UnknownEvent)]
    assert len(unknown) == 1 and unknown[0].header.type_code == E.VIEW_CHANGE_EVENT
    assert unknown[0].raw == view and unknown[0].header.flags & LOG_EVENT_IGNORABLE_F
    record = txs[2].records[0]
    assert (record.op, record.db, record.table, record.gtid) == ("insert", "shop", "orders", f"{SID}:78")
    assert record.after == {"id": 7, "note": "x"}
