"""Auth scrambles against independently computed and published vectors; the AuthExchange walk."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from nacl.bindings import crypto_scalarmult_ed25519_base_noclamp
from nacl.signing import SigningKey, VerifyKey

from sluice.errors import AccessDeniedError, AuthError, ProtocolError, UnsupportedError
from sluice.wire.auth import (
    AuthDone,
    AuthExchange,
    AuthSend,
    AuthWait,
    encrypt_password_rsa,
    scramble_caching_sha2,
    scramble_native_password,
    sign_ed25519,
)
from sluice.wire.handshake import HandshakeV10
from sluice.wire.responses import read_lenenc_bytes, read_nul_bytes

pytestmark = pytest.mark.unit

NONCE = bytes.fromhex("52330119412b414a4b314f1c30540c3d4e54025b")  # from the captured MySQL 9 greeting
PASSWORD = "sluice-repl"
OK = b"\x00\x00\x00\x02\x00\x00\x00"


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def test_native_password_formula() -> None:
    # SHA1(password) XOR SHA1(nonce + SHA1(SHA1(password)))
    h1 = hashlib.sha1(PASSWORD.encode()).digest()
    expected = _xor(h1, hashlib.sha1(NONCE + hashlib.sha1(h1).digest()).digest())
    assert scramble_native_password(PASSWORD, NONCE) == expected
    assert scramble_native_password("", NONCE) == b""


def test_native_password_known_vector() -> None:
    # The server stores "*" + hex(SHA1(SHA1(pw))); for "password" that is the well-known
    # *2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19. The scramble XOR SHA1(nonce + stored) is SHA1(pw).
    stored = bytes.fromhex("2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19")
    reply = scramble_native_password("password", NONCE)
    stage1 = _xor(reply, hashlib.sha1(NONCE + stored).digest())
    assert hashlib.sha1(stage1).digest() == stored


def test_caching_sha2_formula() -> None:
    # SHA256(password) XOR SHA256(SHA256(SHA256(password)) + nonce)
    h1 = hashlib.sha256(PASSWORD.encode()).digest()
    expected = _xor(h1, hashlib.sha256(hashlib.sha256(h1).digest() + NONCE).digest())
    assert scramble_caching_sha2(PASSWORD, NONCE) == expected
    assert scramble_caching_sha2("", NONCE) == b""


# RFC 8032, section 7.1, TEST 1 and TEST 2. For a 32-byte secret, MariaDB's scheme (SHA-512 of the
# password itself) is exactly standard Ed25519 with that secret as the seed.
RFC8032 = [
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
]


@pytest.mark.parametrize(("secret", "public", "message", "signature"), RFC8032)
def test_ed25519_rfc8032_vectors(secret: str, public: str, message: str, signature: str) -> None:
    sig = sign_ed25519(bytes.fromhex(secret), bytes.fromhex(message))
    assert sig.hex() == signature
    VerifyKey(bytes.fromhex(public)).verify(bytes.fromhex(message), sig)


@pytest.mark.parametrize("password", ["sluice-ed", "", "p" * 100, "pässwörd"])
def test_ed25519_mariadb_scheme_verifies(password: str) -> None:
    # The server keeps the public key A = clamp(SHA-512(password)[:32]) * B and verifies the
    # signature of its 32-byte nonce with plain Ed25519.
    az = bytearray(hashlib.sha512(password.encode()).digest()[:32])
    az[0] &= 248
    az[31] = (az[31] & 63) | 64
    public = crypto_scalarmult_ed25519_base_noclamp(bytes(az))
    nonce = bytes(range(32))
    sig = sign_ed25519(password, nonce)
    assert len(sig) == 64
    VerifyKey(public).verify(nonce, sig)


def test_ed25519_matches_nacl_for_32_byte_passwords() -> None:
    password = "0123456789abcdef0123456789abcdef"
    nonce = b"n" * 32
    assert sign_ed25519(password, nonce) == SigningKey(password.encode()).sign(nonce).signature


# --- the exchange -------------------------------------------------------------------------------


def _handshake(plugin: str = "caching_sha2_password", nonce: bytes = NONCE) -> HandshakeV10:
    return HandshakeV10(
        protocol_version=10, server_version="9.7.4", connection_id=1, auth_plugin_data=nonce,
        capabilities=0xDFFFFFFF, character_set=255, status=2, auth_plugin_name=plugin,
    )


def _auth_response(response: bytes) -> tuple[str, bytes, str]:
    user, offset = read_nul_bytes(response, 32)
    auth, offset = read_lenenc_bytes(response, offset)
    plugin, offset = read_nul_bytes(response, offset)
    return user.decode(), auth, plugin.decode()


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _decrypt(key: rsa.RSAPrivateKey, data: bytes, nonce: bytes) -> bytes:
    plain = key.decrypt(
        data, padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None)
    )
    return bytes(b ^ nonce[i % len(nonce)] for i, b in enumerate(plain))


def test_caching_sha2_full_auth_fetching_the_rsa_key(rsa_key: rsa.RSAPrivateKey) -> None:
    exchange = AuthExchange(_handshake(), user="repl", password=PASSWORD, secure=False)
    user, auth, plugin = _auth_response(exchange.start())
    assert (user, plugin) == ("repl", "caching_sha2_password")
    assert auth == scramble_caching_sha2(PASSWORD, NONCE)
    # The server's cache is empty: AuthMoreData 0x04 perform_full_authentication.
    assert exchange.feed(b"\x01\x04") == AuthSend(b"\x02")  # request the public key
    action = exchange.feed(b"\x01" + _pem(rsa_key))  # AuthMoreData carrying the PEM
    assert isinstance(action, AuthSend)
    assert _decrypt(rsa_key, action.payload, NONCE) == PASSWORD.encode() + b"\0"
    done = exchange.feed(OK)
    assert isinstance(done, AuthDone)
    assert (done.plugin, done.full_auth) == ("caching_sha2_password", "rsa")
    assert exchange.done


def test_caching_sha2_full_auth_with_a_given_key(rsa_key: rsa.RSAPrivateKey) -> None:
    exchange = AuthExchange(
        _handshake(), user="repl", password=PASSWORD, secure=False, server_public_key=_pem(rsa_key),
        request_public_key=False,
    )
    exchange.start()
    action = exchange.feed(b"\x01\x04")
    assert isinstance(action, AuthSend)
    assert _decrypt(rsa_key, action.payload, NONCE) == PASSWORD.encode() + b"\0"
    assert isinstance(exchange.feed(OK), AuthDone)


def test_caching_sha2_full_auth_over_tls_sends_the_password() -> None:
    exchange = AuthExchange(_handshake(), user="repl", password=PASSWORD, secure=True, tls=True)
    exchange.start()
    assert exchange.feed(b"\x01\x04") == AuthSend(PASSWORD.encode() + b"\0")
    done = exchange.feed(OK)
    assert isinstance(done, AuthDone)
    assert done.full_auth == "cleartext"
    assert done.ok.status == 2


def test_caching_sha2_fast_path() -> None:
    exchange = AuthExchange(_handshake(), user="repl", password=PASSWORD, secure=False)
    exchange.start()
    assert exchange.feed(b"\x01\x03") == AuthWait()  # fast_auth_success, then OK
    done = exchange.feed(OK)
    assert isinstance(done, AuthDone)
    assert done.full_auth is None


def test_refuses_cleartext_on_an_insecure_channel() -> None:
    exchange = AuthExchange(
        _handshake(), user="repl", password=PASSWORD, secure=False, request_public_key=False
    )
    exchange.start()
    with pytest.raises(AuthError, match="TLS") as info:
        exchange.feed(b"\x01\x04")
    assert PASSWORD not in str(info.value)
    assert "server_public_key" in str(info.value)
    assert PASSWORD not in repr(exchange)


def test_auth_switch_to_native_password() -> None:
    new_nonce = bytes(range(1, 21))
    exchange = AuthExchange(_handshake(), user="old", password=PASSWORD, secure=False)
    exchange.start()
    action = exchange.feed(b"\xfe" b"mysql_native_password\0" + new_nonce + b"\0")
    assert action == AuthSend(scramble_native_password(PASSWORD, new_nonce))
    assert isinstance(exchange.feed(OK), AuthDone)


def test_auth_switch_to_ed25519() -> None:
    nonce = bytes(range(32))
    exchange = AuthExchange(
        _handshake("mysql_native_password"), user="ed", password="sluice-ed", secure=False
    )
    exchange.start()
    action = exchange.feed(b"\xfe" b"client_ed25519\0" + nonce)
    assert action == AuthSend(sign_ed25519("sluice-ed", nonce))
    done = exchange.feed(OK)
    assert isinstance(done, AuthDone)
    assert done.plugin == "client_ed25519"


def test_an_ed25519_nonce_ending_in_a_zero_byte_is_signed_whole() -> None:
    """MariaDB's 32-byte nonce is raw bytes: a last byte of 0 (one login in 256) is part of it."""
    nonce = bytes(range(1, 32)) + b"\0"
    exchange = AuthExchange(
        _handshake("mysql_native_password"), user="ed", password="sluice-ed", secure=False
    )
    exchange.start()
    assert exchange.feed(b"\xfe" b"client_ed25519\0" + nonce) == AuthSend(sign_ed25519("sluice-ed", nonce))


