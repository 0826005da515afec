"""A sandbox server's own client programs: its CLI client, ``mysqlbinlog`` / ``mariadb-binlog`` and
``mysqldump`` / ``mariadb-dump``, with the command lines and option file that reach the server,
and SQL run through the client as root over the unix socket.

``ServerClients`` is the half of ``Sandbox`` (``sluice.sandbox.server``) that talks to a running
server through these programs; the server's files and process are ``Sandbox``'s.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from sluice.sandbox import argv
from sluice.sandbox.accounts import PASSWORDS
from sluice.sandbox.argv import Install
from sluice.sandbox.process import SandboxError, client_error

__all__ = ["ServerClients", "run_sql"]


class ServerClients:
    """The server's client programs and SQL through them (module docstring)."""

    flavor: str
    host: str
    port: int
    socket: Path
    client_config: Path
    _install: Install
    _process: subprocess.Popen[bytes] | None

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
        return argv.client_argv(self._install, *args)

    def binlog_tool_argv(self, *extra: str) -> list[str]:
        """``mysqlbinlog`` / ``mariadb-binlog`` of this server's distribution."""
        return argv.binlog_tool_argv(self._install, *extra)

    def dump_tool_argv(self, *extra: str) -> list[str]:
        """``mysqldump`` / ``mariadb-dump`` of this server's distribution, as root over the socket."""
        return argv.dump_tool_argv(self._install, f"--defaults-file={self.client_config}", *extra)

    def write_client_config(self, password: str | None) -> None:
        """The client option file ``client_argv`` reads (socket, user, password)."""
        lines = ["[client]", "user=root", f"socket={self.socket}"]
        if password is not None:
            lines.append(f"password={password}")
        self.client_config.write_text("\n".join(lines) + "\n")
        self.client_config.chmod(0o600)

    def sql(self, statement: str, *, database: str | None = None, timeout: float = 120.0,
            columns: bool = False) -> str:
        """Run SQL (one or more statements) as root over the socket; tab-separated rows, no header
        (with ``columns``, the first line names the columns).

        Raises the ``ServerError`` matching the client's ``ERROR errno (sqlstate)`` line,
        ``TransportError`` when the client cannot reach the server, or ``SandboxError`` when the
        client fails otherwise.
        """
        if self._process is None:
            raise SandboxError(f"the {self.flavor} sandbox on port {self.port} is not running "
                               "(stopped, detached or never started)")
        return run_sql(self.client_argv(), statement, who=f"the {self.flavor} client (socket {self.socket})",
                       database=database, timeout=timeout, columns=columns)


def run_sql(client: list[str], statement: str, *, who: str, database: str | None = None,
            timeout: float = 120.0, columns: bool = False) -> str:
    """Run SQL through the CLI client command line ``client`` (``ServerClients.sql``'s rows and
    errors); ``who`` names the client in errors."""
    extra = ["--batch"] if columns else ["--batch", "--skip-column-names"]
    if database is not None:
        extra.append(f"--database={database}")
    result = subprocess.run([*client, *extra], input=statement.encode(), capture_output=True,
                            timeout=timeout, check=False)
    if result.returncode != 0:
        raise client_error(who, result.returncode, result.stderr.decode(errors="replace").strip())
    return result.stdout.decode(errors="replace").rstrip("\n")
