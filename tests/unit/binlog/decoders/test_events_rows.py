"""TABLE_MAP (metadata convention, optional metadata), rows-event framing of every version, the table
filter and TRANSACTION_PAYLOAD, on hand-built bytes with a stand-in row plan."""

from __future__ import annotations

import struct
import zlib

import pytest
import zstandard

from sluice.binlog import events as ev
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.constants import EventType as E
from sluice.errors import ChecksumMismatchError, MalformedEventError
from tests.unit.binlog.decoders.test_events import (
    SIMPLE_TM,
    event,
    packed,
    parser,
    query_body,
    table_map_body,
    tlv,
)

pytestmark = pytest.mark.unit

# Columns: id INT UNSIGNED, price DECIMAL(10,2), f FLOAT, d DOUBLE, name VARCHAR(300) utf8mb4,
# code CHAR(10) latin1, kind ENUM('a','b'), tags SET('x','y','z'), flags BIT(10), body BLOB,
# doc JSON, at DATETIME(3), geo POINT, t TIME(6), ts TIMESTAMP(2), y YEAR
TYPES = [
    T.LONG,
    T.NEWDECIMAL,
    T.FLOAT,
    T.DOUBLE,
    T.VARCHAR,
    T.STRING,
    T.STRING,
    T.STRING,
    T.BIT,
    T.BLOB,
    T.JSON,
    T.DATETIME2,
    T.GEOMETRY,
    T.TIME2,
    T.TIMESTAMP2,
    T.YEAR,
]
META = (
    b""  # LONG: none
    + bytes([10, 2])  # NEWDECIMAL: precision, scale
    + b"\x04"  # FLOAT: pack length
    + b"\x08"  # DOUBLE
    + struct.pack("<H", 1200)  # VARCHAR: max bytes, little-endian
    + bytes([T.STRING, 10])  # CHAR(10): real type, length
    + bytes([T.ENUM, 1])  # ENUM: real type, pack length
    + bytes([T.SET, 1])  # SET
    + bytes([2, 1])  # BIT(10): bits % 8, whole bytes
    + b"\x02"  # BLOB: length-prefix bytes
    + b"\x04"  # JSON
    + b"\x03"  # DATETIME2 fsp
    + b"\x04"  # GEOMETRY
    + b"\x06"  # TIME2 fsp
    + b"\x02"
)  # TIMESTAMP2 fsp
NULLABLE = bytes([0b11111110, 0b11111111])
NUMERIC = [0, 1, 2, 3]  # LONG, NEWDECIMAL, FLOAT, DOUBLE
CHARACTER = [4, 5, 9]  # VARCHAR, CHAR, BLOB (MySQL: GEOMETRY is not a character column)


def optional_metadata() -> bytes:
    names = [
        b"id",
        b"price",
        b"f",
        b"d",
        b"name",
        b"code",
        b"kind",
        b"tags",
        b"flags",
        b"body",
        b"doc",
        b"at",
        b"geo",
        b"t",
        b"ts",
        b"y",
    ]
    return (
        tlv(1, bytes([0b10000000]))  # SIGNEDNESS: MSB-first over numeric columns; id unsigned
        + tlv(2, packed(255) + packed(1) + packed(8) + packed(2) + packed(63))  # DEFAULT_CHARSET + exceptions
        + tlv(4, b"".join(packed(len(n)) + n for n in names))  # COLUMN_NAME
        + tlv(5, packed(3) + b"\x01x\x01y\x01z")  # SET_STR_VALUE
        + tlv(6, packed(2) + b"\x01a\x01b")  # ENUM_STR_VALUE
        + tlv(7, packed(1))  # GEOMETRY_TYPE: POINT
        + tlv(9, packed(0) + packed(0) + packed(4) + packed(8))  # PRIMARY_KEY_WITH_PREFIX
        + tlv(10, packed(45))  # ENUM_AND_SET_DEFAULT_CHARSET
        + tlv(12, bytes([0b11111111, 0b11111110]))  # COLUMN_VISIBILITY: y invisible
        + tlv(200, b"future")  # unknown field types are skipped
    )


def full_table_map() -> bytes:
    return table_map_body(77, b"shop", b"items", TYPES, META, NULLABLE, optional_metadata())


