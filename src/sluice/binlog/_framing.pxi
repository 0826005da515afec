# Included by _rowcore.pyx: framing, the twin of ``sluice.binlog.framing`` (see its docstring).
#
# ``whole_events`` walks the event headers of a file's block. ``events_of`` finds the events of
# some types in a block without looking at the others. A replica receives every event as one packet: a 4-byte packet header (length, sequence id), an OK
# byte (0x00), then the event. ``stream_events`` takes the packets already in a connection's receive
# buffer and copies their events into one block, the shape of a binlog file's bytes, so that the
# capture reads a stream as it reads a file (``ChangeCapture.feed_block``). It takes only events
# whose offsets follow from their sizes, and stops before the first packet that needs the
# per-payload path (``ReplicationStream``): one that is cut off, 16 MiB or more, out of sequence, not
# OK-prefixed (EOF, error), or an event the server made up or that moves the position (ROTATE,
# FORMAT_DESCRIPTION, heartbeats, LOG_EVENT_ARTIFICIAL_F, a log_pos ahead of the count), or whose
# size disagrees with its packet. It never reads outside ``buf[pos:end]``.

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE

def whole_events(bytes buf, Py_ssize_t pos, Py_ssize_t limit):
    """``(end, bad)``: walking event headers from ``pos`` over the events that start before
    ``limit``, the end of the last one that lies whole in ``buf``, and the offset of an event whose
    header declares fewer than 19 bytes (-1 when none was met; the walk stops there)."""
    cdef const uint8_t *b = <const uint8_t *>PyBytes_AS_STRING(buf)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(buf)
    cdef uint32_t size
    if pos < 0:
        raise ValueError("negative start")
    while pos < limit and n - pos >= 19:
        size = _u32(b + pos + 9)
        if size < 19:
            return pos, pos
        if size > n - pos:
            break
        pos += size
    return pos, -1


def events_of(bytes buf, Py_ssize_t pos, Py_ssize_t end, bytes wanted):
    """The offsets of the events in ``buf[pos:end]`` (whole events back to back) whose type code
    ``t`` has ``wanted[t]`` non-zero; it stops at an event that is not whole or declares fewer than
    19 bytes."""
    cdef const uint8_t *b = <const uint8_t *>PyBytes_AS_STRING(buf)
    cdef const uint8_t *w = <const uint8_t *>PyBytes_AS_STRING(wanted)
    cdef Py_ssize_t nw = PyBytes_GET_SIZE(wanted)
    cdef uint32_t size
    if pos < 0 or end > PyBytes_GET_SIZE(buf):
        raise ValueError("events_of: range outside the buffer")
    out = []
    while end - pos >= 19:
        size = _u32(b + pos + 9)
        if size < 19 or size > end - pos:
            break
        if b[pos + 4] < nw and w[b[pos + 4]]:
            out.append(pos)
        pos += size
    return out


cdef enum:
    _T_ROTATE = 4
    _T_FORMAT_DESCRIPTION = 15
    _T_HEARTBEAT = 27
    _T_HEARTBEAT_V2 = 41
    _LOG_EVENT_ARTIFICIAL_F = 0x20
    _MAX_PACKET = 0xFFFFFF


def stream_events(bytearray buf, Py_ssize_t pos, Py_ssize_t end, int seq, long long next_pos):
    """``(pos, seq, block, next_pos)``: the events of the whole packets in ``buf[pos:end]`` that
    start with sequence id ``seq``, copied back to back into ``block`` (empty when none qualifies),
    and the buffer offset, sequence id and binlog offset after them (see the comment above)."""
    if pos < 0 or end > PyByteArray_GET_SIZE(buf) or pos > end:
        raise ValueError("stream_events: range outside the buffer")
    cdef const uint8_t *b = <const uint8_t *>PyByteArray_AS_STRING(buf)
    cdef Py_ssize_t p = pos, total = 0, length, count = 0
    cdef const uint8_t *e
    cdef uint32_t size, log_pos
    cdef int s = seq & 0xFF
    cdef long long at = next_pos
    while end - p >= 4:
        length = b[p] | (b[p + 1] << 8) | (b[p + 2] << 16)
        if length == _MAX_PACKET or length > end - p - 4 or b[p + 3] != s or length < 20 or b[p + 4] != 0:
            break
        e = b + p + 5
        size = _u32(e + 9)
        log_pos = _u32(e + 13)
        if (size != length - 1 or e[4] == _T_ROTATE or e[4] == _T_FORMAT_DESCRIPTION or e[4] == _T_HEARTBEAT
                or e[4] == _T_HEARTBEAT_V2 or (e[17] & _LOG_EVENT_ARTIFICIAL_F)
                or (log_pos != 0 and <long long>log_pos - size > at)):
            break
        at += size
        total += size
        s = (s + 1) & 0xFF
        p += 4 + length
        count += 1
    if count == 0:
        return pos, seq, b"", next_pos
    block = PyBytes_FromStringAndSize(NULL, total)
    cdef char *out = PyBytes_AS_STRING(block)
    cdef Py_ssize_t q = pos
    while q < p:
        length = b[q] | (b[q + 1] << 8) | (b[q + 2] << 16)
        memcpy(out, b + q + 5, length - 1)
        out += length - 1
        q += 4 + length
    return p, s, block, at


def row_packets(bytearray buf, Py_ssize_t pos, Py_ssize_t end, int seq, Py_ssize_t eof_limit):
    """``(pos, seq, block, ends)``: the payloads of the whole packets in ``buf[pos:end]`` that start
    with sequence id ``seq`` and are plainly text rows of a result set, copied back to back into
    ``block``, with the offset in ``block`` where each ends as little-endian int64s in ``ends``
    (both empty when none qualifies), and the buffer offset and sequence id after them. It stops
    before a packet that is cut off, of 16 MiB or more, out of sequence, empty, an ERR (0xFF) or a
    0xFE packet shorter than ``eof_limit`` (the end of the rows)."""
    if pos < 0 or end > PyByteArray_GET_SIZE(buf) or pos > end:
        raise ValueError("row_packets: range outside the buffer")
    cdef const uint8_t *b = <const uint8_t *>PyByteArray_AS_STRING(buf)
    cdef Py_ssize_t p = pos, total = 0, length, count = 0
    cdef int s = seq & 0xFF
    while end - p >= 4:
        length = b[p] | (b[p + 1] << 8) | (b[p + 2] << 16)
        if (length == _MAX_PACKET or length > end - p - 4 or b[p + 3] != s or length == 0 or b[p + 4] == 0xFF
                or (b[p + 4] == 0xFE and length < eof_limit)):
            break
        total += length
        s = (s + 1) & 0xFF
        p += 4 + length
        count += 1
    if count == 0:
        return pos, s, b"", b""
    block = PyBytes_FromStringAndSize(NULL, total)
    ends = PyBytes_FromStringAndSize(NULL, count * 8)
    cdef char *out = PyBytes_AS_STRING(block)
    cdef char *e = PyBytes_AS_STRING(ends)
    cdef Py_ssize_t q = pos, at = 0
    cdef uint64_t stop
    cdef int k
    while q < p:
        length = b[q] | (b[q + 1] << 8) | (b[q + 2] << 16)
        memcpy(out + at, b + q + 4, length)
        at += length
        stop = <uint64_t>at
        for k in range(8):
            e[k] = <char>((stop >> (8 * k)) & 0xFF)
        e += 8
        q += 4 + length
    return p, s, block, ends
