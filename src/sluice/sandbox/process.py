"""The processes of sandbox servers: ports, process groups, liveness, stale work directories, and
what a failed client run means.

A sandbox's server runs in its own process group and gets SIGKILL when the process that started it
dies (``die_with_parent``, run between fork and exec); ``stop_process_group`` ends the group,
politely first. A temporary work directory records its creator's pid (``OWNER_FILE``), so that
directories left by killed processes are swept at the next start.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import re
import shutil
import signal
import socket
import tempfile
import time
from pathlib import Path

from sluice.errors import SluiceError, TransportError, server_error
from sluice.processes import pid_alive

__all__ = [
    "HOST", "OWNER_FILE", "STOP_TIMEOUT", "SandboxError", "client_error", "free_port",
    "stop_process_group",
]

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
STOP_TIMEOUT = 60.0
OWNER_FILE = "owner.pid"  # in temporary workdirs: the pid of the process that created it
CLIENT_ERRNO_MIN = 2000  # errmsg.h: client errors are 2000..2999, server errors below
_ERROR_LINE = re.compile(r"ERROR (\d+) \(([0-9A-Za-z]{5})\)(?: at line \d+)?: (.*)", re.S)


class SandboxError(SluiceError):
    """A sandbox server could not be initialised, started or stopped; carries the log's tail."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def die_with_parent() -> None:
    """Runs in the child before exec: the server gets SIGKILL when its parent goes away."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file, for error messages; empty when it cannot be read."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def stop_process_group(pid: int, *, timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM the process group led by ``pid``, then SIGKILL it if it has not gone in time.

    With ``timeout=0`` the group is killed at once.
    """
    steps = ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)) if timeout > 0 else ((signal.SIGKILL, 10.0),)
    for sig, wait in steps:
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            if not pid_alive(pid):
                return
            time.sleep(0.05)
    raise SandboxError(f"server process {pid} did not stop after SIGTERM and SIGKILL")


def sweep_stale_workdirs() -> None:
    """Remove temporary sandbox directories left by processes that were killed.

    A directory is stale when the process that created it and the server that ran in it are
    both gone (a detached server outlives its creator and is kept).
    """
    for path in Path(tempfile.gettempdir()).glob("sluice-*-*"):
        try:
            owner = int((path / OWNER_FILE).read_text().strip() or 0)
            server = path / "server.pid"
            server_pid = int(server.read_text().strip() or 0) if server.exists() else 0
        except (OSError, ValueError):
            continue
        if owner > 0 and not pid_alive(owner) and (server_pid <= 0 or not pid_alive(server_pid)):
            log.info("removing the stale sandbox directory %s", path)
            shutil.rmtree(path, ignore_errors=True)


def client_error(who: str, returncode: int, message: str) -> SluiceError:
    """What a failed ``mysql`` / ``mariadb`` client run means: the ``ServerError`` of its
    ``ERROR errno (sqlstate)`` line, a ``TransportError`` for the client's own CR_* codes (it could
    not reach the server), else a ``SandboxError``."""
    match = _ERROR_LINE.search(message)
    if match and int(match[1]) >= CLIENT_ERRNO_MIN:
        return TransportError(f"{who} could not talk to the sandbox: {message}")
    if match:
        return server_error(int(match[1]), match[2], match[3].strip())
    return SandboxError(f"{who} failed (exit {returncode}): {message}")
