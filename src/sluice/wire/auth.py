"""Authentication plugins and the sans-I/O authentication exchange.

This module owns the client side of the auth plugins sluice speaks — ``mysql_native_password``
(SHA1 scramble), ``caching_sha2_password`` (SHA256 scramble for the fast path; for the full path the
cleartext password over a secure channel, or the password XOR the nonce encrypted with RSA-OAEP
under the server's public key), ``sha256_password`` (the same full path),
``mysql_clear_password`` (secure channels only) and MariaDB's ``client_ed25519`` (an Ed25519
signature of the nonce whose secret is SHA-512 of the password) — and ``AuthExchange``, the state
machine that builds the HandshakeResponse41 and answers AuthSwitchRequest (0xFE) and AuthMoreData
(0x01) until the server says OK or ERR. Nothing here reads a socket: the connection feeds server
payloads in and sends what the exchange returns. See ``sql/auth/sha2_password.cc`` (MySQL) and
``plugin/auth_ed25519/ref10/sign.c`` (MariaDB).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from sluice.errors import AuthError, ProtocolError, UnsupportedError
from sluice.wire.constants import AUTH_MORE_DATA_HEADER, EOF_HEADER, ERR_HEADER, OK_HEADER
from sluice.wire.handshake import HandshakeV10, client_capabilities, handshake_response
from sluice.wire.responses import OkPacket, parse_err, parse_ok, read_nul_bytes

MYSQL_NATIVE_PASSWORD = "mysql_native_password"
CACHING_SHA2_PASSWORD = "caching_sha2_password"
SHA256_PASSWORD = "sha256_password"
MYSQL_CLEAR_PASSWORD = "mysql_clear_password"
CLIENT_ED25519 = "client_ed25519"

# caching_sha2_password AuthMoreData codes (sql/auth/sha2_password.cc).
REQUEST_PUBLIC_KEY = 0x02
FAST_AUTH_SUCCESS = 0x03
PERFORM_FULL_AUTHENTICATION = 0x04


def _secret(password: str | bytes) -> bytes:
    return password.encode("utf-8") if isinstance(password, str) else password


def _xor(data: bytes, key: bytes) -> bytes:
    return bytes(b ^ key[i % len(key)] for i, b in enumerate(data))


def scramble_native_password(password: str | bytes, nonce: bytes) -> bytes:
    """mysql_native_password: SHA1(pw) XOR SHA1(nonce + SHA1(SHA1(pw))); empty for no password."""
    if not password:
        return b""
    stage1 = hashlib.sha1(_secret(password)).digest()
    stage2 = hashlib.sha1(stage1).digest()
    return _xor(stage1, hashlib.sha1(nonce[:20] + stage2).digest())


def scramble_caching_sha2(password: str | bytes, nonce: bytes) -> bytes:
    """caching_sha2_password fast path: SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + nonce)."""
    if not password:
        return b""
    stage1 = hashlib.sha256(_secret(password)).digest()
    stage2 = hashlib.sha256(stage1).digest()
    return _xor(stage1, hashlib.sha256(stage2 + nonce[:20]).digest())


def encrypt_password_rsa(password: str | bytes, nonce: bytes, public_key_pem: bytes) -> bytes:
    """Full auth without TLS: RSA-OAEP (SHA1, MGF1-SHA1) of (password + NUL) XOR the nonce."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    try:
        key = serialization.load_pem_public_key(public_key_pem)
    except ValueError as exc:
        raise AuthError(f"the server public key is not a PEM RSA public key: {exc}") from None
    if not isinstance(key, rsa.RSAPublicKey):
        raise AuthError(f"the server public key must be an RSA key, found {type(key).__name__}")
    plain = _xor(_secret(password) + b"\0", nonce[:20])
    return key.encrypt(
        plain,
        padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None),
    )


def sign_ed25519(password: str | bytes, nonce: bytes) -> bytes:
    """MariaDB client_ed25519: an Ed25519 signature of ``nonce`` with SHA-512(password) as the
    expanded secret (standard Ed25519 hashes a 32-byte seed; MariaDB hashes the password itself).
    Returns R (32 bytes) + S (32 bytes)."""
    from nacl.bindings import (
        crypto_core_ed25519_scalar_add,
        crypto_core_ed25519_scalar_mul,
        crypto_core_ed25519_scalar_reduce,
        crypto_scalarmult_ed25519_base_noclamp,
    )

    az = bytearray(hashlib.sha512(_secret(password)).digest())
    az[0] &= 248
    az[31] &= 63
    az[31] |= 64
    secret, prefix = bytes(az[:32]), bytes(az[32:])
    public = crypto_scalarmult_ed25519_base_noclamp(secret)
    r = crypto_core_ed25519_scalar_reduce(hashlib.sha512(prefix + nonce).digest())
    big_r = crypto_scalarmult_ed25519_base_noclamp(r)
    k = crypto_core_ed25519_scalar_reduce(hashlib.sha512(big_r + public + nonce).digest())
    a = crypto_core_ed25519_scalar_reduce(secret + bytes(32))
    s = crypto_core_ed25519_scalar_add(crypto_core_ed25519_scalar_mul(k, a), r)
    return big_r + s


