"""Generic server responses and the protocol's variable-length encodings.

This module owns the length-encoded integers and strings used throughout the protocol (1 byte
below 0xFB, 0xFC + 2 bytes, 0xFD + 3 bytes, 0xFE + 8 bytes; 0xFB alone is SQL NULL in text rows),
NUL-terminated strings, and the three generic responses: OK (0x00, or 0xFE ending a result set
under CLIENT_DEPRECATE_EOF), ERR (0xFF, turned into a typed ``ServerError``) and the old EOF packet
(0xFE, shorter than 9 bytes). See ``sql/protocol_classic.cc`` in the server.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from sluice.errors import ProtocolError, ServerError, TruncatedError, server_error
from sluice.wire.constants import EOF_HEADER, ERR_HEADER, OK_HEADER, Capability

Buffer = bytes | bytearray | memoryview

_U16 = struct.Struct("<H")
_U24_LOW = struct.Struct("<HB")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_EOF_BODY = struct.Struct("<HH")  # warnings, status
_OK_STATUS = struct.Struct("<HH")  # status, warnings
_ERR_CODE = struct.Struct("<H")

NULL_MARKER = 0xFB


def _need(buf: Buffer, offset: int, size: int, what: str) -> None:
    if offset + size > len(buf):
        raise TruncatedError(
            f"{what}: expected {size} bytes at offset {offset}, found {max(len(buf) - offset, 0)}"
        )


def read_lenenc_int(buf: Buffer, offset: int) -> tuple[int, int]:
    """A length-encoded integer at ``offset``: returns (value, next offset).

    0xFB (NULL) and 0xFF (ERR) are not integers and raise ``ProtocolError``.
    """
    _need(buf, offset, 1, "length-encoded integer")
    first = buf[offset]
    if first < 0xFB:
        return first, offset + 1
    if first == 0xFC:
        _need(buf, offset + 1, 2, "2-byte length-encoded integer")
        return _U16.unpack_from(buf, offset + 1)[0], offset + 3
    if first == 0xFD:
        _need(buf, offset + 1, 3, "3-byte length-encoded integer")
        low, high = _U24_LOW.unpack_from(buf, offset + 1)
        return low | (high << 16), offset + 4
    if first == 0xFE:
        _need(buf, offset + 1, 8, "8-byte length-encoded integer")
        return _U64.unpack_from(buf, offset + 1)[0], offset + 9
    raise ProtocolError(
        f"expected a length-encoded integer at offset {offset}, found first byte {first:#04x}"
    )


def read_lenenc_bytes(buf: Buffer, offset: int) -> tuple[bytes, int]:
    """A length-encoded string at ``offset``: returns (raw bytes, next offset)."""
    length, offset = read_lenenc_int(buf, offset)
    _need(buf, offset, length, "length-encoded string")
    return bytes(buf[offset : offset + length]), offset + length


def read_nul_bytes(buf: Buffer, offset: int, what: str = "NUL-terminated string") -> tuple[bytes, int]:
    """A NUL-terminated string at ``offset``: returns (bytes without the NUL, offset after the NUL)."""
    data = bytes(buf) if isinstance(buf, memoryview) else buf
    end = data.find(b"\0", offset)
    if end < 0:
        raise TruncatedError(f"{what}: expected a NUL terminator after offset {offset}, found none")
    return bytes(buf[offset:end]), end + 1


def lenenc_int(value: int) -> bytes:
    """Encode a length-encoded integer."""
    if value < 0:
        raise ValueError(f"length-encoded integers are unsigned, got {value}")
    if value < 0xFB:
        return bytes((value,))
    if value < 1 << 16:
        return b"\xfc" + _U16.pack(value)
    if value < 1 << 24:
        return b"\xfd" + _U32.pack(value)[:3]
    return b"\xfe" + _U64.pack(value)


def lenenc_bytes(data: bytes) -> bytes:
    """Encode a length-encoded string."""
    return lenenc_int(len(data)) + data


@dataclass(frozen=True, slots=True)
class OkPacket:
    """OK_Packet: the command succeeded."""

    affected_rows: int
    last_insert_id: int
    status: int
    warnings: int
    info: str
    session_state: bytes = b""


@dataclass(frozen=True, slots=True)
class EofPacket:
    """EOF_Packet (before CLIENT_DEPRECATE_EOF): end of column definitions or rows."""

    warnings: int
    status: int


@dataclass(frozen=True, slots=True)
class ErrPacket:
    """ERR_Packet: the command failed."""

    errno: int
    sqlstate: str
    message: str

    def to_error(self) -> ServerError:
        """The typed ``ServerError`` for this packet (access denied, unknown table, ... by errno)."""
        return server_error(self.errno, self.sqlstate, self.message)


def is_ok(payload: Buffer) -> bool:
    """True when ``payload`` is an OK_Packet (0x00 header, at least 7 bytes)."""
    return len(payload) >= 7 and payload[0] == OK_HEADER


def is_err(payload: Buffer) -> bool:
    """True when ``payload`` is an ERR_Packet (0xFF header)."""
    return len(payload) >= 1 and payload[0] == ERR_HEADER


def is_eof(payload: Buffer) -> bool:
    """The old EOF packet: 0xFE and shorter than 9 bytes (a longer 0xFE is a length prefix)."""
    return len(payload) < 9 and len(payload) >= 1 and payload[0] == EOF_HEADER


def parse_ok(payload: Buffer, capabilities: int = Capability.CLIENT_PROTOCOL_41) -> OkPacket:
    """Parse an OK packet (header 0x00, or 0xFE when it ends a result set)."""
    if not payload or payload[0] not in (OK_HEADER, EOF_HEADER):
        found = f"{payload[0]:#04x}" if payload else "an empty payload"
        raise ProtocolError(f"expected an OK packet (0x00 or 0xFE), found {found}")
    affected, offset = read_lenenc_int(payload, 1)
    last_id, offset = read_lenenc_int(payload, offset)
    status = warnings = 0
    if capabilities & Capability.CLIENT_PROTOCOL_41:
        _need(payload, offset, 4, "OK packet status and warnings")
        status, warnings = _OK_STATUS.unpack_from(payload, offset)
        offset += 4
    elif capabilities & Capability.CLIENT_TRANSACTIONS:
        _need(payload, offset, 2, "OK packet status")
        (status,) = _U16.unpack_from(payload, offset)
        offset += 2
    session_state = b""
    if capabilities & Capability.CLIENT_SESSION_TRACK:
        if offset < len(payload):
            info_raw, offset = read_lenenc_bytes(payload, offset)
        else:
            info_raw = b""
        if status & 0x4000 and offset < len(payload):  # SERVER_SESSION_STATE_CHANGED
            session_state, offset = read_lenenc_bytes(payload, offset)
    else:
        info_raw = bytes(payload[offset:])
    return OkPacket(affected, last_id, status, warnings, info_raw.decode("utf-8", "replace"), session_state)


def parse_eof(payload: Buffer) -> EofPacket:
    """Parse an old-style EOF packet."""
    if not is_eof(payload):
        found = f"{payload[0]:#04x} and {len(payload)} bytes" if payload else "an empty payload"
        raise ProtocolError(f"expected an EOF packet (0xFE, under 9 bytes), found {found}")
    if len(payload) < 5:
        return EofPacket(0, 0)  # protocol 4.0 EOF: just the header
    warnings, status = _EOF_BODY.unpack_from(payload, 1)
    return EofPacket(warnings, status)


def parse_err(payload: Buffer) -> ErrPacket:
    """Parse an ERR packet; the SQLSTATE marker '#' is optional (early errors omit it)."""
    if not payload or payload[0] != ERR_HEADER:
        found = f"{payload[0]:#04x}" if payload else "an empty payload"
        raise ProtocolError(f"expected an ERR packet (0xFF), found {found}")
    _need(payload, 1, 2, "ERR packet error code")
    (errno,) = _ERR_CODE.unpack_from(payload, 1)
    offset = 3
    sqlstate = "HY000"
    if len(payload) >= 9 and payload[3] == 0x23:  # '#'
        sqlstate = bytes(payload[4:9]).decode("ascii", "replace")
        offset = 9
    message = bytes(payload[offset:]).decode("utf-8", "replace")
    return ErrPacket(errno, sqlstate, message)


def raise_if_err(payload: Buffer) -> None:
    """Raise the typed ``ServerError`` if ``payload`` is an ERR packet."""
    if is_err(payload):
        raise parse_err(payload).to_error()


__all__ = [
    "NULL_MARKER",
    "EofPacket",
    "ErrPacket",
    "OkPacket",
    "is_eof",
    "is_err",
    "is_ok",
    "lenenc_bytes",
    "lenenc_int",
    "parse_eof",
    "parse_err",
    "parse_ok",
    "raise_if_err",
    "read_lenenc_bytes",
    "read_lenenc_int",
    "read_nul_bytes",
]
