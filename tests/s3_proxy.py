"""An HTTP proxy in front of the S3 test server, for tests that change or watch a lake's requests.

``S3Proxy(port, strip_conditions=True)`` drops ``If-None-Match`` and ``If-Match``, as some stores
ignore them. ``S3Proxy(port, before=hook)`` calls ``hook(request)`` with each request before
forwarding it; a hook that returns True drops the request unanswered (the client sees its
connection close), which is how a test kills a writer at an exact request. ``latency`` (seconds)
holds every request that long before it is forwarded, as a real store's round trip does, and
``requests`` records each answered request (its kind, key, a LIST's prefix as its key, when it
started and ended, and how long the store itself took to answer), so a
bench counts what a batch asks of the store (``RequestLog``). Give the proxy's ``url`` as
``AWS_ENDPOINT_URL``. ``python -m tests.s3_proxy UPSTREAM_PORT --latency S --log FILE`` runs it in a
process of its own (so that its work shares no interpreter lock with the process it measures),
prints its URL, and appends each answered request to FILE as a JSON line (``read_log``);
``ProxyProcess`` starts it so and reads its log.
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import socketserver
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "KINDS", "Answered", "ProxyProcess", "RequestLog", "S3Proxy", "S3Request", "most_in_flight", "read_log",
    "request_key", "request_kind", "sequential_round_trips",
]

#: The kinds of request a lake makes, as ``request_kind`` names them.
KINDS = ("GET", "PUT", "LIST", "HEAD", "DELETE", "COPY")


@dataclass(frozen=True, slots=True)
class S3Request:
    """One request the proxy received: method, path (``/bucket/key?query`` as sent, percent-encoded),
    headers (lower-case names), body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def key(self) -> str:
        """The path decoded: ``/bucket/db/t@binlog.000001-4/...``."""
        return urllib.parse.unquote(self.path.split("?", 1)[0])