# --- the exchange -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AuthSend:
    """Send this payload (continuing the sequence ids of the exchange)."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class AuthWait:
    """Nothing to send: read the next server payload and feed it."""


@dataclass(frozen=True, slots=True)
class AuthDone:
    """Authenticated."""

    ok: OkPacket
    plugin: str
    full_auth: str | None = None  # "cleartext" or "rsa" when the password itself had to be sent


AuthAction = AuthSend | AuthWait | AuthDone

_SUPPORTED = (MYSQL_NATIVE_PASSWORD, CACHING_SHA2_PASSWORD, SHA256_PASSWORD, MYSQL_CLEAR_PASSWORD,
              CLIENT_ED25519)


class AuthExchange:
    """Client side of the authentication phase, without I/O.

    ``start()`` returns the HandshakeResponse41 payload; then ``feed(payload)`` takes each server
    payload and returns an ``AuthAction``. Server ERR packets raise the typed ``ServerError``;
    what the client refuses to do (cleartext password on an insecure channel, unknown plugin)
    raises ``AuthError``. ``secure`` means TLS is up or the channel is a unix socket.
    """

    def __init__(
        self,
        handshake: HandshakeV10,
        *,
        user: str,
        password: str,
        secure: bool,
        tls: bool = False,
        database: str | None = None,
        server_public_key: bytes | None = None,
        request_public_key: bool = True,
        attributes: Mapping[str, str] | None = None,
    ) -> None:
        self.handshake = handshake
        self.user = user
        self._password = password
        self.secure = secure
        self.tls = tls
        self.database = database
        self.server_public_key = server_public_key
        self.request_public_key = request_public_key
        self.attributes = dict(attributes or {})
        self.capabilities = client_capabilities(handshake, ssl=tls, database=database)
        self.plugin = handshake.auth_plugin_name or MYSQL_NATIVE_PASSWORD
        if self.plugin not in _SUPPORTED:
            self.plugin = MYSQL_NATIVE_PASSWORD  # the server will switch us to what the user needs
        self.nonce = handshake.auth_plugin_data
        self._awaiting_key = False
        self._done = False
        self.full_auth: str | None = None  # how the password itself was sent, if it was

    def __repr__(self) -> str:
        return f"AuthExchange(user={self.user!r}, plugin={self.plugin!r}, secure={self.secure})"

    @property
    def done(self) -> bool:
        """True once the server accepted the authentication (its OK packet was fed)."""
        return self._done

    def start(self) -> bytes:
        """The HandshakeResponse41 to send (after the SSLRequest and TLS, when TLS is used)."""
        return handshake_response(
            capabilities=self.capabilities,
            user=self.user,
            auth_response=self._first_response(),
            auth_plugin=self.plugin,
            database=self.database,
            attributes=self.attributes,
        )

    def feed(self, payload: bytes) -> AuthAction:
        """Take the next server payload; return what to do next."""
        if self._done:
            raise ProtocolError("the authentication exchange is already complete")
        if not payload:
            raise ProtocolError("expected an authentication reply, found an empty packet")
        head = payload[0]
        if head == OK_HEADER:
            self._done = True
            return AuthDone(parse_ok(payload, self.capabilities), self.plugin, self.full_auth)
        if head == ERR_HEADER:
            raise parse_err(payload).to_error()
        if head == EOF_HEADER:
            return self._switch(payload)
        if head == AUTH_MORE_DATA_HEADER:
            return self._more_data(payload[1:])
        raise ProtocolError(
            f"expected OK, ERR, AuthSwitchRequest (0xFE) or AuthMoreData (0x01) during "
            f"authentication with {self.plugin}, found first byte {head:#04x}"
        )

    # -- steps ----------------------------------------------------------------------------------

    def _first_response(self) -> bytes:
        plugin, password, nonce = self.plugin, self._password, self.nonce
        if plugin == MYSQL_NATIVE_PASSWORD:
            return scramble_native_password(password, nonce)
        if plugin == CACHING_SHA2_PASSWORD:
            return scramble_caching_sha2(password, nonce)
        if plugin == CLIENT_ED25519:
            return sign_ed25519(password, nonce)
        if plugin == SHA256_PASSWORD:
            if not password:
                return b"\0"
            if self.secure:
                self.full_auth = "cleartext"
                return password.encode("utf-8") + b"\0"
            if self.server_public_key is not None:
                self.full_auth = "rsa"
                return encrypt_password_rsa(password, nonce, self.server_public_key)
            if self.request_public_key:
                self._awaiting_key = True
                return b"\x01"
            raise self._insecure_error()
        if plugin == MYSQL_CLEAR_PASSWORD:
            if not self.secure:
                raise self._insecure_error()
            self.full_auth = "cleartext"
            return password.encode("utf-8") + b"\0"
        raise UnsupportedError(f"authentication plugin {plugin!r} is not supported")

    def _switch(self, payload: bytes) -> AuthAction:
        if len(payload) == 1:
            raise UnsupportedError(
                "the server asked for the pre-4.1 password scheme (old_password); "
                "give the user a mysql_native_password, caching_sha2_password or ed25519 password"
            )
        name, offset = read_nul_bytes(payload, 1, "plugin name in AuthSwitchRequest")
        plugin = name.decode("ascii", "replace")
        data = bytes(payload[offset:])
        if plugin != CLIENT_ED25519 and data.endswith(b"\0"):
            # The 20-byte scramble of the native and SHA-2 plugins ends in a NUL; MariaDB's ed25519
            # nonce is 32 raw bytes, whose last byte is 0 once in 256 logins.
            data = data[:-1]
        if plugin not in _SUPPORTED:
            raise UnsupportedError(
                f"the server asked for authentication plugin {plugin!r}; sluice supports "
                f"{', '.join(_SUPPORTED)}"
            )
        self.plugin = plugin
        if data:
            self.nonce = data
        self._awaiting_key = False
        return AuthSend(self._first_response())

    def _more_data(self, data: bytes) -> AuthAction:
        plugin = self.plugin
        if plugin == CACHING_SHA2_PASSWORD and not self._awaiting_key and len(data) == 1:
            if data[0] == FAST_AUTH_SUCCESS:
                return AuthWait()
            if data[0] == PERFORM_FULL_AUTHENTICATION:
                return self._full_auth()
            raise ProtocolError(
                f"caching_sha2_password: expected 0x03 or 0x04 in AuthMoreData, found {data[0]:#04x}"
            )
        if plugin in (CACHING_SHA2_PASSWORD, SHA256_PASSWORD) and self._awaiting_key:
            self._awaiting_key = False
            if not data.lstrip().startswith(b"-----BEGIN"):
                raise ProtocolError("expected the server's PEM public key in AuthMoreData")
            self.server_public_key = data
            self.full_auth = "rsa"
            return AuthSend(encrypt_password_rsa(self._password, self.nonce, data))
        raise ProtocolError(f"unexpected AuthMoreData ({len(data)} bytes) during {plugin} authentication")

    def _full_auth(self) -> AuthAction:
        password = self._password
        if self.secure:
            self.full_auth = "cleartext"
            return AuthSend(password.encode("utf-8") + b"\0")
        if self.server_public_key is not None:
            self.full_auth = "rsa"
            return AuthSend(encrypt_password_rsa(password, self.nonce, self.server_public_key))
        if self.request_public_key:
            self._awaiting_key = True
            return AuthSend(bytes((REQUEST_PUBLIC_KEY,)))
        raise self._insecure_error()

    def _insecure_error(self) -> AuthError:
        return AuthError(
            f"{self.plugin} needs the password itself, and the connection is neither TLS nor a unix "
            "socket; sluice will not send it in clear. Use TLS (ssl=required), give the server's "
            "RSA public key (server_public_key=/path/to/public_key.pem) or allow fetching it "
            "(get_server_public_key=true)"
        )


__all__ = [
    "CACHING_SHA2_PASSWORD",
    "CLIENT_ED25519",
    "MYSQL_CLEAR_PASSWORD",
    "MYSQL_NATIVE_PASSWORD",
    "SHA256_PASSWORD",
    "AuthAction",
    "AuthDone",
    "AuthExchange",
    "AuthSend",
    "AuthWait",
    "encrypt_password_rsa",
    "scramble_caching_sha2",
    "scramble_native_password",
    "sign_ed25519",
]
