"""Throwaway MariaDB and MySQL servers with the binlog on, for tests, benchmarks and the demo.

``Sandbox.start("mariadb" | "mariadb11" | "mysql")`` gives a temporary directory a fresh data directory
(``sandbox.datadir``), writes a CA and a server certificate for TLS, starts the server (its command
line: ``sandbox.argv``) on a free port of 127.0.0.1 with the binary log on (ROW, server id 1, GTIDs
on for MySQL; MariaDB always has GTIDs) and creates the users the tests and the demo log in as
(``sandbox.accounts``: root, repl, and ed on MariaDB). The user-creation statements are not written
to the binlog. A sandbox's server runs in its own process group, which ``stop()`` kills; the server
also dies with the process that started it (unless started ``detached``) and every sandbox still
running is stopped at interpreter exit.

The flavors: ``mariadb`` is the system's MariaDB (10.11 on Debian 12), ``mariadb11`` MariaDB 11.8
LTS and ``mysql`` MySQL 9.x, both from private roots (``sandbox.install``). ``Sandbox.is_mariadb``
is what code asking "is this MariaDB" reads; the DSN's scheme is the family's (``mariadb://``).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Literal

from sluice.dsn import flavor_of
from sluice.errors import ConfigError
from sluice.sandbox import argv
from sluice.sandbox.accounts import PASSWORDS, create_users
from sluice.sandbox.argv import Install
from sluice.sandbox.certs import make_tls_files
from sluice.sandbox.clients import ServerClients
from sluice.sandbox.datadir import fresh_datadir, remove_templates
from sluice.sandbox.install import require_mariadb, require_mariadb11, require_mysql
from sluice.sandbox.process import (
    HOST,
    OWNER_FILE,
    STOP_TIMEOUT,
    SandboxError,
    die_with_parent,
    free_port,
    log_tail,
    stop_process_group,
    sweep_stale_workdirs,
)

log = logging.getLogger(__name__)

Flavor = Literal["mariadb", "mysql", "mariadb11"]
FLAVORS: tuple[Flavor, ...] = ("mariadb", "mysql", "mariadb11")
_INSTALLS: dict[str, Callable[[], Install]] = {
    "mariadb": require_mariadb, "mysql": require_mysql, "mariadb11": require_mariadb11}
START_TIMEOUT = 120.0
_MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux


_live: set[Sandbox] = set()
_live_lock = threading.Lock()


def _stop_all() -> None:
    with _live_lock:
        sandboxes = list(_live)
    for sandbox in sandboxes:
        with contextlib.suppress(Exception):
            sandbox.stop()
    remove_templates()


atexit.register(_stop_all)


class Sandbox(ServerClients):
    """One running throwaway server. Use ``Sandbox.start(...)``; stop it with ``stop()``."""

    host = HOST

    def __init__(self, flavor: Flavor, workdir: Path, port: int, settings: Mapping[str, str],
                 *, owns_workdir: bool, detached: bool) -> None:
        if flavor not in FLAVORS:
            raise ConfigError(f"unknown sandbox flavor {flavor!r}: expected one of {', '.join(FLAVORS)}")
        self.flavor: Flavor = flavor
        self.workdir = workdir
        self.port = port
        self.settings = dict(settings)
        self.version = ""
        self.has_ed25519_user = False
        self._owns_workdir = owns_workdir
        self._detached = detached
        self._process: subprocess.Popen[bytes] | None = None
        self._socket_dir: Path | None = None
        self._install: Install = _INSTALLS[flavor]()
        self.datadir = workdir / "data"
        self.binlog_dir = workdir / "binlog"
        self.error_log = workdir / "error.log"
        self.pid_file = workdir / "server.pid"
        self.client_config = workdir / "client.cnf"
        socket_path = workdir / "server.sock"
        if len(str(socket_path)) > _MAX_SOCKET_PATH:
            self._socket_dir = Path(tempfile.mkdtemp(prefix="sluice-sock-"))
            socket_path = self._socket_dir / "server.sock"
        self.socket = socket_path
        tls = workdir / "tls"
        self.ca_path = tls / "ca.pem"
        self.cert_path = tls / "server-cert.pem"
        self.key_path = tls / "server-key.pem"

    # ---------------------------------------------------------------- lifecycle

    @classmethod
    def start(
        cls,
        flavor: Flavor,
        *,
        port: int | None = None,
        settings: Mapping[str, str] | None = None,
        workdir: Path | None = None,
        detached: bool = False,
        timeout: float = START_TIMEOUT,
    ) -> Sandbox:
        """Initialise and start a server; return when it accepts connections and the users exist.

        ``settings`` become ``--name=value`` server options, after (so overriding) the defaults.
        ``workdir`` is created if needed and kept on ``stop()``; without it a temporary directory
        is used and removed. ``detached`` servers outlive this process (``sluice sandbox up``).
        """
        owns = workdir is None
        if owns:
            sweep_stale_workdirs()
        path = Path(tempfile.mkdtemp(prefix=f"sluice-{flavor}-")) if workdir is None else Path(workdir)
        path.mkdir(parents=True, exist_ok=True)
        if owns:
            (path / OWNER_FILE).write_text(f"{os.getpid()}\n")
        try:
            sandbox = cls(flavor, path.resolve(), port or free_port(), settings or {},
                          owns_workdir=owns, detached=detached)
        except BaseException:
            if owns:
                shutil.rmtree(path, ignore_errors=True)
            raise
        try:
            sandbox._boot(fixed_port=port is not None, timeout=timeout)
        except BaseException:
            sandbox.stop()
            raise
        return sandbox

    def _boot(self, *, fixed_port: bool, timeout: float) -> None:
        fresh = not (self.datadir / "mysql").exists()
        for d in (self.binlog_dir, self.workdir / "tmp"):
            d.mkdir(parents=True, exist_ok=True)
        if not self.cert_path.exists():
            make_tls_files(self.ca_path.parent)
        if fresh:
            fresh_datadir(self.flavor, self._install, self.datadir, timeout=START_TIMEOUT)
        for attempt in range(3):
            try:
                self._launch(timeout=timeout, password=None if fresh else PASSWORDS["root"])
                break
            except SandboxError:
                in_use = "already in use" in log_tail(self.error_log, 60).lower()
                if fixed_port or not in_use or attempt == 2:
                    raise
                self.port = free_port()
        if fresh:
            create_users(self)
        self.write_client_config(PASSWORDS["root"])
        self.version = self.sql("SELECT VERSION()").strip()
        log.info("%s %s sandbox on port %d (%s)", self.flavor, self.version, self.port, self.workdir)

    def restart(self, *, timeout: float = START_TIMEOUT) -> None:
        """Stop the server cleanly and start it again on the same port with the same data."""
        self._shutdown()
        self._launch(timeout=timeout, password=PASSWORDS["root"])

    def stop(self) -> None:
        """Stop the server (its whole process group) and remove what this sandbox created."""
        try:
            # Data that is about to be deleted needs no clean shutdown.
            self._shutdown(kill=self._owns_workdir)
        finally:
            with _live_lock:
                _live.discard(self)
            if self._socket_dir is not None:
                shutil.rmtree(self._socket_dir, ignore_errors=True)
            if self._owns_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)

    def detach(self) -> int:
        """Leave the server running after this process exits; returns its process id."""
        with _live_lock:
            _live.discard(self)
        if self._process is None:
            raise SandboxError("the sandbox is not running")
        pid = self._process.pid
        self._process = None
        return pid

    @property
    def is_mariadb(self) -> bool:
        """True for the MariaDB flavors (``mariadb``, ``mariadb11``)."""
        return self.flavor != "mysql"

    @property
    def pid(self) -> int | None:
        """Process id of the running server, None once stopped or detached."""
        return self._process.pid if self._process is not None else None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self._process is not None else "stopped"
        return f"<Sandbox {self.flavor} {self.version} {self.host}:{self.port} {state}>"

    # ---------------------------------------------------------------- servers' command lines

    def server_argv(self) -> list[str]:
        """The server's full command line (defaults first, then ``settings``)."""
        return argv.server_argv(self._install, [
            f"--datadir={self.datadir}", f"--port={self.port}", f"--bind-address={HOST}",
            f"--socket={self.socket}", f"--pid-file={self.pid_file}", f"--log-error={self.error_log}",
            f"--tmpdir={self.workdir / 'tmp'}", f"--log-bin={self.binlog_dir / 'binlog'}",
            "--server-id=1", "--secure-file-priv=",
            f"--ssl-ca={self.ca_path}", f"--ssl-cert={self.cert_path}", f"--ssl-key={self.key_path}",
        ], self.settings)

    # ---------------------------------------------------------------- process handling

    def _launch(self, *, timeout: float, password: str | None) -> None:
        self.write_client_config(password)
        self.socket.unlink(missing_ok=True)
        out = (self.workdir / "server.out").open("ab")
        try:
            self._process = subprocess.Popen(
                self.server_argv(), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                cwd=self.workdir, start_new_session=True,
                preexec_fn=None if self._detached else die_with_parent,
            )
        finally:
            out.close()
        if not self._detached:
            with _live_lock:
                _live.add(self)
        deadline = time.monotonic() + timeout
        while True:
            code = self._process.poll()
            if code is not None:
                self._process = None
                raise SandboxError(self._failure(f"exited with code {code} while starting"))
            if self._accepts_connections():
                return
            if time.monotonic() > deadline:
                self._shutdown()
                raise SandboxError(self._failure(f"did not accept connections within {timeout:.0f} s"))
            time.sleep(0.1)

    def _accepts_connections(self) -> bool:
        if not self.socket.exists():
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(str(self.socket))
            except OSError:
                return False
        result = subprocess.run(self.client_argv("--batch", "--skip-column-names"), input=b"SELECT 1",
                                capture_output=True, timeout=30, check=False)
        return result.returncode == 0

    def _failure(self, what: str) -> str:
        return (f"the {self.flavor} sandbox server on port {self.port} {what}; its error log "
                f"{self.error_log} ends with:\n{log_tail(self.error_log) or log_tail(self.workdir / 'server.out')}")

    def _shutdown(self, *, kill: bool = False) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        stop_process_group(process.pid, timeout=0.0 if kill else STOP_TIMEOUT)
        with contextlib.suppress(Exception):
            process.wait(timeout=1)

    # ---------------------------------------------------------------- addresses and files

    def dsn(self, user: str = "root", *, password: str | None = None) -> str:
        """``mysql://root:sluice-root@127.0.0.1:PORT/`` (or ``mariadb://...``) for a sandbox user."""
        secret = PASSWORDS.get(user, "") if password is None else password
        auth = f"{user}:{secret}" if secret else user
        return f"{flavor_of(self.is_mariadb)}://{auth}@{self.host}:{self.port}/"

    def binlog_files(self) -> list[str]:
        """Names of the binlog files, oldest first, from the server's binlog index."""
        index = self.binlog_dir / "binlog.index"
        if index.exists():
            return [Path(line.strip()).name for line in index.read_text().splitlines() if line.strip()]
        return sorted(p.name for p in self.binlog_dir.glob("binlog.[0-9]*"))