def test_table_map_metadata_convention() -> None:
    tm = parser().parse(event(E.TABLE_MAP_EVENT, full_table_map()))
    assert isinstance(tm, ev.TableMapEvent)
    assert (tm.table_id, tm.schema, tm.table, tm.column_count) == (77, "shop", "items", 16)
    assert tm.column_types == tuple(TYPES)
    assert tm.column_meta == (
        0,
        10 << 8 | 2,
        4,
        8,
        1200,
        T.STRING << 8 | 10,
        T.ENUM << 8 | 1,
        T.SET << 8 | 1,
        2 << 8 | 1,
        2,
        4,
        3,
        4,
        6,
        2,
        0,
    )
    assert tm.nullable == (False,) + (True,) * 15
    assert tm.raw == full_table_map()


def test_table_map_optional_metadata_folded_into_columns() -> None:
    tm = parser().parse(event(E.TABLE_MAP_EVENT, full_table_map()))
    assert isinstance(tm, ev.TableMapEvent)
    cols = tm.columns
    assert [c.name for c in cols][:5] == ["id", "price", "f", "d", "name"]
    assert [cols[i].unsigned for i in NUMERIC] == [True, False, False, False]
    assert cols[4].unsigned is None and cols[15].unsigned is None  # YEAR is not numeric
    assert [cols[i].collation for i in CHARACTER] == [255, 8, 63]
    assert cols[12].collation is None and cols[12].geometry_type == 1
    assert cols[6].enum_values == ("a", "b") and cols[7].set_values == ("x", "y", "z")
    assert cols[6].collation == cols[7].collation == 45
    assert tm.primary_key == ((0, 0), (4, 8))
    assert [c.visible for c in cols][-2:] == [True, False]


def test_table_map_without_optional_metadata() -> None:
    tm = parser().parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM))
    assert isinstance(tm, ev.TableMapEvent)
    assert tm.primary_key is None and all(c.name is None and c.collation is None for c in tm.columns)
    assert tm.column_meta == (0, 80)


def test_mariadb_counts_geometry_as_character() -> None:
    body = table_map_body(
        5,
        b"s",
        b"g",
        [T.GEOMETRY, T.VARCHAR],
        b"\x04" + struct.pack("<H", 20),
        b"\x03",
        tlv(3, packed(63) + packed(8)) + tlv(8, packed(1)),
    )  # COLUMN_CHARSET, SIMPLE_PRIMARY_KEY
    tm = parser("10.11.6-MariaDB").parse(event(E.TABLE_MAP_EVENT, body))
    assert isinstance(tm, ev.TableMapEvent)
    assert [c.collation for c in tm.columns] == [63, 8] and tm.primary_key == ((1, 0),)
    with pytest.raises(MalformedEventError, match="charsets"):
        parser().parse(event(E.TABLE_MAP_EVENT, body))  # MySQL: only one character column


def test_table_map_metadata_length_must_match() -> None:
    body = table_map_body(5, b"s", b"t", [T.LONG, T.VARCHAR], b"\x50\x00\x00", b"\x00")
    with pytest.raises(MalformedEventError, match="metadata"):
        parser().parse(event(E.TABLE_MAP_EVENT, body))


def test_vector_dimension_and_signedness_bitmap_length() -> None:
    body = table_map_body(
        6, b"s", b"v", [T.VECTOR], b"\x04", b"\x01", tlv(13, packed(3)) + tlv(3, packed(63))
    )
    tm = parser("9.1.0").parse(event(E.TABLE_MAP_EVENT, body))
    assert isinstance(tm, ev.TableMapEvent) and tm.columns[0].vector_dimension == 3
    assert tm.column_meta == (4,) and tm.columns[0].collation == 63


# -- rows ------------------------------------------------------------------------------------------


def rows_v1(table_id: int, ncols: int, bitmaps: bytes, images: bytes, flags: int = 1) -> bytes:
    """table id (6), flags u16, column count (packed), bitmap(s), row images."""
    return table_id.to_bytes(6, "little") + struct.pack("<H", flags) + packed(ncols) + bitmaps + images


