"""The 19-byte common header that starts every binlog event (v4 format).

Layout (little-endian, libbinlogevents ``Log_event_header``): timestamp u32, type code u8,
server id u32, event size u32 (header + body + checksum), log position u32 (end of the event in
its file; 0 for artificial events and, on MariaDB 11.4+, inside transactions), flags u16.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

HEADER_LEN = 19
HEADER = struct.Struct("<IBIIIH")

# Header flags (binlog_event.h / MariaDB log_event.h).
LOG_EVENT_BINLOG_IN_USE_F = 0x1
LOG_EVENT_THREAD_SPECIFIC_F = 0x4
LOG_EVENT_SUPPRESS_USE_F = 0x8
LOG_EVENT_ARTIFICIAL_F = 0x20
LOG_EVENT_RELAY_LOG_F = 0x40
LOG_EVENT_IGNORABLE_F = 0x80
LOG_EVENT_SKIP_REPLICATION_F = 0x8000


@dataclass(frozen=True, slots=True)
class EventHeader:
    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int

    @property
    def artificial(self) -> bool:
        """True for events the server made up for the stream (fake ROTATE, fake FDE)."""
        return bool(self.flags & LOG_EVENT_ARTIFICIAL_F) or self.log_pos == 0


def parse_header(buf: bytes | memoryview, offset: int = 0) -> EventHeader:
    """Decode the common header at ``offset``; raises ``struct.error`` when fewer than 19 bytes."""
    return EventHeader(*HEADER.unpack_from(buf, offset))