def request_kind(method: str, path: str, headers: dict[str, str]) -> str:
    """What a request asks of the store: LIST (a GET of a bucket with ``list-type`` or ``prefix``),
    COPY (a PUT naming ``x-amz-copy-source``), DELETE (one object, or a POST of ``?delete``), else its
    method (GET, PUT, HEAD; POST for multipart uploads)."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query, keep_blank_values=True)
    if method == "GET" and ("list-type" in query or "prefix" in query or "delimiter" in query):
        return "LIST"
    if method == "PUT" and "x-amz-copy-source" in headers:
        return "COPY"
    if method == "POST" and "delete" in query:
        return "DELETE"
    return method


def request_key(kind: str, path: str) -> str:
    """The decoded key a request names: its object's, or for a LIST the bucket and the prefix it
    lists (``/bucket/db/t/_delta_log/``), so a LIST is told apart by the table it looks at."""
    bucket, _, query = path.partition("?")
    if kind == "LIST":
        prefix = urllib.parse.parse_qs(query, keep_blank_values=True).get("prefix", [""])[0]
        return urllib.parse.unquote(bucket).rstrip("/") + "/" + prefix
    return urllib.parse.unquote(bucket)


@dataclass(frozen=True, slots=True)
class Answered:
    """One request the store answered: its kind, decoded path, status, when (monotonic seconds) it
    reached the proxy and its answer went back, and ``served``: the seconds the store itself took
    (from the proxy's forwarding to the answer read back, without the added latency)."""

    kind: str
    key: str
    status: int
    started: float
    ended: float
    served: float = 0.0


class RequestLog:
    """The requests a proxy answered, in order; thread-safe. ``take()`` hands over and forgets them.
    With ``path``, each is also appended to that file as a JSON line."""

    def __init__(self, path: str | None = None) -> None:
        self._lock = threading.Lock()
        self._answered: list[Answered] = []
        self._file = open(path, "a", buffering=1) if path else None  # noqa: SIM115 (closed by the process's end)

    def add(self, answered: Answered) -> None:
        """Record one answered request."""
        with self._lock:
            self._answered.append(answered)
            if self._file is not None:
                self._file.write(json.dumps([answered.kind, answered.key, answered.status, answered.started,
                                             answered.ended, answered.served]) + "\n")

    def take(self) -> list[Answered]:
        """The requests answered since the last ``take``."""
        with self._lock:
            out, self._answered = self._answered, []
        return out


def read_log(path: str, offset: int) -> tuple[list[Answered], int]:
    """The requests a proxy process logged to ``path`` from byte ``offset`` on, and the offset after
    the last whole line."""
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    whole = data[:data.rfind(b"\n") + 1]
    return [Answered(*json.loads(line)) for line in whole.splitlines()], offset + len(whole)


def sequential_round_trips(answered: list[Answered]) -> int:
    """The longest chain of requests each sent after the one before it was answered: the round trips
    that, one after another, set how long the requests took (the greatest set of pairwise
    non-overlapping intervals, taken by earliest end)."""
    chain, last_end = 0, float("-inf")
    for request in sorted(answered, key=lambda a: a.ended):
        if request.started >= last_end:
            chain += 1
            last_end = request.ended
    return chain


def most_in_flight(answered: list[Answered]) -> int:
    """The most requests under way at one moment (sent, not yet answered)."""
    moments = sorted([(a.started, 1) for a in answered] + [(a.ended, -1) for a in answered])
    under_way = most = 0
    for _, step in moments:  # at a tie an answer (-1) comes before a sending
        under_way += step
        most = max(most, under_way)
    return most


class _Handler(http.server.BaseHTTPRequestHandler):
    upstream: tuple[str, int]
    strip_conditions: bool
    before: Callable[[S3Request], bool] | None
    latency: float
    log: RequestLog

    def _forward(self) -> None:
        started = time.monotonic()
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        dropped = {"host", *(("if-none-match", "if-match") if self.strip_conditions else ())}
        headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
        if self.before is not None and self.before(S3Request(self.command, self.path, {k.lower(): v for k, v in
                                                                                        headers.items()}, body)):
            self.close_connection = True
            return
        if self.latency:
            time.sleep(self.latency)
        forwarded = time.monotonic()
        conn = http.client.HTTPConnection(*self.upstream, timeout=30)
        conn.request(self.command, self.path, body=body or None, headers=headers)
        response = conn.getresponse()
        data = response.read()
        conn.close()
        served = time.monotonic() - forwarded
        # logged before the answer goes back, so a client that reads the log once answered finds it there
        kind = request_kind(self.command, self.path, {k.lower(): v for k, v in headers.items()})
        self.log.add(Answered(kind, request_key(kind, self.path), response.status, started, time.monotonic(),
                              served))
        try:
            self.send_response(response.status)
            # A HEAD's answer has no body but the object's Content-Length, which a reader sizes its read by
            head = self.command == "HEAD"
            for k, v in response.getheaders():
                if k.lower() not in ("transfer-encoding", "connection") and (head or k.lower() != "content-length"):
                    self.send_header(k, v)
            if not head:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client is gone (killed by a test)
            self.close_connection = True

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    def log_message(self, *_args: Any) -> None:
        pass


class _Server(socketserver.ThreadingTCPServer):
    """A thread per connection, and a listen backlog a client's burst fits in: with the default of 5,
    delta-rs' parallel GETs of a log past the sixth wait for TCP's retransmitted SYN (1, 3, 7 s)."""

    daemon_threads = True
    request_queue_size = 256


class S3Proxy:
    """The proxy, serving on a free port of 127.0.0.1 until ``close()`` (module docstring)."""

    def __init__(self, upstream_port: int, *, strip_conditions: bool = False,
                 before: Callable[[S3Request], bool] | None = None, latency: float = 0.0,
                 log: str | None = None) -> None:
        self.requests = RequestLog(log)
        handler = type("Handler", (_Handler,), {"upstream": ("127.0.0.1", upstream_port),
                                                "strip_conditions": strip_conditions,
                                                "before": staticmethod(before) if before else None,
                                                "latency": latency, "log": self.requests})
        self._server = _Server(("127.0.0.1", 0), handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> S3Proxy:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class ProxyProcess:
    """The proxy in a process of its own, holding each request ``latency`` seconds and logging it to
    ``log``: a process that calls delta-rs must not serve the proxy itself (delta-rs holds the
    interpreter lock in some calls while it waits for the store). ``take()`` as ``RequestLog``'s."""

    def __init__(self, upstream_port: int, log: str | os.PathLike[str], latency: float = 0.0) -> None:
        self.log, self.offset = str(log), 0
        with open(self.log, "wb"):
            pass
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.s3_proxy", str(upstream_port), "--latency",
                                      str(latency), "--log", self.log], cwd=root, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def take(self) -> list[Answered]:
        """The requests answered since the last ``take``."""
        answered, self.offset = read_log(self.log, self.offset)
        return answered

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def __enter__(self) -> ProxyProcess:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def main() -> None:
    """Serve until killed, printing the URL first (module docstring)."""
    parser = argparse.ArgumentParser(description="an S3 proxy that holds and logs each request")
    parser.add_argument("upstream_port", type=int)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds each request is held")
    parser.add_argument("--log", help="append each answered request to this file as a JSON line")
    args = parser.parse_args()
    proxy = S3Proxy(args.upstream_port, latency=args.latency, log=args.log)
    print(proxy.url, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
