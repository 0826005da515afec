"""One-line summaries of decoded binlog events, for ``sluice tail --events`` and ``sluice dump --events``.

Every event gets its type name, file, offset and size; ROTATE, GTID (MySQL and MariaDB), QUERY,
XID and FORMAT_DESCRIPTION events also get their decoded fields, in JSON-safe form.
"""

from __future__ import annotations

import base64
import dataclasses
import uuid
from enum import Enum
from typing import Any

from sluice.binlog.constants import EventType

_DETAILED = frozenset(
    {
        EventType.ROTATE_EVENT,
        EventType.QUERY_EVENT,
        EventType.QUERY_COMPRESSED_EVENT,
        EventType.XID_EVENT,
        EventType.GTID_LOG_EVENT,
        EventType.ANONYMOUS_GTID_LOG_EVENT,
        EventType.GTID_TAGGED_LOG_EVENT,
        EventType.GTID_EVENT,
        EventType.FORMAT_DESCRIPTION_EVENT,
        EventType.XA_PREPARE_LOG_EVENT,
    }
)
_SKIP_FIELDS = frozenset({"header", "raw", "post_header_lengths"})


def event_summary(event: Any, file: str, pos: int) -> dict[str, Any]:
    """JSON-safe summary of one event: type name, file, offset, size, and the fields of detailed types."""
    header = event.header
    try:
        name = EventType(header.type_code).name
    except ValueError:
        name = f"UNKNOWN({header.type_code})"
    out: dict[str, Any] = {"type": name, "file": file, "pos": pos, "size": header.event_size}
    if header.type_code in _DETAILED and dataclasses.is_dataclass(event):
        for field in dataclasses.fields(event):
            if field.name in _SKIP_FIELDS:
                continue
            out[field.name] = _plain(getattr(event, field.name))
    return out


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(raw).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)
