"""The I/O shell around ``sluice.wire``: one client connection to a MySQL or MariaDB server.

This module owns the login over a socket that ``sluice.io.transport`` connects and upgrades to TLS
(driving the sans-I/O ``AuthExchange`` to a logged-in session), the server's facts from its
handshake, the deadline every read and write is given (``ConnectionConfig.deadline``), and the
command loop: ``query`` for statements with rows, ``execute`` for the rest. The packets themselves,
``send_command`` / ``read_payload`` for the replication stream among them, and what a socket failure
means are ``sluice.io.packet_channel``'s. ERR packets become typed ``ServerError``. The password never
appears in a message or repr.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from types import TracebackType

from sluice import __version__ as _sluice_version
from sluice.dsn import ConnectionConfig, flavor_of
from sluice.errors import ConfigError, ProtocolError, TransportError
from sluice.io.packet_channel import PacketChannel
from sluice.io.transport import connect, describe_endpoint, start_tls, want_tls
from sluice.wire.auth import AuthDone, AuthExchange, AuthSend
from sluice.wire.commands import com_ping, com_query, com_quit
from sluice.wire.handshake import HandshakeV10, client_capabilities, parse_handshake, ssl_request
from sluice.wire.packet import frame
from sluice.wire.responses import OkPacket, parse_ok, raise_if_err
from sluice.wire.resultset import ResultSet, ResultSetReader


class Connection(PacketChannel):
    """A logged-in connection. Open with ``Connection.open(config)``; use as a context manager."""

    def __init__(self, sock: socket.socket, config: ConnectionConfig, where: str) -> None:
        super().__init__(sock, where)
        self._config = config
        self._handshake: HandshakeV10 | None = None
        self._capabilities = 0
        self._tls = False
        self.auth_plugin = ""  # the plugin that authenticated this session
        self.auth_full: str | None = None  # "cleartext" / "rsa" if the password itself was sent

    # -- opening ---------------------------------------------------------------------------------

    @classmethod
    def open(cls, config: ConnectionConfig) -> Connection:
        """Connect, upgrade to TLS as ``config.ssl_mode`` says, and authenticate."""
        where = describe_endpoint(config)
        sock = connect(config, where)
        conn = cls(sock, config, where)
        try:
            conn._login()
            conn.settimeout(config.deadline)
        except BaseException:
            conn._abort()
            raise
        return conn

    def _login(self) -> None:
        config = self._config
        self._assembler.reset_sequence(0)
        handshake = parse_handshake(self.read_payload())
        self._handshake = handshake
        tls = want_tls(config, handshake, self._where)
        if tls:
            caps = client_capabilities(handshake, ssl=True, database=config.database)
            self._send(ssl_request(caps))
            assert self._sock is not None
            self._sock = start_tls(self._sock, config, self._where)
            self._tls = True
        public_key = _read_public_key(config.server_public_key)
        exchange = AuthExchange(
            handshake,
            user=config.user,
            password=config.password,
            secure=tls or config.socket is not None,
            tls=tls,
            database=config.database,
            server_public_key=public_key,
            request_public_key=config.get_server_public_key,
            attributes={"_client_name": "sluice", "_client_version": _sluice_version,
                        "program_name": "sluice"},
        )
        self._capabilities = exchange.capabilities
        self._send(exchange.start())
        while True:
            action = exchange.feed(self.read_payload())
            if isinstance(action, AuthSend):
                self._send(action.payload)
            elif isinstance(action, AuthDone):
                self.auth_plugin = action.plugin
                self.auth_full = action.full_auth
                return

    # -- properties ------------------------------------------------------------------------------

    @property
    def config(self) -> ConnectionConfig:
        """The connection settings this connection was opened with."""
        return self._config

    @property
    def handshake(self) -> HandshakeV10:
        """The server's greeting; ``ProtocolError`` before it arrived."""
        if self._handshake is None:
            raise ProtocolError("the connection has not received the server handshake yet")
        return self._handshake

    @property
    def server_version(self) -> str:
        """The server version without MariaDB's "5.5.5-" prefix, e.g. "10.11.6-MariaDB-0+deb12u1"."""
        return self.handshake.version

    @property
    def server_version_tuple(self) -> tuple[int, int, int]:
        """``(major, minor, patch)`` of the server version."""
        return self.handshake.version_tuple

    @property
    def is_mariadb(self) -> bool:
        """True when the server is MariaDB."""
        return self.handshake.is_mariadb

    @property
    def flavor(self) -> str:
        """The server's flavor, ``"mariadb"`` or ``"mysql"`` (``sluice.dsn.flavor_of``): what the schema
        takes to map types the way that server does."""
        return flavor_of(self.is_mariadb)

    @property
    def connection_id(self) -> int:
        """The server's id of this session (``CONNECTION_ID()``, what ``KILL`` takes)."""
        return self.handshake.connection_id

    @property
    def capabilities(self) -> int:
        """The capabilities negotiated for this session."""
        return self._capabilities

    @property
    def tls(self) -> bool:
        """True when the session runs over TLS."""
        return self._tls

    def __repr__(self) -> str:
        if self._sock is None:
            state = "closed"
        elif self._handshake is not None:
            state = f"id={self._handshake.connection_id}"
        else:
            state = "open"
        return f"<Connection {self._config.user}@{self._where} {state}>"

    # -- commands --------------------------------------------------------------------------------

    def query(self, sql: str) -> ResultSet:
        """Run a statement and return its rows (an empty ``ResultSet`` if it returns none)."""
        result = self._run(sql)
        if isinstance(result, OkPacket):
            return ResultSet(columns=(), rows=[], status=result.status, warnings=result.warnings)
        return result

    def stream_rows(self, sql: str, chunk: int) -> Iterator[list[tuple[str | None, ...]]]:
        """The text rows of ``sql`` in lists of up to ``chunk``, read as the server sends them (the
        result set is never held whole). Run the generator to its end before using the connection
        again."""
        self.send_command(com_query(sql))
        reader = ResultSetReader(self._capabilities)
        while True:
            done = reader.feed(self.read_payload())
            if reader.pending and (done or reader.pending >= chunk):
                yield reader.take_rows()
            if done:
                return

    def execute(self, sql: str) -> OkPacket:
        """Run a statement without a result set and return the server's OK (rows are discarded)."""
        result = self._run(sql)
        if isinstance(result, ResultSet):
            return OkPacket(0, 0, result.status, result.warnings, "")
        return result

    def ping(self) -> None:
        """COM_PING: check that the server still answers; raises its error otherwise."""
        self.send_command(com_ping())
        payload = self.read_payload()
        raise_if_err(payload)
        parse_ok(payload, self._capabilities)

    def _run(self, sql: str) -> ResultSet | OkPacket:
        self.send_command(com_query(sql))
        reader = ResultSetReader(self._capabilities)
        while not reader.feed(self.read_payload()):
            pass
        assert reader.result is not None
        return reader.result

    # -- lifetime --------------------------------------------------------------------------------

    def close(self) -> None:
        """Say COM_QUIT (best effort) and close the socket. Safe to call twice."""
        if self._sock is None:
            return
        with contextlib.suppress(OSError, TransportError):
            data, _ = frame(com_quit(), 0)
            self._sock.settimeout(1.0)
            self._sock.sendall(data)
        self._abort()

    def __enter__(self) -> Connection:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()




def _read_public_key(path: str | None) -> bytes | None:
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise ConfigError(
            f"cannot read server_public_key={path}: {exc.strerror}; give the PEM file of the server's "
            "RSA public key (the server's caching_sha2_password_public_key_path)"
        ) from None


__all__ = ["Connection"]
