"""Throwaway MariaDB and MySQL servers with the binlog on, for tests, benchmarks and the demo.

``Sandbox.start("mariadb" | "mysql")`` initialises a data directory in a temporary directory,
writes a CA and a server certificate for TLS, starts the server on a free port of 127.0.0.1 with
the binary log on (ROW, server id 1, GTIDs on for MySQL; MariaDB always has GTIDs) and creates
the users the tests and the demo log in as (``sandbox.accounts``: root, repl, and ed on MariaDB).
The user-creation statements are not written to the binlog. A sandbox's server runs in its own
process group, which ``stop()`` kills; the server also dies with the process that started it
(unless started ``detached``) and every sandbox still running is stopped at interpreter exit.
"""

from __future__ import annotations

import atexit
import contextlib
import getpass
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Literal

from sluice.errors import ConfigError
from sluice.sandbox.accounts import PASSWORDS, create_users
from sluice.sandbox.certs import make_tls_files
from sluice.sandbox.install import MariadbInstall, MysqlInstall, require_mariadb, require_mysql
from sluice.sandbox.process import (
    HOST,
    OWNER_FILE,
    STOP_TIMEOUT,
    SandboxError,
    client_error,
    die_with_parent,
    free_port,
    log_tail,
    stop_process_group,
    sweep_stale_workdirs,
)

log = logging.getLogger(__name__)

Flavor = Literal["mariadb", "mysql"]
FLAVORS: tuple[Flavor, ...] = ("mariadb", "mysql")
START_TIMEOUT = 120.0
_MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux


_live: set[Sandbox] = set()
_live_lock = threading.Lock()
_templates: dict[str, Path] = {}  # flavor -> an initialised data directory that new sandboxes copy
_templates_lock = threading.Lock()


def _stop_all() -> None:
    with _live_lock:
        sandboxes = list(_live)
    for sandbox in sandboxes:
        with contextlib.suppress(Exception):
            sandbox.stop()
    with _templates_lock:
        for template in _templates.values():
            shutil.rmtree(template.parent, ignore_errors=True)
        _templates.clear()


atexit.register(_stop_all)


