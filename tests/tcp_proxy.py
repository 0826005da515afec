"""A TCP proxy in front of a test server, for tests of a network path that breaks or goes silent.

``TcpProxy(host, port)`` listens on ``127.0.0.1:proxy.port`` and forwards every connection to the
server. ``blackhole()`` stops forwarding on every connection open at that moment, both ways,
and keeps its sockets open: no FIN, no RST, no bytes, as a firewall's idle timeout or a flushed
NAT table leaves a connection. New connections work. ``reset()`` closes every open connection
at once instead. ``move_to(host, port)`` points new connections at another server, as a VIP or a
DNS name moves at a failover. ``trap(predicate, times)`` makes a connection go silent right after it sends a
command (the first packet of a client exchange, sequence 0) whose payload ``predicate`` accepts,
the command reaching the server: a planner's ``COM_BINLOG_DUMP``, a task's, a ``SHOW BINARY LOGS``
(``binlog_dump`` and ``query`` build such predicates); ``trap(..., reset=True)`` closes it instead.
Several traps can be set at once: a command springs the first set that accepts it and has times
left, and each ``Trap`` counts the connections it caught (``proxy.trapped`` counts them all).
``TcpProxy(host, port, rate=N)`` hands what the server sends on at most N bytes a second on each
connection, so that a client reading a long stream is in the middle of it for seconds.
Connections must not use TLS (the proxy reads the client's commands): give the DSN ``ssl=disabled``.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["TcpProxy", "Trap", "binlog_dump", "query"]

COM_QUERY, COM_BINLOG_DUMP, COM_BINLOG_DUMP_GTID = 0x03, 0x12, 0x1E


def binlog_dump(payload: bytes) -> bool:
    """A replication stream's request: COM_BINLOG_DUMP or COM_BINLOG_DUMP_GTID."""
    return payload[:1] in (bytes([COM_BINLOG_DUMP]), bytes([COM_BINLOG_DUMP_GTID]))


def query(words: str) -> Callable[[bytes], bool]:
    """A COM_QUERY whose text holds ``words`` (case-insensitive)."""
    return lambda payload: payload[:1] == bytes([COM_QUERY]) and words.lower() in payload[1:].decode(
        "utf-8", "replace").lower()


@dataclass
class Trap:
    """One ``TcpProxy.trap``: the commands it springs on, how many times more, whether it closes the
    connection instead of silencing it, and the first bytes of each command it caught."""

    predicate: Callable[[bytes], bool]
    left: int
    reset: bool = False
    caught: list[bytes] = field(default_factory=list)

    @property
    def sprung(self) -> int:
        """How many connections this trap caught."""
        return len(self.caught)


@dataclass
class _Pair:
    client: socket.socket
    server: socket.socket
    silent: bool = False
    doomed: bool = False  # to be closed (a trap with reset)
    number: int = 0
    pending: bytearray = field(default_factory=bytearray)  # client bytes not yet split into packets


class TcpProxy:
    """See the module docstring. Use as a context manager or call ``close()``."""

    def __init__(self, host: str, port: int, *, rate: int | None = None) -> None:
        self.target = (host, port)
        self.rate = rate
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._pairs: list[_Pair] = []
        self._lock = threading.Lock()
        self._traps: list[Trap] = []
        self.trapped = 0  # connections a trap made silent
        self.commands: list[tuple[int, bytes]] = []  # (connection number, command's first bytes) as sent
        self._opened = 0
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="tcp-proxy").start()

    def dsn(self, dsn: str) -> str:
        """``dsn`` (a sandbox's) pointed at the proxy, without TLS."""
        scheme, rest = dsn.split("://", 1)
        auth, tail = rest.split("@", 1)
        path = tail.split("/", 1)[1] if "/" in tail else ""
        sep = "&" if "?" in path else "?"
        return f"{scheme}://{auth}@127.0.0.1:{self.port}/{path}{sep}ssl=disabled"

    def move_to(self, host: str, port: int) -> None:
        """Point new connections at ``host:port`` (open ones stay where they are)."""
        self.target = (host, port)

    def blackhole(self) -> int:
        """Silence every open connection (module docstring); how many there were."""
        with self._lock:
            live = [p for p in self._pairs if not p.silent]
            for p in live:
                p.silent = True
        return len(live)

    def live(self) -> int:
        """Connections open and carrying bytes now."""
        with self._lock:
            return sum(not p.silent for p in self._pairs)

    def reset(self) -> int:
        """Close every open connection; how many there were."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for p in pairs:
            for s in (p.client, p.server):
                with contextlib.suppress(OSError):
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.close()
        return len(pairs)

    def trap(self, predicate: Callable[[bytes], bool], times: int = 1, *, reset: bool = False) -> Trap:
        """Silence (or with ``reset`` close) the next ``times`` connections that send a command
        ``predicate`` accepts; the trap, which counts them."""
        trap = Trap(predicate, times, reset)
        with self._lock:
            self._traps.append(trap)
        return trap

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        self.reset()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                if self._closed:
                    return
                continue
            try:
                server = socket.create_connection(self.target)
            except OSError:  # nothing listens there (a server gone): the client hears so at once
                with contextlib.suppress(OSError):
                    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    client.close()
                continue
            self._opened += 1
            pair = _Pair(client, server, number=self._opened)
            with self._lock:
                self._pairs.append(pair)
            threading.Thread(target=self._pump, args=(pair,), daemon=True, name="tcp-proxy-pair").start()

    def _pump(self, pair: _Pair) -> None:
        sel = selectors.DefaultSelector()
        sel.register(pair.client, selectors.EVENT_READ, pair.server)
        sel.register(pair.server, selectors.EVENT_READ, pair.client)
        try:
            while True:
                for key, _ in sel.select(timeout=0.5):
                    to_server = key.fileobj is pair.client
                    size = 1 << 16 if to_server or self.rate is None else max(1, self.rate // 20)
                    data = key.fileobj.recv(size)  # type: ignore[union-attr]
                    if not data:
                        if not pair.silent:
                            raise OSError("closed")
                        sel.unregister(key.fileobj)  # a silent path carries no FIN either
                        continue
                    if pair.silent:
                        continue  # swallowed: the other side never hears of it
                    key.data.sendall(data)
                    if not to_server and self.rate is not None:
                        time.sleep(len(data) / self.rate)
                    if to_server and self._sprung(pair, data):
                        if pair.doomed:
                            for s in (pair.client, pair.server):
                                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                            raise OSError("reset by a trap")
                        pair.silent = True
        except OSError:
            with self._lock:
                if pair in self._pairs:
                    self._pairs.remove(pair)
            for s in (pair.client, pair.server):
                with contextlib.suppress(OSError):
                    s.close()
        finally:
            sel.close()

    def _sprung(self, pair: _Pair, data: bytes) -> bool:
        """Whether a command in the client's ``data`` springs a trap (the packets are split here)."""
        pair.pending += data
        sprung = False
        while len(pair.pending) >= 4:
            size = int.from_bytes(pair.pending[:3], "little")
            if len(pair.pending) < 4 + size:
                break
            seq, payload = pair.pending[3], bytes(pair.pending[4 : 4 + size])
            del pair.pending[: 4 + size]
            if seq != 0 or sprung:
                continue
            self.commands.append((pair.number, payload[:80]))
            with self._lock:
                for trap in self._traps:
                    if trap.left > 0 and trap.predicate(payload):
                        trap.left -= 1
                        trap.caught.append(payload[:80])
                        self.trapped += 1
                        pair.doomed = trap.reset
                        sprung = True
                        break
        return sprung
