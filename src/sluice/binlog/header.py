"""The 19-byte common header that starts every binlog event (v4 format), and the fast builder
of the per-event frozen dataclasses.

Layout (little-endian, libbinlogevents ``Log_event_header``): timestamp u32, type code u8,
server id u32, event size u32 (header + body + checksum), log position u32 (end of the event in
its file, modulo 2^32; often 0 in events made up for a replica, and 0 inside transactions on
MariaDB 11.4+ with ``binlog_legacy_event_pos=OFF``, so a 0 says nothing by itself), flags u16.
``frozen_builder(cls)`` makes a function that builds a frozen slotted dataclass from all of its
fields, storing through the slot descriptors: a frozen dataclass's own ``__init__`` goes through
``object.__setattr__`` once per field, a large share of an event's cost on the hot path.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sluice.codegen import define

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

T = TypeVar("T")


def frozen_builder(cls: type[T]) -> Callable[..., T]:
    """A function ``(field1, field2, ...) -> cls`` taking every field of the frozen slotted
    dataclass ``cls`` positionally, in declaration order, and equal in effect to ``cls(...)``
    (``cls`` must have no ``__post_init__``)."""
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} is not a slotted dataclass without __post_init__")
    names = [f.name for f in dataclasses.fields(cls)]
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    namespace.update({f"_set_{n}": getattr(cls, n).__set__ for n in names})
    source = (
        f"def build_{cls.__name__}({', '.join(names)}):\n    o = _new(_cls)\n"
        + "".join(f"    _set_{n}(o, {n})\n" for n in names)
        + "    return o\n"
    )
    builder: Callable[..., T] = define(source, f"build_{cls.__name__}", namespace, f"frozen_builder {cls.__name__}")
    return builder


@dataclass(frozen=True, slots=True)
class EventHeader:
    """The common header of one event, fields in their on-disk order."""

    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int

    @property
    def artificial(self) -> bool:
        """True for events the server made up for the stream, which are in no binlog file (the fake
        ROTATE, MariaDB's fake GTID_LIST): those flagged ``LOG_EVENT_ARTIFICIAL_F``. A ``log_pos``
        of 0 does not make an event artificial: MariaDB 11.4+ writes it for every event inside a
        transaction."""
        return bool(self.flags & LOG_EVENT_ARTIFICIAL_F)


#: ``EventHeader(*fields)``, faster (one header per event).
build_header = frozen_builder(EventHeader)


def parse_header(buf: bytes | memoryview, offset: int = 0) -> EventHeader:
    """Decode the common header at ``offset``; raises ``struct.error`` when fewer than 19 bytes."""
    return build_header(*HEADER.unpack_from(buf, offset))
