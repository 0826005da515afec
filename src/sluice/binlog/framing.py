"""Framing: whole events out of a file's blocks and out of a replication stream's packets.

A reader that takes a binlog in blocks (``sluice.io.binlog_file.iter_raw_spans``) hands on only
whole events; ``whole_events`` walks the 19-byte headers to find where they end. A replication
stream (``sluice.io.replication``) receives each event in a packet of its own; ``stream_events``
copies the events of the packets already received into one block, so that a stream is read as a
file is. A snapshot's ``SELECT`` answers with a packet per text row; ``row_packets`` copies the rows
already received into one block with their ends, so that no row becomes an object of its own. The
compiled core does all three in C when it is in use; the loops below are their twins.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from sluice.binlog import rowplan
from sluice.binlog.header import HEADER_LEN

__all__ = ["events_of", "row_packets", "stream_events", "type_table", "whole_events"]

_SIZE = struct.Struct("<I").unpack_from
_SIZE_OFFSET = 9  # event size inside the common header
_SIZE_POS = struct.Struct("<II").unpack_from  # event size and log_pos, from offset 9 of the header
_MAX_PACKET = 0xFFFFFF
# Events whose offset does not follow from the sizes before them (sql/log_event.h: ROTATE,
# FORMAT_DESCRIPTION, HEARTBEAT, HEARTBEAT_V2): the stream reads those one payload at a time.
_OWN_OFFSET = frozenset({4, 15, 27, 41})
_LOG_EVENT_ARTIFICIAL_F = 0x20


def whole_events(buf: bytes, pos: int, limit: int) -> tuple[int, int]:
    """``(end, bad)``: walking the events of ``buf`` from ``pos`` that start before ``limit``, the
    end of the last one that lies whole in ``buf``; ``bad`` is the offset of an event whose header
    declares fewer than 19 bytes (the walk stops there), or -1."""
    core = rowplan.core()
    if core is not None:
        end, bad = core.whole_events(buf, pos, limit)
        return end, bad
    if pos < 0:
        raise ValueError("negative start")
    n = len(buf)
    while pos < limit and n - pos >= HEADER_LEN:
        (size,) = _SIZE(buf, pos + _SIZE_OFFSET)
        if size < HEADER_LEN:
            return pos, pos
        if size > n - pos:
            break
        pos += size
    return pos, -1


def type_table(types: Iterable[int]) -> bytes:
    """The ``wanted`` table of ``events_of`` for these event type codes."""
    table = bytearray(256)
    for t in types:
        table[t] = 1
    return bytes(table)


def events_of(buf: bytes, pos: int, end: int, wanted: bytes) -> list[int]:
    """The offsets of the events in ``buf[pos:end]`` (whole events back to back) whose type code
    ``t`` has ``wanted[t]`` non-zero (see ``type_table``); the walk stops at an event that is not
    whole or declares fewer than 19 bytes."""
    core = rowplan.core()
    if core is not None:
        found: list[int] = core.events_of(buf, pos, end, wanted)
        return found
    if pos < 0 or end > len(buf):
        raise ValueError("events_of: range outside the buffer")
    out = []
    while end - pos >= HEADER_LEN:
        (size,) = _SIZE(buf, pos + _SIZE_OFFSET)
        if size < HEADER_LEN or size > end - pos:
            break
        if buf[pos + 4] < len(wanted) and wanted[buf[pos + 4]]:
            out.append(pos)
        pos += size
    return out


def stream_events(buf: bytearray, pos: int, end: int, seq: int, next_pos: int) -> tuple[int, int, bytes, int]:
    """``(pos, seq, block, next_pos)``: the events of the whole packets in ``buf[pos:end]`` that
    start with sequence id ``seq``, copied back to back into ``block``, and the buffer offset,
    sequence id and binlog offset after them.

    It stops before the first packet that needs the stream's per-payload path: one cut off, of
    16 MiB or more, out of sequence, not OK-prefixed (EOF, error), shorter than an event header, or
    an event the server made up or that moves the position itself (ROTATE, FORMAT_DESCRIPTION,
    heartbeats, ``LOG_EVENT_ARTIFICIAL_F``, a ``log_pos`` ahead of the count), or whose size
    disagrees with its packet."""
    core = rowplan.core()
    if core is not None:
        out: tuple[int, int, bytes, int] = core.stream_events(buf, pos, end, seq, next_pos)
        return out
    if pos < 0 or end > len(buf) or pos > end:
        raise ValueError("stream_events: range outside the buffer")
    parts: list[bytes] = []
    seq &= 0xFF
    while end - pos >= 4:
        length = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
        if length == _MAX_PACKET or length > end - pos - 4 or buf[pos + 3] != seq or length < 1 + HEADER_LEN:
            break
        event = pos + 5
        size, log_pos = _SIZE_POS(buf, event + _SIZE_OFFSET)
        if (buf[pos + 4] != 0 or size != length - 1 or buf[event + 4] in _OWN_OFFSET
                or buf[event + 17] & _LOG_EVENT_ARTIFICIAL_F or (log_pos and log_pos - size > next_pos)):
            break
        parts.append(bytes(buf[event : event + size]))
        next_pos += size
        seq = (seq + 1) & 0xFF
        pos += 4 + length
    return pos, seq, b"".join(parts), next_pos


_END = struct.Struct("<q")


def row_packets(buf: bytearray, pos: int, end: int, seq: int, eof_limit: int) -> tuple[int, int, bytes, bytes]:
    """``(pos, seq, block, ends)``: the payloads of the whole packets in ``buf[pos:end]`` that start
    with sequence id ``seq`` and are plainly text rows of a result set, copied back to back into
    ``block``, with the offset in ``block`` where each ends as little-endian int64s in ``ends`` (both
    empty when none qualifies), and the buffer offset and sequence id after them.

    It stops before a packet that the result-set reader must see itself: one cut off, of 16 MiB or
    more, out of sequence, empty, an ERR (0xFF), or a 0xFE packet shorter than ``eof_limit`` (the
    EOF / OK that ends the rows; a row may start with 0xFE, an 8-byte length prefix)."""
    core = rowplan.core()
    if core is not None:
        out: tuple[int, int, bytes, bytes] = core.row_packets(buf, pos, end, seq, eof_limit)
        return out
    if pos < 0 or end > len(buf) or pos > end:
        raise ValueError("row_packets: range outside the buffer")
    parts: list[bytes] = []
    ends: list[bytes] = []
    at = 0
    seq &= 0xFF
    while end - pos >= 4:
        length = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
        if (length == _MAX_PACKET or length > end - pos - 4 or buf[pos + 3] != seq or length == 0
                or buf[pos + 4] == 0xFF or (buf[pos + 4] == 0xFE and length < eof_limit)):
            break
        parts.append(bytes(buf[pos + 4 : pos + 4 + length]))
        at += length
        ends.append(_END.pack(at))
        seq = (seq + 1) & 0xFF
        pos += 4 + length
    return pos, seq, b"".join(parts), b"".join(ends)