def test_auth_switch_to_unknown_plugin() -> None:
    exchange = AuthExchange(_handshake(), user="u", password="p", secure=False)
    exchange.start()
    with pytest.raises(UnsupportedError, match="auth_gssapi_client"):
        exchange.feed(b"\xfeauth_gssapi_client\0data")


def test_err_during_auth_is_access_denied() -> None:
    exchange = AuthExchange(_handshake(), user="repl", password="wrong", secure=False)
    exchange.start()
    with pytest.raises(AccessDeniedError, match="Access denied"):
        exchange.feed(b"\xff\x15\x04#28000Access denied for user 'repl'@'localhost' (using password: YES)")


def test_unexpected_packet_during_auth() -> None:
    exchange = AuthExchange(_handshake(), user="repl", password="p", secure=False)
    exchange.start()
    with pytest.raises(ProtocolError, match="found first byte 0x05"):
        exchange.feed(b"\x05")


def test_unknown_default_plugin_starts_with_native() -> None:
    exchange = AuthExchange(_handshake("dialog"), user="u", password="p", secure=False)
    _, auth, plugin = _auth_response(exchange.start())
    assert plugin == "mysql_native_password"
    assert auth == scramble_native_password("p", NONCE)


def test_rsa_with_a_bad_key() -> None:
    with pytest.raises(AuthError, match="PEM"):
        encrypt_password_rsa("p", NONCE, b"not a key")


def test_handshake_dataclass_is_frozen() -> None:
    hs = _handshake()
    assert replace(hs, connection_id=2).connection_id == 2
