"""The connection phase packets: HandshakeV10 from the server, SSLRequest and HandshakeResponse41.

This module owns parsing the server's greeting (protocol version 10, server version, connection
id, the 20-byte scramble split in two parts, capability flags, default collation, status and the
default auth plugin), MariaDB detection (the "5.5.5-" version prefix, or bit 0 cleared with
extended capabilities in the last 4 filler bytes) and building the client's answers: the 32-byte
SSLRequest that precedes the TLS handshake, and HandshakeResponse41 with user, auth response,
optional database, auth plugin name and connection attributes. See ``sql/auth/sql_authentication.cc``
(MySQL) and ``sql/sql_acl.cc`` (MariaDB).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from sluice.errors import ProtocolError, UnsupportedError
from sluice.wire.constants import (
    CLIENT_BASE_CAPABILITIES,
    CLIENT_MYSQL,
    ERR_HEADER,
    MAX_PACKET_PAYLOAD,
    UTF8MB4_GENERAL_CI,
    Capability,
)
from sluice.wire.responses import Buffer, _need, lenenc_bytes, lenenc_int, parse_err, read_nul_bytes

# After the server version: connection id, scramble part 1, filler, capabilities (low 16 bits),
# collation, status, capabilities (high 16 bits), scramble length, 6 reserved bytes, MariaDB
# extended capabilities (4 bytes; reserved zeros on MySQL).
_HANDSHAKE_FIXED = struct.Struct("<I8sxHBHHB6sI")
_RESPONSE_HEAD = struct.Struct("<IIB19sI")  # capabilities, max packet, collation, filler, MariaDB caps

MARIADB_VERSION_PREFIX = "5.5.5-"
_VERSION_NUMBERS = re.compile(r"(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True, slots=True)
class HandshakeV10:
    """The server's greeting."""

    protocol_version: int
    server_version: str  # as sent, e.g. "5.5.5-10.11.6-MariaDB-0+deb12u1"
    connection_id: int
    auth_plugin_data: bytes  # the scramble (nonce), 20 bytes on current servers, no trailing NUL
    capabilities: int  # 64 bits: MariaDB extended capabilities in the upper half
    character_set: int
    status: int
    auth_plugin_name: str

    @property
    def is_mariadb(self) -> bool:
        """True when the server is MariaDB (the ``5.5.5-`` prefix or ``MariaDB`` in its version)."""
        return (
            self.server_version.startswith(MARIADB_VERSION_PREFIX)
            or "mariadb" in self.server_version.lower()
        )

    @property
    def version(self) -> str:
        """The real version: MariaDB's "5.5.5-" compatibility prefix removed."""
        if self.server_version.startswith(MARIADB_VERSION_PREFIX):
            return self.server_version[len(MARIADB_VERSION_PREFIX) :]
        return self.server_version

    @property
    def version_tuple(self) -> tuple[int, int, int]:
        """``(major, minor, patch)`` of the real version; ``(0, 0, 0)`` when it does not parse."""
        match = _VERSION_NUMBERS.match(self.version)
        if match is None:
            return (0, 0, 0)
        return (int(match[1]), int(match[2]), int(match[3]))


