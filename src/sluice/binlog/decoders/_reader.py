"""Small bounded readers shared by the event decoders.

Each takes a buffer (``bytes`` or ``memoryview`` holding exactly one event body) and an offset
and returns ``(value, next_offset)``. They raise ``ValueError`` (or ``IndexError`` /
``struct.error`` from the underlying calls) when the body ends early; the parser turns every such
failure into ``MalformedEventError`` with the event's header, file and offset. Integer formats:
the protocol's packed (length-encoded) integer and the MySQL serialization library's
variable-length integer (``libs/mysql/serialization/variable_length_integers.h``).
"""

from __future__ import annotations

import struct

Buf = bytes | memoryview

U8 = struct.Struct("<B")
U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
U16X2 = struct.Struct("<HH")


def need(buf: Buf, pos: int, n: int, what: str) -> None:
    """Raise ``ValueError`` naming ``what`` unless ``n`` bytes follow ``pos`` in ``buf``."""
    if n < 0 or pos + n > len(buf):
        raise ValueError(f"{what}: needs {n} bytes at body offset {pos}, the body has {len(buf)}")


def take(buf: Buf, pos: int, n: int, what: str) -> tuple[bytes, int]:
    """The ``n`` bytes at ``pos`` as ``bytes``, and the offset after them."""
    need(buf, pos, n, what)
    return bytes(buf[pos : pos + n]), pos + n


def uint_le(buf: Buf, pos: int, n: int, what: str) -> tuple[int, int]:
    """The ``n``-byte little-endian unsigned integer at ``pos``, and the offset after it."""
    need(buf, pos, n, what)
    return int.from_bytes(buf[pos : pos + n], "little"), pos + n


def packed_int(buf: Buf, pos: int) -> tuple[int, int]:
    """Length-encoded integer: < 251 one byte, 0xfc + u16, 0xfd + u24, 0xfe + u64."""
    b = buf[pos]
    if b < 251:
        return b, pos + 1
    if b == 252:
        return U16.unpack_from(buf, pos + 1)[0], pos + 3
    if b == 253:
        need(buf, pos + 1, 3, "packed integer")
        return int.from_bytes(buf[pos + 1 : pos + 4], "little"), pos + 4
    if b == 254:
        return U64.unpack_from(buf, pos + 1)[0], pos + 9
    raise ValueError(f"invalid packed integer prefix 0x{b:02x} at body offset {pos}")


def cstring(buf: Buf, pos: int, end: int, what: str) -> tuple[bytes, int]:
    """NUL-terminated string starting at ``pos`` before ``end``; returns it without the NUL."""
    data = bytes(buf[pos:end])
    i = data.find(b"\0")
    if i < 0:
        raise ValueError(f"{what}: no terminating NUL byte")
    return data[:i], pos + i + 1


def read_varlen(buf: Buf, pos: int) -> tuple[int, int]:
    """Unsigned variable-length integer of the MySQL serialization library.

    The number of trailing 1-bits of the first byte, plus one, is the byte count (first byte
    0xff: nine bytes, the value is the following eight). The little-endian value of those bytes
    shifted right by the byte count is the integer.
    """
    first = buf[pos]
    if first == 0xFF:
        return U64.unpack_from(buf, pos + 1)[0], pos + 9
    n = 1
    while first & (1 << (n - 1)):
        n += 1
    need(buf, pos, n, "variable-length integer")
    return int.from_bytes(buf[pos : pos + n], "little") >> n, pos + n


def read_varlen_signed(buf: Buf, pos: int) -> tuple[int, int]:
    """Zig-zag signed variable-length integer (sign in the lowest bit)."""
    v, pos = read_varlen(buf, pos)
    return (-(v >> 1) - 1 if v & 1 else v >> 1), pos


def write_varlen(value: int) -> bytes:
    """Encode ``value`` (0 <= value < 2**64) as a serialization-library varlen integer."""
    if value < 0 or value >= 1 << 64:
        raise ValueError(f"varlen integer out of range: {value}")
    for n in range(1, 9):
        if value < 1 << (7 * n):
            return ((value << n) | ((1 << (n - 1)) - 1)).to_bytes(n, "little")
    return b"\xff" + value.to_bytes(8, "little")


def write_varlen_signed(value: int) -> bytes:
    """Encode ``value`` as a zig-zag signed varlen integer (inverse of ``read_varlen_signed``)."""
    return write_varlen((value << 1) if value >= 0 else ((-(value + 1)) << 1) | 1)


#: Offset of the event-size field inside the 19-byte common header.
HEADER_SIZE_OFFSET = 9