def rows_v2(table_id: int, ncols: int, bitmaps: bytes, images: bytes, extra: bytes = b"") -> bytes:
    """v2 adds the extra-data length u16 (counting itself) and the extra data after the flags."""
    return (
        table_id.to_bytes(6, "little")
        + struct.pack("<HH", 1, 2 + len(extra))
        + extra
        + packed(ncols)
        + bitmaps
        + images
    )


TID = 0x0102030405


def test_write_rows_v1_framing() -> None:
    p = parser()
    p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM))
    r = p.parse(event(E.WRITE_ROWS_EVENT_V1, rows_v1(TID, 2, b"\x03", b"IMAGES")))
    assert isinstance(r, ev.RowsEvent)
    assert (r.kind, r.table_id, r.columns_present, r.columns_present_after, r.statement_end) == (
        "write",
        TID,
        3,
        None,
        True,
    )
    assert r.table.table == "orders" and r.rows == [("write", b"IMAGES", 3, None, False)]


def test_update_rows_v2_with_partition_info() -> None:
    p = parser()
    p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM))
    extra = b"\x01" + struct.pack("<HH", 3, 9)  # RW_V_TAG_PART_INFO: partition id, source partition id
    r = p.parse(event(E.UPDATE_ROWS_EVENT_V2, rows_v2(TID, 2, b"\x03\x01", b"BEFOREAFTER", extra)))
    assert isinstance(r, ev.RowsEvent)
    assert (r.kind, r.columns_present, r.columns_present_after) == ("update", 3, 1)
    assert (r.partition_id, r.source_partition_id) == (3, 9)
    assert r.rows == [("update", b"BEFOREAFTER", 3, 1, False)]


def test_delete_rows_v2_ndb_info_and_partial_update() -> None:
    p = parser()
    p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM))
    extra = b"\x00\x04\x01\xaa\xbb"  # RW_V_EXTRAINFO_TAG: length 4 (incl. length and format), format, data
    r = p.parse(event(E.DELETE_ROWS_EVENT_V2, rows_v2(TID, 2, b"\x02", b"D", extra)))
    assert isinstance(r, ev.RowsEvent) and r.kind == "delete" and r.ndb_info == b"\x04\x01\xaa\xbb"
    pu = p.parse(event(E.PARTIAL_UPDATE_ROWS_EVENT, rows_v2(TID, 2, b"\x03\x03", b"P")))
    assert isinstance(pu, ev.RowsEvent) and pu.rows == [("update", b"P", 3, 3, True)]


def test_pre_ga_rows_events() -> None:
    p = parser()
    p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM))
    r = p.parse(event(E.PRE_GA_DELETE_ROWS_EVENT, rows_v1(TID, 2, b"\x01", b"X")))
    assert isinstance(r, ev.RowsEvent) and r.kind == "delete"


def test_mariadb_compressed_rows() -> None:
    p = parser("10.11.6-MariaDB")
    p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM))
    images = b"row image bytes " * 20
    block = b"\x82" + len(images).to_bytes(2, "big") + zlib.compress(images)
    r = p.parse(event(E.UPDATE_ROWS_COMPRESSED_EVENT_V1, rows_v1(TID, 2, b"\x03\x03", block)))
    assert isinstance(r, ev.RowsEvent) and r.rows == [("update", images, 3, 3, False)]
    w = p.parse(event(E.WRITE_ROWS_COMPRESSED_EVENT, rows_v2(TID, 2, b"\x03", block)))
    assert isinstance(w, ev.RowsEvent) and w.rows[0][1] == images
    with pytest.raises(MalformedEventError, match="0x80"):
        p.parse(event(E.WRITE_ROWS_COMPRESSED_EVENT_V1, rows_v1(TID, 2, b"\x03", b"\x02\x00" + block[3:])))


def test_rows_without_table_map() -> None:
    p = parser()
    with pytest.raises(MalformedEventError, match="without a TABLE_MAP") as info:
        p.parse(event(E.WRITE_ROWS_EVENT_V2, rows_v2(TID, 2, b"\x03", b"")), file="b.1", offset=500)
    assert info.value.offset == 500
    p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM))
    p.parse(event(E.XID_EVENT, struct.pack("<Q", 1)))
    with pytest.raises(MalformedEventError):
        p.parse(event(E.WRITE_ROWS_EVENT_V2, rows_v2(TID, 2, b"\x03", b"")))


