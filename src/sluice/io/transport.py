"""The socket under a server connection: connecting over TCP or a unix socket, the TLS upgrade that
``ssl_mode`` asks for (disabled | preferred | required | verify-ca | verify-identity), and the
``TransportError`` a socket failure becomes, naming the server and what to check.
"""

from __future__ import annotations

import socket
import ssl

from sluice.dsn import ConnectionConfig, SslMode
from sluice.errors import ConfigError, TransportError
from sluice.wire.constants import Capability
from sluice.wire.handshake import HandshakeV10

__all__ = ["connect", "describe_endpoint", "start_tls", "transport_error", "want_tls"]


def describe_endpoint(config: ConnectionConfig) -> str:
    """``host:port`` or the unix socket path of a connection setting, for messages."""
    return config.socket if config.socket is not None else f"{config.host}:{config.port}"


def connect(config: ConnectionConfig, where: str) -> socket.socket:
    """A socket connected to the server ``config`` names (``where`` says it in messages)."""
    try:
        if config.socket is not None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.settimeout(config.connect_timeout)
                sock.connect(config.socket)
            except BaseException:
                sock.close()
                raise
        else:
            sock = socket.create_connection((config.host, config.port), timeout=config.connect_timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    except TimeoutError:
        raise TransportError(
            f"timed out after {config.connect_timeout}s connecting to {where}; check the host, the port "
            "and firewalls, or raise connect_timeout"
        ) from None
    except OSError as exc:
        raise transport_error(exc, where, "connecting to") from None
    return sock


def want_tls(config: ConnectionConfig, handshake: HandshakeV10, where: str) -> bool:
    """Whether to upgrade to TLS, given ``config.ssl_mode`` and the server's offer; ``ConfigError``
    when the mode needs TLS and the server does not offer it."""
    mode = config.ssl_mode
    if mode is SslMode.DISABLED:
        return False
    offered = bool(handshake.capabilities & Capability.CLIENT_SSL)
    if mode is SslMode.PREFERRED:
        # A unix socket is already private; TLS there only costs time.
        return offered and config.socket is None
    if not offered:
        raise ConfigError(
            f"ssl={mode.value} but the server at {where} does not offer TLS; configure "
            "ssl_cert/ssl_key on the server, or connect with ssl=preferred or ssl=disabled"
        )
    return True


def start_tls(sock: socket.socket, config: ConnectionConfig, where: str) -> ssl.SSLSocket:
    """``sock`` wrapped in TLS (1.2 or later), verified as ``config.ssl_mode`` says."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        if config.ssl_mode in (SslMode.VERIFY_CA, SslMode.VERIFY_IDENTITY):
            context.verify_mode = ssl.CERT_REQUIRED
            context.check_hostname = config.ssl_mode is SslMode.VERIFY_IDENTITY
            if config.ssl_ca:
                context.load_verify_locations(cafile=config.ssl_ca)
            else:
                context.load_default_certs()
        else:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if config.ssl_cert:
            context.load_cert_chain(config.ssl_cert, config.ssl_key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"cannot load the TLS files (ssl_ca={config.ssl_ca}, ssl_cert={config.ssl_cert}, "
            f"ssl_key={config.ssl_key}): {exc}"
        ) from None
    try:
        return context.wrap_socket(sock, server_hostname=config.host if context.check_hostname else None)
    except ssl.SSLCertVerificationError as exc:
        raise TransportError(
            f"TLS certificate of the server at {where} was not accepted: {exc.verify_message}; "
            "check ssl_ca (the CA that signed the server certificate) and, for verify-identity, "
            "that the certificate names the host you connect to"
        ) from None
    except (OSError, ssl.SSLError) as exc:
        raise TransportError(f"TLS handshake with the server at {where} failed: {exc}") from None


def transport_error(exc: OSError, where: str, doing: str) -> TransportError:
    """The ``TransportError`` for a socket failure while ``doing`` ("reading from", ...) the server."""
    if isinstance(exc, ConnectionRefusedError):
        hint = "is the server running and listening there?"
    elif isinstance(exc, FileNotFoundError):
        hint = "no such socket file; is the server running, and is this its socket path?"
    elif isinstance(exc, ConnectionResetError | BrokenPipeError):
        hint = "the server dropped the connection; check its error log and reconnect"
    elif isinstance(exc, socket.gaierror):
        hint = "the host name does not resolve; check the host in the DSN"
    elif isinstance(exc, ssl.SSLError):
        hint = "TLS failed; check ssl settings on both sides"
    else:
        hint = "check the host, port or socket path and the network"
    reason = exc.strerror or str(exc) or type(exc).__name__
    return TransportError(f"{doing} the server at {where} failed: {reason}; {hint}")
