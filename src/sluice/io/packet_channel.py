"""MySQL packets over one socket: framing, sequence ids, deadlines, and what a socket failure means.

``PacketChannel`` sends payloads framed with their sequence ids (``sluice.wire.packet.frame``) and
reads the server's packets into a ``PacketAssembler``'s buffer, joining 16 MiB multi-packet
payloads; ``read_rows`` and ``consume_packets`` let a result-set or replication reader take whole
packets straight from that buffer. Every read and write has the socket's deadline: a stall, a reset
or a closed connection ends as a ``TransportError`` that names the server and what to check, and
the socket is closed. ``Connection`` (``sluice.io.connection``) logs in and runs commands over it.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from typing import Any

from sluice.binlog.framing import row_packets
from sluice.errors import ProtocolError, TransportError
from sluice.io.transport import transport_error
from sluice.wire.packet import PacketAssembler, frame

__all__ = ["PacketChannel"]

_RECV_CHUNK = 256 * 1024  # at least this much free buffer for each recv_into


class PacketChannel:
    """Payloads to and from one server over one socket (module docstring)."""

    def __init__(self, sock: socket.socket, where: str) -> None:
        self._sock: socket.socket | None = sock
        self._where = where
        self._assembler = PacketAssembler()

    @property
    def where(self) -> str:
        """host:port or the unix socket path, for messages."""
        return self._where

    @property
    def closed(self) -> bool:
        """True once the socket is closed."""
        return self._sock is None

    def send_command(self, payload: bytes) -> None:
        """Send a command payload, starting a new exchange (sequence id 0)."""
        if self._assembler.buffered:
            raise ProtocolError(
                f"the server at {self._where} sent {self._assembler.buffered} bytes after the end of its last answer; "
                "the connection is out of step with the server and must be reopened"
            )
        self._assembler.reset_sequence(0)
        self._send(payload)

    def send_payload(self, payload: bytes) -> None:
        """Send a payload that continues the current exchange's sequence ids."""
        self._send(payload)

    def read_payload(self) -> bytes:
        """The next complete logical payload from the server (multi-packet payloads joined)."""
        assembler = self._assembler
        payload = assembler.next_payload()
        while payload is None:
            self._receive()
            payload = assembler.next_payload()
        return payload

    def read_rows(self, eof_limit: int) -> tuple[bytes, bytes] | bytes:
        """The text rows of a result set received so far, in one block (``framing.row_packets``:
        rows back to back and where each ends), waiting for at least one packet; or, when the next
        packet is not plainly a row (``eof_limit`` -1: none is), that one payload."""
        if eof_limit >= 0:
            assembler = self._assembler
            while not assembler.has_packet():
                self._receive()
            _, _, block, ends = assembler.consume(
                lambda buf, pos, end, seq: row_packets(buf, pos, end, seq, eof_limit))
            if block:
                return block, ends
        return self.read_payload()

    def consume_packets(self, scan: Callable[[bytearray, int, int, int], tuple[Any, ...]]) -> tuple[Any, ...]:
        """Let ``scan`` take the complete packets already received (``PacketAssembler.consume``),
        after waiting until there is at least one."""
        assembler = self._assembler
        while not assembler.has_packet():
            self._receive()
        return assembler.consume(scan)

    def _receive(self) -> None:
        """Read what the socket has into the assembler's buffer."""
        assembler = self._assembler
        sock = self._require_socket()
        try:
            n = sock.recv_into(assembler.write_buffer(_RECV_CHUNK))
        except TimeoutError:
            self._abort()
            raise TransportError(
                f"no bytes from the server at {self._where} for {sock.gettimeout():g}s: the connection "
                "stalled (a silent network path, or a server that hangs); a stream connects again. If the "
                "server is only slow to answer, raise the DSN's read_timeout (sluice run --stall-timeout)"
            ) from None
        except OSError as exc:
            self._abort()
            raise transport_error(exc, self._where, "reading from") from None
        if n == 0:
            self._abort()
            raise TransportError(
                f"the server at {self._where} closed the connection; check the server's error log "
                "(restart, KILL, wait_timeout, max_allowed_packet) and reconnect"
            )
        assembler.commit(n)


    def settimeout(self, seconds: float | None) -> None:
        """Timeout of each socket read and write; None blocks forever."""
        self._require_socket().settimeout(seconds)


    def _require_socket(self) -> socket.socket:
        if self._sock is None:
            raise TransportError(f"the connection to {self._where} is closed; open a new one")
        return self._sock

    def _send(self, payload: bytes) -> None:
        sock = self._require_socket()
        data, self._assembler.expected_seq = frame(payload, self._assembler.expected_seq)
        try:
            sock.sendall(data)
        except TimeoutError:
            self._abort()
            raise TransportError(
                f"timed out sending {len(data)} bytes to the server at {self._where}; check the network"
            ) from None
        except OSError as exc:
            self._abort()
            raise transport_error(exc, self._where, "writing to") from None

    def _abort(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()