def test_rows_crc_and_truncation() -> None:
    p = parser()
    p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM))
    bad = bytearray(event(E.WRITE_ROWS_EVENT_V2, rows_v2(TID, 2, b"\x03", b"X")))
    bad[25] ^= 1
    with pytest.raises(ChecksumMismatchError):
        p.parse(bytes(bad))
    with pytest.raises(MalformedEventError):
        p.parse(event(E.UPDATE_ROWS_EVENT_V2, rows_v2(TID, 2, b"\x03", b"")[:13]))
    with pytest.raises(MalformedEventError, match="columns"):
        p.parse(event(E.WRITE_ROWS_EVENT_V2, rows_v2(TID, 9, b"\xff\x01", b"")))


def test_table_filter_skips_rows_without_decoding() -> None:
    seen: list[tuple[str, str]] = []

    def only_users(schema: str, table: str) -> bool:
        seen.append((schema, table))
        return table == "users"

    def no_plan(*_: object) -> object:
        raise AssertionError("a filtered table must not get a row plan")

    p = parser(table_filter=only_users, plan_for=no_plan)
    for _ in range(3):
        tm = p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM))
        assert isinstance(tm, ev.TableMapEvent)
        s = p.parse(event(E.WRITE_ROWS_EVENT_V2, rows_v2(TID, 2, b"\x03", b"whatever")))
        assert isinstance(s, ev.SkippedRowsEvent) and (s.schema, s.table, s.table_id) == (
            "shop",
            "orders",
            TID,
        )
        p.parse(event(E.XID_EVENT, struct.pack("<Q", 1)))
    assert p.skipped_rows_events == 3 and p.skipped_table_maps == 3
    assert seen == [("shop", "orders")]  # the filter's answer is cached per table


# -- TRANSACTION_PAYLOAD ---------------------------------------------------------------------------


def payload_body(inner: bytes, compress: bool = True) -> bytes:
    data = zstandard.ZstdCompressor().compress(inner) if compress else inner

    def field(ftype: int, value: int) -> bytes:  # type, length, value: packed integers
        return packed(ftype) + packed(len(packed(value))) + packed(value)

    fields = field(2, 0 if compress else 255) + field(3, len(inner)) + field(1, len(data))
    return fields + b"\x00" + data  # type 0 ends the header


def test_transaction_payload_inner_events() -> None:
    inner = (
        event(E.QUERY_EVENT, query_body(b"BEGIN", b""), crc=False, log_pos=0)
        + event(E.TABLE_MAP_EVENT, SIMPLE_TM, crc=False, log_pos=0)
        + event(E.WRITE_ROWS_EVENT_V2, rows_v2(TID, 2, b"\x03", b"R"), crc=False, log_pos=0)
        + event(E.XID_EVENT, struct.pack("<Q", 9), crc=False, log_pos=0)
    )
    p = parser()
    e = p.parse(event(E.TRANSACTION_PAYLOAD_EVENT, payload_body(inner)))
    assert isinstance(e, ev.TransactionPayloadEvent)
    assert (e.compression_type, e.uncompressed_size) == (0, len(inner))
    kinds = [type(x).__name__ for x in e.events]
    assert kinds == ["QueryEvent", "TableMapEvent", "RowsEvent", "XidEvent"]
    assert e.events[2].rows == [("write", b"R", 3, None, False)]
    plain = p.parse(event(E.TRANSACTION_PAYLOAD_EVENT, payload_body(inner, compress=False)))
    assert isinstance(plain, ev.TransactionPayloadEvent) and len(plain.events) == 4


def test_transaction_payload_inner_events_with_crc_and_damage() -> None:
    inner = event(E.XID_EVENT, struct.pack("<Q", 9))
    p = parser()
    e = p.parse(event(E.TRANSACTION_PAYLOAD_EVENT, payload_body(inner)))
    assert isinstance(e, ev.TransactionPayloadEvent) and e.events[0].xid == 9
    with pytest.raises(MalformedEventError):
        p.parse(event(E.TRANSACTION_PAYLOAD_EVENT, payload_body(inner[:-6])))
    body = bytearray(payload_body(inner))
    body[-3] ^= 0xFF
    with pytest.raises(MalformedEventError):
        p.parse(event(E.TRANSACTION_PAYLOAD_EVENT, bytes(body)))
