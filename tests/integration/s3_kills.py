"""kill -9 of a process at an exact request to a lake on S3: the proxy's hook (``Killer``) and the
requests a test kills at (``copied_to``, ``objects_deleted``, ``first_commit``), by where they
write (``folder``)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable

from tests.s3_proxy import S3Request

__all__ = ["Killer", "copied_to", "first_commit", "folder", "objects_deleted"]

Match = Callable[[S3Request], bool]


class Killer:
    """The proxy's hook: SIGKILL ``proc`` at the first request ``match`` takes, and drop that request."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.match: Match | None = None
        self.fired = threading.Event()

    def arm(self, proc: subprocess.Popen[bytes], match: Match) -> None:
        with self.lock:
            self.proc, self.match = proc, match
            self.fired.clear()

    def __call__(self, request: S3Request) -> bool:
        with self.lock:
            if self.proc is None or self.match is None or not self.match(request):
                return False
            os.kill(self.proc.pid, signal.SIGKILL)
            self.match = None
            self.fired.set()
            return True


def folder(uri: str) -> str:
    """The path of a lake's folder ``uri`` (``s3://bucket/key``) as the proxy sees its objects:
    ``/bucket/key/``."""
    return "/" + uri.split("://", 1)[1].rstrip("/") + "/"


def copied_to(prefix: str) -> Match:
    """The copy of an object to a key under ``prefix`` (a proxy path, ``folder``; an archive's
    ``.../<table>@`` too)."""
    return lambda r: r.method == "PUT" and "x-amz-copy-source" in r.headers and r.key.startswith(prefix)


def objects_deleted(prefix: str) -> Match:
    """The removal of objects under ``prefix`` (a proxy path): one key, or a batch of them."""
    key = prefix.split("/", 2)[2]  # the object keys, without the bucket
    return lambda r: ((r.method == "DELETE" and r.key.startswith(prefix))
                      or (r.method == "POST" and "delete" in r.path and f"<Key>{key}".encode() in r.body))


def first_commit(prefix: str, column: str) -> Match:
    """The write of the first log entry of the Delta table under ``prefix`` (a proxy path) whose
    schema names ``column``."""
    entry = f"{prefix}_delta_log/00000000000000000000.json"
    return lambda r: r.method == "PUT" and r.key == entry and column.encode() in r.body