class Sandbox:
    """One running throwaway server. Use ``Sandbox.start(...)``; stop it with ``stop()``."""

    host = HOST

    def __init__(self, flavor: Flavor, workdir: Path, port: int, settings: Mapping[str, str],
                 *, owns_workdir: bool, detached: bool) -> None:
        if flavor not in FLAVORS:
            raise ConfigError(f"unknown sandbox flavor {flavor!r}: expected 'mariadb' or 'mysql'")
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
        self._install: MysqlInstall | MariadbInstall = (
            require_mysql() if flavor == "mysql" else require_mariadb()
        )
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
            self._initialize()
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
    def pid(self) -> int | None:
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

    def _mysql(self) -> MysqlInstall:
        assert isinstance(self._install, MysqlInstall)
        return self._install

    def _mariadb(self) -> MariadbInstall:
        assert isinstance(self._install, MariadbInstall)
        return self._install

    def _user_option(self) -> list[str]:
        return [f"--user={getpass.getuser()}"] if os.geteuid() == 0 else []

    def _initialize(self) -> None:
        """Give the sandbox a fresh data directory: a copy of one initialised per process."""
        with _templates_lock:
            template = _templates.get(self.flavor)
            if template is None or not template.exists():
                base = Path(tempfile.mkdtemp(prefix=f"sluice-template-{self.flavor}-"))
                (base / OWNER_FILE).write_text(f"{os.getpid()}\n")
                (base / "tmp").mkdir()
                try:
                    self._run_initialize(base / "data", base)
                except BaseException:
                    shutil.rmtree(base, ignore_errors=True)
                    raise
                template = _templates[self.flavor] = base / "data"
        shutil.copytree(template, self.datadir, symlinks=True)
        (self.datadir / "auto.cnf").unlink(missing_ok=True)  # MySQL: a new server_uuid per sandbox

    def _run_initialize(self, datadir: Path, workdir: Path) -> None:
        init_log = workdir / "init.log"
        if self.flavor == "mysql":
            mysql = self._mysql()
            argv = mysql.command(
                "mysqld", "--no-defaults", *self._user_option(), "--initialize-insecure",
                f"--basedir={mysql.basedir}", f"--datadir={datadir}",
                f"--lc-messages-dir={mysql.lc_messages_dir}", f"--plugin-dir={mysql.plugin_dir}",
                f"--tmpdir={workdir / 'tmp'}", f"--log-error={init_log}",
            )
        else:
            mariadb = self._mariadb()
            argv = [
                str(mariadb.binary("mariadb-install-db")), "--no-defaults", *self._user_option(),
                f"--datadir={datadir}", "--auth-root-authentication-method=normal",
                "--skip-test-db", "--skip-name-resolve",
                f"--tmpdir={workdir / 'tmp'}",
            ]
        with init_log.open("ab") as out:
            result = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, cwd=workdir,
                                    timeout=START_TIMEOUT, check=False)
        if result.returncode != 0:
            raise SandboxError(f"initialising the {self.flavor} data directory {datadir} failed "
                               f"(exit {result.returncode}); {init_log} ends with:\n{log_tail(init_log)}")

    def server_argv(self) -> list[str]:
        """The server's full command line (defaults first, then ``settings``)."""
        options = [
            "--no-defaults", *self._user_option(),
            f"--datadir={self.datadir}", f"--port={self.port}", f"--bind-address={HOST}",
            f"--socket={self.socket}", f"--pid-file={self.pid_file}", f"--log-error={self.error_log}",
            f"--tmpdir={self.workdir / 'tmp'}", f"--log-bin={self.binlog_dir / 'binlog'}",
            "--server-id=1", "--secure-file-priv=",
            f"--ssl-ca={self.ca_path}", f"--ssl-cert={self.cert_path}", f"--ssl-key={self.key_path}",
        ]
        if self.flavor == "mysql":
            mysql = self._mysql()
            options += [
                f"--basedir={mysql.basedir}", f"--lc-messages-dir={mysql.lc_messages_dir}",
                f"--plugin-dir={mysql.plugin_dir}",
                "--gtid-mode=ON", "--enforce-gtid-consistency=ON", "--mysqlx=OFF",
            ]  # binlog_format is ROW by default and the option is deprecated in MySQL 9
        else:
            options += ["--binlog-format=ROW"]
        options += [f"--{name.lstrip('-')}={value}" for name, value in self.settings.items()]
        if self.flavor == "mysql":
            return self._mysql().command("mysqld", *options)
        return [str(self._mariadb().binary("mariadbd")), *options]

    def client_argv(self, *extra: str, user: str | None = None, password: str | None = None) -> list[str]:
        """The server's own CLI client: as root over the unix socket, or as ``user`` over TCP.

        With ``user``, the client logs in over TCP to 127.0.0.1 with ``password`` (default: the
        sandbox password of that user); TLS options can be passed in ``extra``.
        """
        if user is None:
            args = [f"--defaults-file={self.client_config}", *extra]
        else:
            secret = PASSWORDS.get(user, "") if password is None else password
            args = ["--no-defaults", "--protocol=TCP", f"--host={self.host}", f"--port={self.port}",
                    f"--user={user}", f"--password={secret}", *extra]
        if self.flavor == "mysql":
            return self._mysql().command("mysql", *args)
        return [str(self._mariadb().binary("mariadb")), *args]

    def binlog_tool_argv(self, *extra: str) -> list[str]:
        """``mysqlbinlog`` / ``mariadb-binlog`` of this server's distribution."""
        if self.flavor == "mysql":
            return self._mysql().command("mysqlbinlog", *extra)
        return [str(self._mariadb().binary("mariadb-binlog")), *extra]

    def write_client_config(self, password: str | None) -> None:
        """The client option file ``client_argv`` reads (socket, user, password)."""
        lines = ["[client]", "user=root", f"socket={self.socket}"]
        if password is not None:
            lines.append(f"password={password}")
        self.client_config.write_text("\n".join(lines) + "\n")
        self.client_config.chmod(0o600)

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

    # ---------------------------------------------------------------- SQL

    def sql(self, statement: str, *, database: str | None = None, timeout: float = 120.0) -> str:
        """Run SQL (one or more statements) as root over the socket; tab-separated rows, no header.

        Raises the ``ServerError`` matching the client's ``ERROR errno (sqlstate)`` line,
        ``TransportError`` when the client cannot reach the server, or ``SandboxError`` when the
        client fails otherwise.
        """
        if self._process is None:
            raise SandboxError(f"the {self.flavor} sandbox on port {self.port} is not running "
                               "(stopped, detached or never started)")
        extra = ["--batch", "--skip-column-names"]
        if database is not None:
            extra.append(f"--database={database}")
        result = subprocess.run(self.client_argv(*extra), input=statement.encode(),
                                capture_output=True, timeout=timeout, check=False)
        if result.returncode != 0:
            raise client_error(f"the {self.flavor} client (socket {self.socket})", result.returncode,
                               result.stderr.decode(errors="replace").strip())
        return result.stdout.decode(errors="replace").rstrip("\n")

    # ---------------------------------------------------------------- addresses and files

    def dsn(self, user: str = "root", *, password: str | None = None) -> str:
        """``mysql://root:sluice-root@127.0.0.1:PORT/`` (or ``mariadb://...``) for a sandbox user."""
        secret = PASSWORDS.get(user, "") if password is None else password
        auth = f"{user}:{secret}" if secret else user
        return f"{self.flavor}://{auth}@{self.host}:{self.port}/"

    def binlog_files(self) -> list[str]:
        """Names of the binlog files, oldest first, from the server's binlog index."""
        index = self.binlog_dir / "binlog.index"
        if index.exists():
            return [Path(line.strip()).name for line in index.read_text().splitlines() if line.strip()]
        return sorted(p.name for p in self.binlog_dir.glob("binlog.[0-9]*"))
