"""Decoder for TRANSACTION_PAYLOAD_EVENT (MySQL 8.0.20+ ``binlog_transaction_compression``).

Body (libs/mysql/binlog/event/control_events.h ``Transaction_payload_event``): fields of
``type, length, value`` in packed integers (1 = payload size, 2 = compression type: 0 ZSTD,
255 NONE, 3 = uncompressed size), closed by type 0, then the payload: whole events, back to
back, decoded by the same parser so table maps and filters apply as usual. The inflated size is
bounded by the declared uncompressed size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import zstandard

from sluice.binlog.decoders._reader import HEADER_SIZE_OFFSET, packed_int, take
from sluice.binlog.events import TransactionPayloadEvent
from sluice.binlog.header import HEADER_LEN, EventHeader
from sluice.errors import UnsupportedError

if TYPE_CHECKING:
    from sluice.binlog.decoders.context import DecodeContext

Body = bytes | memoryview
_END_MARK, _PAYLOAD_SIZE, _COMPRESSION_TYPE, _UNCOMPRESSED_SIZE = 0, 1, 2, 3
ZSTD, NONE = 0, 255
MAX_UNCOMPRESSED = 1 << 32


def decode_transaction_payload(header: EventHeader, body: Body, p: DecodeContext) -> TransactionPayloadEvent:
    """TRANSACTION_PAYLOAD_EVENT body -> the event with its inner events inflated and decoded."""
    pos, end = 0, len(body)
    size: int | None = None
    ctype = NONE
    usize: int | None = None
    while True:
        ftype, pos = packed_int(body, pos)
        if ftype == _END_MARK:
            break
        length, pos = packed_int(body, pos)
        value, pos = take(body, pos, length, "payload header field")
        if ftype in (_PAYLOAD_SIZE, _COMPRESSION_TYPE, _UNCOMPRESSED_SIZE):
            v, used = packed_int(value, 0)
            if used != length:
                raise ValueError("payload header field has trailing bytes")
            if ftype == _PAYLOAD_SIZE:
                size = v
            elif ftype == _COMPRESSION_TYPE:
                ctype = v
            else:
                usize = v
    if size is None:
        size = end - pos
    if pos + size != end:
        raise ValueError(f"payload declares {size} bytes, {end - pos} follow its header")
    raw = body[pos:end]
    if ctype == ZSTD:
        limit = usize if usize is not None else MAX_UNCOMPRESSED
        chunks: list[bytes] = []
        total = 0
        with zstandard.ZstdDecompressor().stream_reader(bytes(raw), read_across_frames=True) as r:
            while chunk := r.read(1 << 20):
                total += len(chunk)
                if total > limit:
                    raise ValueError(f"payload inflates beyond its declared {limit} bytes")
                chunks.append(chunk)
        data = b"".join(chunks)
    elif ctype == NONE:
        data = bytes(raw)
    else:
        raise UnsupportedError(f"transaction payload compression type {ctype} is not supported (only ZSTD)")
    if usize is not None and len(data) != usize:
        raise ValueError(f"payload inflated to {len(data)} bytes, header says {usize}")
    inner: list[Any] = []
    q, n = 0, len(data)
    while q < n:
        if q + HEADER_LEN > n:
            raise ValueError("payload ends inside an event header")
        esize = int.from_bytes(data[q + HEADER_SIZE_OFFSET : q + HEADER_SIZE_OFFSET + 4], "little")
        if esize < HEADER_LEN or q + esize > n:
            raise ValueError(f"inner event at payload offset {q} declares {esize} bytes")
        inner.append(p.parse_inner(data[q : q + esize]))
        q += esize
    return TransactionPayloadEvent(header, ctype, size, usize, tuple(inner))
