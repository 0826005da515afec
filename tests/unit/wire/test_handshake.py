"""HandshakeV10 from captured server greetings; SSLRequest and HandshakeResponse41."""

from __future__ import annotations

import pytest

from sluice.errors import AccessDeniedError, TruncatedError, UnsupportedError
from sluice.wire.constants import Capability
from sluice.wire.handshake import client_capabilities, handshake_response, parse_handshake, ssl_request
from sluice.wire.packet import PacketAssembler

pytestmark = pytest.mark.unit

# Captured from MySQL 9.7.4 (the sandbox server), packet header included.
MYSQL_9_GREETING = bytes.fromhex(
    "4b0000" "00"  # payload length 75, sequence id 0
    "0a"  # protocol version 10
    "392e372e342d3200"  # "9.7.4-2\0"
    "0e000000"  # connection id 14
    "52330119412b414a"  # scramble, first 8 bytes
    "00"  # filler
    "ffff"  # capabilities, low 16 bits
    "ff"  # collation 255: utf8mb4_0900_ai_ci
    "0200"  # status: SERVER_STATUS_AUTOCOMMIT
    "ffdf"  # capabilities, high 16 bits
    "15"  # scramble length 21 (20 + NUL)
    "00000000000000000000"  # reserved
    "4b314f1c30540c3d4e54025b" "00"  # scramble, last 12 bytes + NUL
    "63616368696e675f736861325f70617373776f726400"  # "caching_sha2_password\0"
)

# Captured from MariaDB 10.11.19 (Debian bookworm's package), packet header included.
MARIADB_10_11_GREETING = bytes.fromhex(
    "680000" "00"  # payload length 104, sequence id 0
    "0a"  # protocol version 10
    "352e352e352d31302e31312e31392d4d6172696144422d302b646562313275312d6c6f6700"
    # ^ "5.5.5-10.11.19-MariaDB-0+deb12u1-log\0": the 5.5.5- prefix keeps old clients happy
    "16000000"  # connection id 22
    "3b2c6a5446404f4c"  # scramble, first 8 bytes
    "00"  # filler
    "feff"  # capabilities, low 16 bits: bit 0 (CLIENT_MYSQL) clear => extended capabilities
    "08"  # collation 8: latin1_swedish_ci
    "0200"  # status: SERVER_STATUS_AUTOCOMMIT
    "ff81"  # capabilities, high 16 bits
    "15"  # scramble length 21
    "000000000000"  # filler
    "1d000000"  # MariaDB extended capabilities: PROGRESS | STMT_BULK | EXTENDED_METADATA | CACHE_METADATA
    "6e642c4b742a6f737366272d" "00"  # scramble, last 12 bytes + NUL
    "6d7973716c5f6e61746976655f70617373776f726400"  # "mysql_native_password\0"
)


def _payload(packet: bytes) -> bytes:
    assembler = PacketAssembler()
    assembler.feed(packet)
    payload = assembler.next_payload()
    assert payload is not None
    return payload


def test_mysql_9_handshake() -> None:
    hs = parse_handshake(_payload(MYSQL_9_GREETING))
    assert hs.protocol_version == 10
    assert hs.server_version == hs.version == "9.7.4-2"
    assert hs.version_tuple == (9, 7, 4)
    assert not hs.is_mariadb
    assert hs.connection_id == 14
    assert hs.auth_plugin_data == bytes.fromhex("52330119412b414a" "4b314f1c30540c3d4e54025b")
    assert len(hs.auth_plugin_data) == 20
    assert hs.character_set == 255
    assert hs.status == 2
    assert hs.auth_plugin_name == "caching_sha2_password"
    assert hs.capabilities == 0xDFFFFFFF
    assert hs.capabilities & Capability.CLIENT_SSL
    assert hs.capabilities & Capability.CLIENT_DEPRECATE_EOF
    assert hs.capabilities >> 32 == 0


