"""The accounts of a sandbox server: who the tests and the demo log in as, and with what rights.

========  ===============  =====================================================
user      password         privileges
========  ===============  =====================================================
``root``  ``sluice-root``  everything, over TCP and over the unix socket
``repl``  ``sluice-repl``  ``REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.*``
``ed``    ``sluice-ed``    the same, MariaDB only, authenticated by ``ed25519``
========  ===============  =====================================================
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

__all__ = ["PASSWORDS", "REPL_GRANTS", "create_users"]

log = logging.getLogger(__name__)

PASSWORDS: Mapping[str, str] = {"root": "sluice-root", "repl": "sluice-repl", "ed": "sluice-ed"}
REPL_GRANTS = "REPLICATION SLAVE, REPLICATION CLIENT, SELECT"


class Server(Protocol):
    """What making the accounts needs of a sandbox server (``sluice.sandbox.server.Sandbox``)."""

    has_ed25519_user: bool

    @property
    def is_mariadb(self) -> bool:
        """Whether the server is MariaDB (it then gets the ``ed25519`` user too)."""
        ...

    def sql(self, statement: str, *, database: str | None = None, timeout: float = 120.0) -> str:
        """Run SQL as root over the socket; its rows as text."""
        ...

    def write_client_config(self, password: str | None) -> None:
        """Write the client option file the server's own tools log in with."""
        ...


def create_users(box: Server) -> None:
    """Give root its password, drop anonymous users, create ``repl`` (and ``ed`` on MariaDB);
    none of it is written to the binlog."""
    statements = ["SET sql_log_bin = 0"]
    for host in box.sql("SELECT host FROM mysql.user WHERE user = 'root'").splitlines():
        statements.append(f"ALTER USER 'root'@'{host}' IDENTIFIED BY '{PASSWORDS['root']}'")
    for host in box.sql("SELECT host FROM mysql.user WHERE user = ''").splitlines():
        statements.append(f"DROP USER ''@'{host}'")
    statements += [
        f"CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY '{PASSWORDS['root']}'",
        "GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION",
        f"CREATE USER 'repl'@'%' IDENTIFIED BY '{PASSWORDS['repl']}'",
        f"GRANT {REPL_GRANTS} ON *.* TO 'repl'@'%'",
    ]
    box.sql(";\n".join(statements))
    box.write_client_config(PASSWORDS["root"])
    if box.is_mariadb:
        _create_ed25519_user(box)

def _create_ed25519_user(box: Server) -> None:
    plugin_dir = Path(box.sql("SELECT @@plugin_dir"))
    if not (plugin_dir / "auth_ed25519.so").exists():
        log.warning("no auth_ed25519.so in %s: the sandbox has no ed25519 user 'ed'", plugin_dir)
        return
    box.sql(
        "SET sql_log_bin = 0;\n"
        "INSTALL SONAME 'auth_ed25519';\n"
        f"CREATE USER 'ed'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('{PASSWORDS['ed']}');\n"
        f"GRANT {REPL_GRANTS} ON *.* TO 'ed'@'%'"
    )
    box.has_ed25519_user = True
