"""An HTTP proxy in front of the S3 test server, for tests that change or watch a lake's requests.

``S3Proxy(port, strip_conditions=True)`` drops ``If-None-Match`` and ``If-Match``, as some stores
ignore them. ``S3Proxy(port, before=hook)`` calls ``hook(request)`` with each request before
forwarding it; a hook that returns True drops the request unanswered (the client sees its
connection close), which is how a test kills a writer at an exact request. Give the proxy's
``url`` as ``AWS_ENDPOINT_URL``.
"""

from __future__ import annotations

import http.client
import http.server
import socketserver
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["S3Proxy", "S3Request"]


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


class _Handler(http.server.BaseHTTPRequestHandler):
    upstream: tuple[str, int]
    strip_conditions: bool
    before: Callable[[S3Request], bool] | None

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        dropped = {"host", *(("if-none-match", "if-match") if self.strip_conditions else ())}
        headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
        if self.before is not None and self.before(S3Request(self.command, self.path, {k.lower(): v for k, v in
                                                                                        headers.items()}, body)):
            self.close_connection = True
            return
        conn = http.client.HTTPConnection(*self.upstream, timeout=30)
        conn.request(self.command, self.path, body=body or None, headers=headers)
        response = conn.getresponse()
        data = response.read()
        conn.close()
        try:
            self.send_response(response.status)
            for k, v in response.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client is gone (killed by a test)
            self.close_connection = True

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    def log_message(self, *_args: Any) -> None:
        pass


class S3Proxy:
    """The proxy, serving on a free port of 127.0.0.1 until ``close()`` (module docstring)."""

    def __init__(self, upstream_port: int, *, strip_conditions: bool = False,
                 before: Callable[[S3Request], bool] | None = None) -> None:
        handler = type("Handler", (_Handler,), {"upstream": ("127.0.0.1", upstream_port),
                                                "strip_conditions": strip_conditions,
                                                "before": staticmethod(before) if before else None})
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> S3Proxy:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
