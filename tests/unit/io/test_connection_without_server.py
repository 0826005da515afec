"""Connection where no sandbox server can show it: a refused port, a missing socket file, and a
tiny in-process fake server that offers no TLS (``--ssl-mode REQUIRED`` refused, ``PREFERRED``
falling back to plain)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from sluice.dsn import ConnectionConfig, SslMode
from sluice.errors import ConfigError, TransportError
from sluice.io.connection import Connection
from sluice.wire.packet import PacketAssembler, frame

pytestmark = pytest.mark.unit


def test_connection_refused() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(TransportError, match=rf"127\.0\.0\.1:{port}.*refused"):
        Connection.open(ConnectionConfig(port=port, password="secret-pw", connect_timeout=2))


def test_missing_socket_file(tmp_path: Path) -> None:
    path = tmp_path / "none.sock"
    with pytest.raises(TransportError, match="socket"):
        Connection.open(ConnectionConfig(socket=str(path)))


# A MariaDB-like greeting without CLIENT_SSL, mysql_native_password as the default plugin.
_NO_TLS_GREETING = bytes.fromhex(
    "0a" "352e352e352d31302e31312e302d4d61726961444200" "07000000" "3132333435363738" "00"
    "fef7" "2d" "0200" "ff81" "15" "000000000000" "00000000" "393031323334353637383930" "00"
    "6d7973716c5f6e61746976655f70617373776f726400"
)


def _fake_server() -> tuple[socket.socket, threading.Thread]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            data, _ = frame(_NO_TLS_GREETING, 0)
            conn.sendall(data)
            assembler = PacketAssembler()
            assembler.reset_sequence(1)
            while assembler.next_payload() is None:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                assembler.feed(chunk)
            reply, _ = frame(b"\x00\x00\x00\x02\x00\x00\x00", assembler.expected_seq)
            conn.sendall(reply)
            conn.recv(1024)  # COM_QUIT or close

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, thread


def test_required_tls_without_server_support() -> None:
    listener, thread = _fake_server()
    with listener:
        port = listener.getsockname()[1]
        with pytest.raises(ConfigError, match="does not offer TLS"):
            Connection.open(ConnectionConfig(port=port, ssl_mode=SslMode.REQUIRED, password="pw"))
    thread.join(5)


def test_preferred_tls_falls_back_to_plain() -> None:
    listener, thread = _fake_server()
    with listener:
        port = listener.getsockname()[1]
        with Connection.open(ConnectionConfig(port=port, password="pw")) as conn:
            assert not conn.tls
            assert conn.is_mariadb
            assert conn.server_version == "10.11.0-MariaDB"
    thread.join(5)
