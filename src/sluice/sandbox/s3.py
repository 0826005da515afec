"""A throwaway S3 API server for tests and the demo: ``moto_server`` in a process of its own.

``S3Sandbox.start()`` runs moto's standalone server (the ``moto[server]`` package) on a free
loopback port, in its own process group that dies with its parent, waits until it answers, and
creates a bucket. It must be a separate process: inside the process that calls delta-rs it
deadlocks with calls that hold the GIL. ``storage_options()`` are the options a lake on it takes
(``[lake.storage]``), ``env()`` the same as the ``AWS_*`` environment that delta-rs, obstore and
Spark's executors read. The credentials are moto's fixed test values, not secrets.
"""

from __future__ import annotations

import http.client
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sluice.sandbox.process import HOST, SandboxError, die_with_parent, free_port, log_tail, stop_process_group

__all__ = ["S3Sandbox"]

_ACCESS_KEY = "sluice-test"
_SECRET_KEY = "sluice-test-secret"
_REGION = "us-east-1"


class S3Sandbox:
    """A running ``moto_server``; ``stop()`` (or leaving the ``with``) ends it."""

    def __init__(self, port: int, bucket: str, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.port = port
        self.bucket = bucket
        self.proc = proc
        self.log = log

    @classmethod
    def start(cls, *, bucket: str = "lake", timeout: float = 60.0) -> S3Sandbox:
        """Start the server and create ``bucket`` in it."""
        port = free_port()
        log = Path(tempfile.mkstemp(prefix="sluice-s3-", suffix=".log")[1])
        argv = [sys.executable, "-c", "from moto.server import main; main()", "-H", HOST, "-p", str(port)]
        with log.open("wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, preexec_fn=die_with_parent)
        server = cls(port, bucket, proc, log)
        deadline = time.monotonic() + timeout
        while not server._answers():
            if proc.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise SandboxError(f"the S3 test server (moto_server) did not start: {log_tail(log)}"
                                   " (is moto[server] installed? ./run setup installs it)")
            time.sleep(0.2)
        server.create_bucket(bucket)
        return server

    @property
    def endpoint(self) -> str:
        """The server's URL."""
        return f"http://{HOST}:{self.port}"

    def storage_options(self) -> dict[str, str]:
        """The ``[lake.storage]`` options of a lake on this server."""
        return {
            "AWS_ACCESS_KEY_ID": _ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": _SECRET_KEY, "AWS_REGION": _REGION,
            "AWS_ENDPOINT_URL": self.endpoint, "AWS_ALLOW_HTTP": "true",
        }

    def env(self) -> dict[str, str]:
        """The same options as environment variables (delta-rs, obstore and executors read them)."""
        return self.storage_options()

    def create_bucket(self, name: str) -> None:
        """Create bucket ``name`` (an existing one is kept)."""
        self._request("PUT", f"/{name}")

    def _request(self, method: str, path: str) -> int:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=10)
        try:
            conn.request(method, path, headers={"Authorization": f"AWS {_ACCESS_KEY}:x"})
            response = conn.getresponse()
            response.read()
            return response.status
        finally:
            conn.close()

    def _answers(self) -> bool:
        try:
            return self._request("GET", "/") < 500
        except OSError:
            return False

    def stop(self) -> None:
        """End the server and its process group."""
        if self.proc.poll() is None:
            stop_process_group(self.proc.pid, timeout=5)
        self.log.unlink(missing_ok=True)

    def __enter__(self) -> S3Sandbox:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"S3Sandbox({self.endpoint}, bucket={self.bucket!r})"
