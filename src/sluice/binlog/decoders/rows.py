"""Decoder for rows events: WRITE/UPDATE/DELETE v0 (PRE_GA), v1 and v2, PARTIAL_UPDATE_ROWS and
MariaDB's compressed rows events.

Body (rows_event.h ``Rows_event``): table id (6 bytes, 4 with a 6-byte post-header), flags u16,
and for v2 (10-byte post-header) an extra-data block (u16 length counting itself; tag 0 = NDB
info ``len, format, data``, tag 1 = partition id u16, plus the source partition id u16 for
updates). Then the column count (packed), the present-columns bitmap, for updates a second bitmap
for the after image, and the row images up to the end. MariaDB's compressed variants (166-171)
keep everything up to the bitmaps plain and compress the row images with
``binlog_buf_compress`` (MariaDB sql/log_event.cc ``row_log_event_uncompress``). The row images
themselves are decoded by the table's compiled row plan.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from sluice.binlog.constants import EventType as E
from sluice.binlog.decoders._reader import U16, U32, need, packed_int
from sluice.binlog.decoders.query import inflate_mariadb
from sluice.binlog.events import RowsEvent, RowsKind, SkippedRowsEvent
from sluice.binlog.header import EventHeader, frozen_builder

if TYPE_CHECKING:
    from sluice.binlog.decoders.context import DecodeContext

Body = bytes | memoryview

# type code -> (kind, compressed, partial)
ROWS_TYPES: dict[int, tuple[RowsKind, bool, bool]] = {
    E.PRE_GA_WRITE_ROWS_EVENT: ("write", False, False),
    E.PRE_GA_UPDATE_ROWS_EVENT: ("update", False, False),
    E.PRE_GA_DELETE_ROWS_EVENT: ("delete", False, False),
    E.WRITE_ROWS_EVENT_V1: ("write", False, False),
    E.UPDATE_ROWS_EVENT_V1: ("update", False, False),
    E.DELETE_ROWS_EVENT_V1: ("delete", False, False),
    E.WRITE_ROWS_EVENT_V2: ("write", False, False),
    E.UPDATE_ROWS_EVENT_V2: ("update", False, False),
    E.DELETE_ROWS_EVENT_V2: ("delete", False, False),
    E.PARTIAL_UPDATE_ROWS_EVENT: ("update", False, True),
    E.WRITE_ROWS_COMPRESSED_EVENT_V1: ("write", True, False),
    E.UPDATE_ROWS_COMPRESSED_EVENT_V1: ("update", True, False),
    E.DELETE_ROWS_COMPRESSED_EVENT_V1: ("delete", True, False),
    E.WRITE_ROWS_COMPRESSED_EVENT: ("write", True, False),
    E.UPDATE_ROWS_COMPRESSED_EVENT: ("update", True, False),
    E.DELETE_ROWS_COMPRESSED_EVENT: ("delete", True, False),
}
_V2_TYPES = frozenset({E.WRITE_ROWS_EVENT_V2, E.UPDATE_ROWS_EVENT_V2, E.DELETE_ROWS_EVENT_V2,
                       E.PARTIAL_UPDATE_ROWS_EVENT, E.WRITE_ROWS_COMPRESSED_EVENT,
                       E.UPDATE_ROWS_COMPRESSED_EVENT, E.DELETE_ROWS_COMPRESSED_EVENT})
_RW_V_EXTRAINFO_TAG, _RW_V_TAG_PART_INFO = 0, 1
_TID_FLAGS = struct.Struct("<IHH").unpack_from  # table id (low 4 bytes, high 2), flags
_build_rows = frozen_builder(RowsEvent)


def decode_rows(header: EventHeader, body: Body, p: DecodeContext) -> RowsEvent | SkippedRowsEvent:
    """Rows event body -> ``RowsEvent`` decoded by the table's row plan, or ``SkippedRowsEvent``."""
    tc = header.type_code
    kind, compressed, partial = ROWS_TYPES[tc]
    phl = p.post_header_len(tc, 10 if tc in _V2_TYPES else 8)
    partition_id = source_partition_id = None
    ndb_info = None
    if phl == 10 and len(body) >= 10 and body[8] == 2 and body[9] == 0:
        # v2 without extra data (the common case): table id, flags, extra-data length 2
        low, high, flags = _TID_FLAGS(body, 0)
        table_id = low | high << 32
        pos = 10
    else:
        table_id, flags, pos, partition_id, source_partition_id, ndb_info = _post_header(body, phl, kind)
    entry = p.table_entry(table_id, header)
    tm = entry.table_map
    if entry.plan is False:
        p.skip_rows()
        return SkippedRowsEvent(header, table_id, tm.schema, tm.table)
    ncols = body[pos]
    if ncols < 251:
        pos += 1
    else:
        ncols, pos = packed_int(body, pos)
    if ncols > tm.column_count:
        raise ValueError(f"rows event has {ncols} columns, its TABLE_MAP {tm.column_count}")
    nb = (ncols + 7) >> 3
    size = len(body)
    if pos + nb > size:
        need(body, pos, nb, "columns-present bitmap")
    present = int.from_bytes(body[pos : pos + nb], "little")
    pos += nb
    present_after = None
    if kind == "update":
        if pos + nb > size:
            need(body, pos, nb, "after-image bitmap")
        present_after = int.from_bytes(body[pos : pos + nb], "little")
        pos += nb
    plan = entry.plan or p.plan_of(entry)
    if compressed:
        data = inflate_mariadb(body, pos, "compressed rows")
        rows = plan.decode_rows(kind, data, 0, len(data), present, present_after, partial)
    else:
        rows = plan.decode_rows(kind, body, pos, size, present, present_after, partial)
    return _build_rows(header, kind, table_id, flags, tm, present, present_after, rows,
                       partition_id, source_partition_id, ndb_info)


def _post_header(body: Body, phl: int, kind: str) -> tuple[int, int, int, int | None, int | None, bytes | None]:
    """Table id, flags, the offset after the post-header (and v2 extra data), partition ids, NDB info."""
    if phl == 6:
        (table_id,) = U32.unpack_from(body, 0)
        pos = 4
    else:
        need(body, 0, 6, "table id")
        table_id = int.from_bytes(body[0:6], "little")
        pos = 6
    (flags,) = U16.unpack_from(body, pos)
    pos += 2
    partition_id = source_partition_id = None
    ndb_info = None
    if phl == 10:
        (extra_len,) = U16.unpack_from(body, pos)
        if extra_len < 2:
            raise ValueError(f"rows extra data length {extra_len} is below its own 2 bytes")
        end = pos + extra_len
        need(body, pos, extra_len, "rows extra data")
        q = pos + 2
        while q < end:
            tag = body[q]
            if tag == _RW_V_EXTRAINFO_TAG:
                n = body[q + 1]
                if n < 2 or q + 1 + n > end:
                    raise ValueError("NDB extra row info overruns the extra data")
                ndb_info = bytes(body[q + 1 : q + 1 + n])
                q += 1 + n
            elif tag == _RW_V_TAG_PART_INFO:
                (partition_id,) = U16.unpack_from(body, q + 1)
                q += 3
                if kind == "update":
                    (source_partition_id,) = U16.unpack_from(body, q)
                    q += 2
            else:
                break  # unknown tag: the rest of the extra data is not ours to read
        if q > end:
            raise ValueError("rows extra data overruns its declared length")
        pos = end
    return table_id, flags, pos, partition_id, source_partition_id, ndb_info
