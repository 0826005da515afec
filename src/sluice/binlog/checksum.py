"""CRC32 event checksums (``binlog_checksum=CRC32``).

A checksummed event ends in 4 bytes holding ``zlib.crc32`` of everything before them, header
included. Verification is on by default (``ParserConfig.verify_checksum``); a mismatch raises
``ChecksumMismatchError`` naming the file, offset and event type.
"""

from __future__ import annotations

import zlib

from sluice.binlog.constants import EventType
from sluice.errors import ChecksumMismatchError

CHECKSUM_LEN = 4


def crc32_matches(data: bytes | memoryview) -> bool:
    """True when the last 4 bytes of ``data`` are the CRC32 of the bytes before them."""
    n = len(data)
    if n < CHECKSUM_LEN:
        return False
    return zlib.crc32(data[: n - CHECKSUM_LEN]) == int.from_bytes(data[n - CHECKSUM_LEN :], "little")


def verify_crc32(
    data: bytes | bytearray | memoryview,
    type_code: int,
    *,
    file: str | None = None,
    offset: int | None = None,
) -> None:
    """Raise ``ChecksumMismatchError`` unless the event in ``data`` carries a valid CRC32."""
    n = len(data)
    computed = zlib.crc32(data[: n - CHECKSUM_LEN])
    stored = int.from_bytes(data[n - CHECKSUM_LEN :], "little")
    if computed != stored:
        try:
            name = EventType(type_code).name
        except ValueError:
            name = f"event type {type_code}"
        raise ChecksumMismatchError(
            f"CRC32 of {name} does not match: stored 0x{stored:08x}, computed 0x{computed:08x}; "
            "the binlog is corrupt or was read with the wrong checksum setting "
            "(ParserConfig.verify_checksum=False skips the check)",
            event_type=type_code,
            file=file,
            offset=offset,
        )