def parse_handshake(payload: Buffer) -> HandshakeV10:
    """Parse HandshakeV10; an ERR packet in its place raises the server's error."""
    if not payload:
        raise ProtocolError("expected the server's handshake, found an empty packet")
    if payload[0] == ERR_HEADER:
        raise parse_err(payload).to_error()
    if payload[0] != 10:
        raise UnsupportedError(
            f"expected handshake protocol version 10, found {payload[0]}; sluice supports MySQL 5.7+ "
            "and MariaDB 10.x+"
        )
    raw_version, offset = read_nul_bytes(payload, 1, "server version in the handshake")
    _need(payload, offset, _HANDSHAKE_FIXED.size, "HandshakeV10 fixed fields")
    (conn_id, part1, cap_low, charset, status, cap_high, data_len, _reserved, ext_caps) = (
        _HANDSHAKE_FIXED.unpack_from(payload, offset)
    )
    offset += _HANDSHAKE_FIXED.size
    capabilities = cap_low | (cap_high << 16)
    if not capabilities & CLIENT_MYSQL:
        capabilities |= ext_caps << 32  # MariaDB: bit 0 cleared means extended capabilities follow
    if not capabilities & Capability.CLIENT_PROTOCOL_41:
        raise UnsupportedError("the server does not speak protocol 4.1 (CLIENT_PROTOCOL_41); it is too old")
    scramble = part1
    if capabilities & Capability.CLIENT_SECURE_CONNECTION:
        length = max(13, data_len - 8)
        _need(payload, offset, length, "second part of the handshake scramble")
        part2 = bytes(payload[offset : offset + length])
        offset += length
        scramble = part1 + (part2[:-1] if part2.endswith(b"\0") else part2)  # drop the one trailing NUL
    plugin = ""
    if capabilities & Capability.CLIENT_PLUGIN_AUTH and offset < len(payload):
        rest = bytes(payload[offset:])
        end = rest.find(b"\0")
        plugin = (rest if end < 0 else rest[:end]).decode("ascii", "replace")  # some servers omit the NUL
    return HandshakeV10(
        protocol_version=payload[0],
        server_version=raw_version.decode("utf-8", "replace"),
        connection_id=conn_id,
        auth_plugin_data=scramble,
        capabilities=capabilities,
        character_set=charset,
        status=status,
        auth_plugin_name=plugin,
    )


def client_capabilities(
    handshake: HandshakeV10, *, ssl: bool, database: str | None, base: int = 0
) -> int:
    """The capabilities sluice answers with: what it wants, limited to what the server offers."""
    wanted = int(base or CLIENT_BASE_CAPABILITIES)
    if ssl:
        wanted |= Capability.CLIENT_SSL
    if database:
        wanted |= Capability.CLIENT_CONNECT_WITH_DB
    # MariaDB's extended capabilities (upper 32 bits) are not requested.
    return wanted & handshake.capabilities & 0xFFFFFFFF


def _head(capabilities: int, collation: int) -> bytes:
    return _RESPONSE_HEAD.pack(capabilities & 0xFFFFFFFF, MAX_PACKET_PAYLOAD, collation, b"", 0)


def ssl_request(capabilities: int, collation: int = UTF8MB4_GENERAL_CI) -> bytes:
    """SSLRequest: the first 32 bytes of a HandshakeResponse41, with CLIENT_SSL set."""
    if not capabilities & Capability.CLIENT_SSL:
        raise ValueError("an SSLRequest must carry CLIENT_SSL")
    return _head(capabilities, collation)


def handshake_response(
    *,
    capabilities: int,
    user: str,
    auth_response: bytes,
    auth_plugin: str,
    database: str | None = None,
    attributes: Mapping[str, str] | None = None,
    collation: int = UTF8MB4_GENERAL_CI,
) -> bytes:
    """HandshakeResponse41."""
    parts = [_head(capabilities, collation), user.encode("utf-8") + b"\0"]
    if capabilities & Capability.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA:
        parts.append(lenenc_bytes(auth_response))
    elif capabilities & Capability.CLIENT_SECURE_CONNECTION:
        if len(auth_response) > 255:
            raise ValueError(
                "an auth response longer than 255 bytes needs CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA"
            )
        parts.append(bytes((len(auth_response),)) + auth_response)
    else:
        parts.append(auth_response + b"\0")
    if capabilities & Capability.CLIENT_CONNECT_WITH_DB:
        parts.append((database or "").encode("utf-8") + b"\0")
    if capabilities & Capability.CLIENT_PLUGIN_AUTH:
        parts.append(auth_plugin.encode("ascii") + b"\0")
    if capabilities & Capability.CLIENT_CONNECT_ATTRS:
        encoded = b"".join(
            lenenc_bytes(key.encode("utf-8")) + lenenc_bytes(value.encode("utf-8"))
            for key, value in (attributes or {}).items()
        )
        parts.append(lenenc_int(len(encoded)) + encoded)
    return b"".join(parts)


__all__ = [
    "MARIADB_VERSION_PREFIX",
    "HandshakeV10",
    "client_capabilities",
    "handshake_response",
    "parse_handshake",
    "ssl_request",
]
