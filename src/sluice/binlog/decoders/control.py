"""Decoders for the events that frame a binlog: FORMAT_DESCRIPTION, ROTATE, STOP, heartbeats,
INCIDENT, MariaDB's BINLOG_CHECKPOINT and START_ENCRYPTION.

FORMAT_DESCRIPTION (libbinlogevents ``control_events.cpp``): binlog version u16, server version
char[50], create timestamp u32, common header length u8 (always 19 for v4), one post-header
length per event type, then the checksum algorithm byte; servers that know checksums (MySQL
5.6.1+, MariaDB 5.3+) always append 4 checksum bytes to this event, even when the algorithm is
OFF. Older servers are refused.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sluice.binlog.decoders._reader import U16, U32, U64, packed_int, take
from sluice.binlog.events import (
    BinlogCheckpointEvent,
    FormatDescriptionEvent,
    HeartbeatEvent,
    IncidentEvent,
    RotateEvent,
    StopEvent,
)
from sluice.binlog.header import HEADER_LEN, EventHeader
from sluice.errors import UnsupportedError

if TYPE_CHECKING:
    from sluice.binlog.decoders.context import DecodeContext

Body = bytes | memoryview
_VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)")
SERVER_VERSION_LEN = 50
MIN_MYSQL = (5, 6, 1)
MIN_MARIADB = (5, 3, 0)


def server_version_of(body: Body) -> tuple[str, bool, tuple[int, int, int]]:
    """Server version string, MariaDB or not, and the numeric version, from an FDE body."""
    raw = bytes(body[2 : 2 + SERVER_VERSION_LEN])
    if len(raw) < SERVER_VERSION_LEN:
        raise ValueError("FORMAT_DESCRIPTION_EVENT is too short to hold the server version")
    text = raw.split(b"\0", 1)[0].decode("ascii", "replace")
    is_mariadb = "mariadb" in text.lower()
    m = _VERSION_RE.match(text.removeprefix("5.5.5-") if is_mariadb else text)
    version = (int(m[1]), int(m[2]), int(m[3])) if m else (0, 0, 0)
    return text, is_mariadb, version


def check_supported(text: str, is_mariadb: bool, version: tuple[int, int, int]) -> None:
    """Refuse (``UnsupportedError``) a binlog written by a server older than MySQL 5.6.1 / MariaDB 5.3."""
    minimum = MIN_MARIADB if is_mariadb else MIN_MYSQL
    if version < minimum:
        family = "MariaDB" if is_mariadb else "MySQL"
        raise UnsupportedError(
            f"binlog written by server version {text!r}: sluice reads binlogs of MySQL 5.6.1+ and "
            f"MariaDB 5.3+ only (this {family} binlog predates event checksums and the v4 layout "
            "sluice decodes); replicate through a newer server or convert the binlog with it"
        )


def decode_format_description(header: EventHeader, body: Body, p: DecodeContext) -> FormatDescriptionEvent:
    """``body`` excludes the trailing 4 checksum bytes but includes the algorithm byte."""
    text, is_mariadb, version = server_version_of(body)
    check_supported(text, is_mariadb, version)
    (binlog_version,) = U16.unpack_from(body, 0)
    if binlog_version != 4:
        raise UnsupportedError(f"binlog format version {binlog_version}: sluice reads version 4 only")
    (created,) = U32.unpack_from(body, 52)
    header_len = body[56]
    if header_len != HEADER_LEN:
        raise ValueError(f"FORMAT_DESCRIPTION_EVENT declares a {header_len}-byte event header, expected 19")
    if len(body) < 58:
        raise ValueError("FORMAT_DESCRIPTION_EVENT ends before its checksum algorithm byte")
    return FormatDescriptionEvent(
        header=header,
        binlog_version=binlog_version,
        server_version=text,
        create_timestamp=created,
        header_length=header_len,
        post_header_lengths=bytes(body[57:-1]),
        checksum_alg=body[-1],
        is_mariadb=is_mariadb,
        version=version,
    )


def rotate_target(body: Body) -> tuple[str, int]:
    """The file and position a ROTATE_EVENT body names: position (u64), then the file name."""
    (position,) = U64.unpack_from(body, 0)
    return bytes(body[8:]).decode("utf-8"), position


def decode_rotate(header: EventHeader, body: Body, p: DecodeContext) -> RotateEvent:
    """ROTATE_EVENT body -> ``RotateEvent`` (the next file and its start position)."""
    file, position = rotate_target(body)
    return RotateEvent(header, position, file)


def decode_stop(header: EventHeader, body: Body, p: DecodeContext) -> StopEvent:
    """STOP_EVENT -> ``StopEvent``."""
    # MariaDB may pad STOP_EVENT; its content carries no information.
    return StopEvent(header)


def decode_heartbeat(header: EventHeader, body: Body, p: DecodeContext) -> HeartbeatEvent:
    """HEARTBEAT_LOG_EVENT body (the current file name) -> ``HeartbeatEvent``."""
    return HeartbeatEvent(header, bytes(body).decode("utf-8"), header.log_pos)


# HEARTBEAT_LOG_EVENT_V2 fields (control_events.h Heartbeat_event_v2): type and length are packed
# integers; the position is a packed integer inside its field.
_HB_END_MARK, _HB_FILENAME, _HB_POSITION = 0, 1, 2


def decode_heartbeat_v2(header: EventHeader, body: Body, p: DecodeContext) -> HeartbeatEvent:
    """HEARTBEAT_LOG_EVENT_V2 body (file name and position fields) -> ``HeartbeatEvent``."""
    pos, end = 0, len(body)
    name, position = "", 0
    while pos < end:
        ftype, pos = packed_int(body, pos)
        if ftype == _HB_END_MARK:
            break
        length, pos = packed_int(body, pos)
        value, pos = take(body, pos, length, "heartbeat field")
        if ftype == _HB_FILENAME:
            name = value.decode("utf-8")
        elif ftype == _HB_POSITION:
            position, used = packed_int(value, 0)
            if used != length:
                raise ValueError("heartbeat position field has trailing bytes")
    if pos != end:
        raise ValueError(f"{end - pos} bytes after the heartbeat end mark")
    return HeartbeatEvent(header, name, position)


def decode_incident(header: EventHeader, body: Body, p: DecodeContext) -> IncidentEvent:
    """INCIDENT_EVENT body (incident number, length-prefixed message) -> ``IncidentEvent``."""
    (incident,) = U16.unpack_from(body, 0)
    n = body[2]
    msg, pos = take(body, 3, n, "incident message")
    if pos != len(body):
        raise ValueError(f"{len(body) - pos} bytes after the incident message")
    return IncidentEvent(header, incident, msg.decode("utf-8", "replace"))


def decode_binlog_checkpoint(header: EventHeader, body: Body, p: DecodeContext) -> BinlogCheckpointEvent:
    """MariaDB BINLOG_CHECKPOINT_EVENT body (u32 length, file name) -> ``BinlogCheckpointEvent``."""
    (n,) = U32.unpack_from(body, 0)
    name, pos = take(body, 4, n, "checkpoint file name")
    if pos != len(body):
        raise ValueError(f"{len(body) - pos} bytes after the checkpoint file name")
    return BinlogCheckpointEvent(header, name.decode("utf-8"))


def decode_start_encryption(header: EventHeader, body: Body, p: DecodeContext) -> object:
    """MariaDB START_ENCRYPTION_EVENT: refuse the encrypted file with what to do instead."""
    raise UnsupportedError(
        "this binlog file is encrypted (MariaDB encrypt_binlog=ON, START_ENCRYPTION_EVENT): sluice "
        "cannot decrypt binlog files; read the changes through the server instead (sluice tail, "
        "the server decrypts before sending) or decrypt the file with mariadb-binlog "
        "--read-from-remote-server --raw first"
    )