def test_mariadb_10_11_handshake() -> None:
    hs = parse_handshake(_payload(MARIADB_10_11_GREETING))
    assert hs.server_version == "5.5.5-10.11.19-MariaDB-0+deb12u1-log"
    assert hs.version == "10.11.19-MariaDB-0+deb12u1-log"
    assert hs.version_tuple == (10, 11, 19)
    assert hs.is_mariadb
    assert hs.connection_id == 22
    assert hs.auth_plugin_data == bytes.fromhex("3b2c6a5446404f4c" "6e642c4b742a6f737366272d")
    assert hs.auth_plugin_name == "mysql_native_password"
    assert not hs.capabilities & Capability.CLIENT_LONG_PASSWORD
    assert hs.capabilities & Capability.MARIADB_CLIENT_PROGRESS
    assert hs.capabilities & Capability.MARIADB_CLIENT_EXTENDED_METADATA
    assert not hs.capabilities & Capability.MARIADB_CLIENT_COM_MULTI
    assert hs.capabilities & Capability.CLIENT_PLUGIN_AUTH


def test_handshake_truncated() -> None:
    payload = _payload(MYSQL_9_GREETING)
    with pytest.raises(TruncatedError, match="HandshakeV10 fixed fields"):
        parse_handshake(payload[:20])
    with pytest.raises(TruncatedError, match="server version"):
        parse_handshake(payload[:5])


def test_handshake_err_instead_of_greeting() -> None:
    with pytest.raises(AccessDeniedError):
        parse_handshake(b"\xff\x15\x04#28000Host is not allowed")


def test_old_protocol_is_unsupported() -> None:
    with pytest.raises(UnsupportedError, match="protocol version 10, found 9"):
        parse_handshake(b"\x09" + b"4.0\0" + bytes(40))


def test_capabilities_are_limited_to_what_the_server_offers() -> None:
    mariadb = parse_handshake(_payload(MARIADB_10_11_GREETING))
    caps = client_capabilities(mariadb, ssl=True, database="shop")
    assert caps & Capability.CLIENT_SSL
    assert caps & Capability.CLIENT_CONNECT_WITH_DB
    assert not caps & Capability.CLIENT_LONG_PASSWORD  # MariaDB did not offer bit 0
    assert caps >> 32 == 0
    assert not caps & Capability.CLIENT_LOCAL_FILES


def test_ssl_request() -> None:
    caps = Capability.CLIENT_PROTOCOL_41 | Capability.CLIENT_SSL | Capability.CLIENT_PLUGIN_AUTH
    assert ssl_request(caps) == (
        b"\x00\x0a\x08\x00"  # capabilities 0x00080a00
        b"\xff\xff\xff\x00"  # max packet size 0xFFFFFF
        b"\x2d"  # collation 45: utf8mb4_general_ci
        + bytes(23)  # filler (MariaDB: 19 zero bytes + 4 bytes of extended capabilities)
    )
    with pytest.raises(ValueError):
        ssl_request(Capability.CLIENT_PROTOCOL_41)


def test_handshake_response41() -> None:
    caps = (
        Capability.CLIENT_PROTOCOL_41
        | Capability.CLIENT_SECURE_CONNECTION
        | Capability.CLIENT_PLUGIN_AUTH
        | Capability.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
        | Capability.CLIENT_CONNECT_WITH_DB
        | Capability.CLIENT_CONNECT_ATTRS
    )
    payload = handshake_response(
        capabilities=caps, user="repl", auth_response=b"\x01\x02\x03", auth_plugin="mysql_native_password",
        database="shop", attributes={"_client_name": "sluice"},
    )
    assert payload == (
        b"\x08\x82\x38\x00"  # capabilities 0x00388208
        b"\xff\xff\xff\x00"  # max packet size
        b"\x2d" + bytes(23)  # collation utf8mb4_general_ci, filler
        + b"repl\0"  # user
        b"\x03\x01\x02\x03"  # auth response, length-encoded
        b"shop\0"  # database
        b"mysql_native_password\0"  # auth plugin
        b"\x14" b"\x0c_client_name" b"\x06sluice"  # attributes: total length 20, then key/value pairs
    )


def test_handshake_response_without_lenenc_auth_data() -> None:
    caps = Capability.CLIENT_PROTOCOL_41 | Capability.CLIENT_SECURE_CONNECTION
    payload = handshake_response(capabilities=caps, user="u", auth_response=b"\xaa" * 20, auth_plugin="x")
    assert payload[32:] == b"u\0" + b"\x14" + b"\xaa" * 20
