"""Packet framing: a 3-byte little-endian payload length, a 1-byte sequence id, the payload.

This module owns the split of one logical payload into packets of at most 0xFFFFFF bytes (a payload
that is an exact multiple of that size ends with an empty packet), the sequence id that counts
packets within one command exchange (modulo 256), and ``PacketAssembler``, which takes bytes in
arbitrary chunks and gives back complete logical payloads, joining the packets of payloads of
16 MiB and more. The assembler also carries the binlog stream, so its hot path is cheap: a socket
can ``recv_into`` its buffer directly (``write_buffer`` / ``commit``), and a payload that fits one
packet costs one slice of that buffer. See ``sql/net_serv.cc`` in the server.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from sluice.errors import ProtocolError
from sluice.wire.constants import MAX_PACKET_PAYLOAD

_HEADER = struct.Struct("<I")  # read 4 bytes: low 24 bits length, high 8 bits sequence id
HEADER_SIZE = 4
_DEFAULT_CAPACITY = 1 << 20


def packet_header(length: int, seq: int) -> bytes:
    """The 4 header bytes of one packet."""
    return _HEADER.pack(length | ((seq & 0xFF) << 24))


def frame(payload: bytes | bytearray | memoryview, seq: int) -> tuple[bytes, int]:
    """Frame one logical payload as packets starting at sequence id ``seq``.

    Returns the bytes to send and the sequence id that follows the last packet.
    """
    n = len(payload)
    if n < MAX_PACKET_PAYLOAD:
        return packet_header(n, seq) + bytes(payload), (seq + 1) & 0xFF
    view = memoryview(payload)
    parts: list[bytes | memoryview] = []
    offset = 0
    while True:
        chunk = view[offset : offset + MAX_PACKET_PAYLOAD]
        parts.append(packet_header(len(chunk), seq))
        parts.append(chunk)
        seq = (seq + 1) & 0xFF
        offset += len(chunk)
        if len(chunk) < MAX_PACKET_PAYLOAD:
            break
    return b"".join(parts), seq


class PacketAssembler:
    """Turns a byte stream into logical payloads, checking sequence ids.

    ``expected_seq`` is the sequence id the next packet must carry; after a complete payload it is
    also the sequence id of the next packet this side sends in the same exchange. A new command
    starts at 0: call ``reset_sequence`` (the connection does this when it sends a command).
    """

    __slots__ = ("_buf", "_end", "_parts", "_pos", "_view", "expected_seq")

    def __init__(self, capacity: int = _DEFAULT_CAPACITY) -> None:
        self._buf = bytearray(max(capacity, 64))
        self._view = memoryview(self._buf)
        self._pos = 0  # first unread byte
        self._end = 0  # end of received bytes
        self._parts: list[bytes] = []  # pieces of a payload of 16 MiB or more
        self.expected_seq = 0

    def reset_sequence(self, seq: int = 0) -> None:
        """Expect sequence id ``seq`` next (0 when a new command starts)."""
        self.expected_seq = seq & 0xFF

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as (part of) a payload."""
        return self._end - self._pos

    def has_packet(self) -> bool:
        """Whether a whole packet (not necessarily a whole payload) waits in the buffer."""
        pos = self._pos
        if self._end - pos < HEADER_SIZE:
            return False
        return pos + HEADER_SIZE + (_HEADER.unpack_from(self._buf, pos)[0] & 0xFFFFFF) <= self._end

    def write_buffer(self, min_free: int = 65536) -> memoryview:
        """Free space at the end of the buffer for ``recv_into``; follow with ``commit(n)``."""
        if len(self._buf) - self._end < min_free:
            self._make_room(min_free)
        return self._view[self._end :]

    def commit(self, n: int) -> None:
        """Mark ``n`` bytes written into ``write_buffer()`` as received."""
        if n < 0 or self._end + n > len(self._buf):
            raise ValueError(f"commit({n}) exceeds the free space of the buffer")
        self._end += n

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes (any chunking)."""
        n = len(data)
        if n == 0:
            return
        if len(self._buf) - self._end < n:
            self._make_room(n)
        self._view[self._end : self._end + n] = data
        self._end += n

    def next_payload(self) -> bytes | None:
        """The next complete logical payload, or None until more bytes arrive."""
        while True:
            pos = self._pos
            if self._end - pos < HEADER_SIZE:
                return None
            (word,) = _HEADER.unpack_from(self._buf, pos)
            length = word & 0xFFFFFF
            start = pos + HEADER_SIZE
            stop = start + length
            if stop > self._end:
                if stop - pos > len(self._buf):
                    self._make_room(stop - self._end)
                return None
            seq = word >> 24
            if seq != self.expected_seq:
                raise ProtocolError(
                    f"packet out of order: expected sequence id {self.expected_seq}, found {seq} "
                    f"(packet of {length} bytes); the connection is out of step with the server and "
                    "must be reopened"
                )
            self.expected_seq = (seq + 1) & 0xFF
            self._pos = stop
            if stop == self._end:
                self._pos = self._end = 0
            chunk = bytes(self._view[start:stop])
            if length == MAX_PACKET_PAYLOAD:
                self._parts.append(chunk)
                continue
            if self._parts:
                self._parts.append(chunk)
                payload = b"".join(self._parts)
                self._parts.clear()
                return payload
            return chunk

    def consume(self, scan: Callable[[bytearray, int, int, int], tuple[Any, ...]]) -> tuple[Any, ...]:
        """Let ``scan(buf, pos, end, seq)`` take complete packets straight from the buffer.

        ``buf[pos:end]`` holds the bytes received and not yet returned; ``seq`` is the sequence id
        the next packet must carry. ``scan`` returns a tuple whose first two items are the offset
        and the sequence id after the packets it took (it must check what ``next_payload`` checks);
        the rest is the caller's. Nothing is offered while a payload of 16 MiB or more is half read.
        """
        pos, end = self._pos, self._end
        if self._parts:
            end = pos
        result = scan(self._buf, pos, end, self.expected_seq)
        taken, seq = result[0], result[1]
        if not pos <= taken <= end:
            raise ValueError(f"consume: the scan ended at {taken}, outside {pos}..{end}")
        self.expected_seq = seq & 0xFF
        self._pos = taken
        if taken == self._end:
            self._pos = self._end = 0
        return result

    def _make_room(self, need: int) -> None:
        """Ensure ``need`` free bytes after the data: move unread bytes to the front, or grow."""
        unread = self._end - self._pos
        if unread + need <= len(self._buf):
            if self._pos:
                self._view[:unread] = self._view[self._pos : self._end]
                self._pos, self._end = 0, unread
            return
        size = len(self._buf)
        while size < unread + need:
            size *= 2
        buf = bytearray(size)
        buf[:unread] = self._view[self._pos : self._end]
        self._view.release()
        self._buf = buf
        self._view = memoryview(buf)
        self._pos, self._end = 0, unread


__all__ = ["HEADER_SIZE", "PacketAssembler", "frame", "packet_header"]
