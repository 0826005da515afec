"""Server binaries for the sandboxes: MariaDB 10.x from the system, MySQL 9.x and MariaDB 11.8
unpacked privately.

MariaDB 10.x comes from the distribution's ``mariadb-server`` / ``mariadb-client`` packages; this
module only finds its binaries and says what to install when they are missing.

MySQL 9.x is taken from Debian unstable's ``mysql-server-core`` and ``mysql-client-core``, MariaDB
11.8 LTS from Debian 13 "trixie"'s ``mariadb-server-core``, ``mariadb-server`` (its plugins, the
ed25519 one among them), ``mariadb-client-core`` and ``mariadb-client`` (``mariadb-binlog``). Both
need a newer C library than the hosts sluice runs on, so each is unpacked with the closure of its
shared libraries into a private root under the user's cache directory and run through that root's
own dynamic loader (``sluice.sandbox.private_root``). ``mariadb-install-db`` is a shell script that
runs ``my_print_defaults``, ``resolveip`` and ``mariadbd`` from its ``--basedir``: the MariaDB 11.8
root carries a basedir whose programs are scripts running the real ones through the loader.

Run ``python -m sluice.sandbox.install mysql|mariadb|mariadb11|all`` to install or check.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sluice.errors import ConfigError
from sluice.sandbox import private_root
from sluice.sandbox.private_root import MARKER, PrivateRoot, Recipe, cache_dir, say

R = TypeVar("R", bound=PrivateRoot)

__all__ = ["MARKER", "Mariadb11Install", "MariadbInstall", "MysqlInstall", "cache_dir", "find_binary",
           "find_mariadb11", "find_mysql", "install_mariadb11", "install_mysql", "require_mariadb",
           "require_mariadb11", "require_mysql"]


# --------------------------------------------------------------------------------------------
# MySQL 9.x and MariaDB 11.8 in private roots


@dataclass(frozen=True, slots=True)
class MysqlInstall(PrivateRoot):
    """A complete private MySQL 9.x root."""


# The programs mariadb-install-db runs from its --basedir, and where they are in the root.
_INSTALL_DB_HELPERS = {"bin/my_print_defaults": "usr/bin/my_print_defaults",
                       "bin/resolveip": "usr/bin/resolveip", "sbin/mariadbd": "usr/sbin/mariadbd"}
_WRAPPER = """#!/bin/sh
# Runs the root's {name} through the root's own dynamic loader (its C library is newer than the host's).
root=$(cd "$(dirname "$0")/../.." && pwd)
exec "$root/{loader}" --inhibit-cache --library-path "{libs}" "$root/{target}" "$@"
"""


@dataclass(frozen=True, slots=True)
class Mariadb11Install(PrivateRoot):
    """A complete private MariaDB 11.8 root."""

    KIND = "mariadb11"

    @property
    def lc_messages_dir(self) -> Path:
        """The server's ``--lc-messages-dir``: Debian 13 moved it to ``share/mariadb``."""
        return self.root / "usr" / "share" / "mariadb"

    @property
    def charsets_dir(self) -> Path:
        """The server's ``--character-sets-dir``."""
        return self.lc_messages_dir / "charsets"

    @property
    def install_db_basedir(self) -> Path:
        """The ``--basedir`` of ``mariadb-install-db``: its helpers run through the root's loader."""
        return self.root / "install-db"


def _write_install_db_basedir(install: Mariadb11Install) -> None:
    base = install.install_db_basedir
    loader = install.loader.relative_to(install.root)
    libs = ":".join(f"$root/{Path(d).relative_to(install.root)}"
                    for d in install.lib_search_path.split(":"))
    for wrapper, target in _INSTALL_DB_HELPERS.items():
        path = base / wrapper
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_WRAPPER.format(name=Path(target).name, loader=loader, libs=libs, target=target))
        path.chmod(0o755)
    for shared in ("share", "lib"):  # the SQL scripts, error messages and plugins, as they are
        (base / shared).symlink_to(Path("..") / "usr" / shared)


MYSQL = Recipe(MysqlInstall, "MySQL", "sid", ("mysql-server-core", "mysql-client-core"),
               ("mysqld", "mysql", "mysqlbinlog"), "SLUICE_MYSQL_ROOT")
MARIADB11 = Recipe(Mariadb11Install, "MariaDB 11.8", "trixie",
                   ("mariadb-server-core", "mariadb-server", "mariadb-client-core", "mariadb-client"),
                   ("mariadbd", "mariadb", "mariadb-binlog"), "SLUICE_MARIADB11_ROOT",
                   _write_install_db_basedir)


def find_mysql() -> MysqlInstall | None:
    """The newest complete MySQL install in the cache (or ``$SLUICE_MYSQL_ROOT``), if any."""
    return private_root.find_root(MYSQL)


def find_mariadb11() -> Mariadb11Install | None:
    """The newest complete MariaDB 11.8 install in the cache (or ``$SLUICE_MARIADB11_ROOT``), if any."""
    return private_root.find_root(MARIADB11)


def _required(recipe: Recipe[R], found: R | None, what: str) -> R:
    if found is None:
        raise ConfigError(
            f"{what} is not installed under {cache_dir()}: run 'python -m sluice.sandbox.install "
            f"{recipe.kind.KIND}' (or './run test', which does it)"
        )
    return found


def require_mysql() -> MysqlInstall:
    """The MySQL install, or a ``ConfigError`` saying how to get one."""
    return _required(MYSQL, find_mysql(), "MySQL 9.x")


def require_mariadb11() -> Mariadb11Install:
    """The MariaDB 11.8 install, or a ``ConfigError`` saying how to get one."""
    return _required(MARIADB11, find_mariadb11(), "MariaDB 11.8")


def install_mysql(*, force: bool = False) -> MysqlInstall:
    """Install MySQL 9.x into the cache unless a complete install is there already."""
    return private_root.install(MYSQL, force=force)


def install_mariadb11(*, force: bool = False) -> Mariadb11Install:
    """Install MariaDB 11.8 into the cache unless a complete install is there already."""
    return private_root.install(MARIADB11, force=force)


# --------------------------------------------------------------------------------------------
# MariaDB from the system

_SEARCH_DIRS = ("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin")
MARIADB_BINARIES = ("mariadbd", "mariadb-install-db", "mariadb", "mariadb-binlog")
MARIADB_HOWTO = "apt-get install mariadb-server mariadb-client (or run ./run test, which does it)"


def find_binary(name: str) -> Path | None:
    """Path of an executable on ``PATH`` or in the usual system directories; None when absent."""
    found = shutil.which(name)
    if found:
        return Path(found)
    for directory in _SEARCH_DIRS:
        path = Path(directory) / name
        if path.exists() and os.access(path, os.X_OK):
            return path
    return None


@dataclass(frozen=True, slots=True)
class MariadbInstall:
    """Where the system's MariaDB binaries are."""

    binaries: Mapping[str, Path]

    def binary(self, name: str) -> Path:
        """Path of MariaDB binary ``name`` (one of ``MARIADB_BINARIES``)."""
        return self.binaries[name]

    @property
    def basedir(self) -> Path:
        """The server's ``--basedir``: the parent of ``mariadbd``'s directory."""
        return self.binaries["mariadbd"].parent.parent


def require_mariadb() -> MariadbInstall:
    """The system's MariaDB binaries; ``ConfigError`` saying what to install when any is missing."""
    found = {name: find_binary(name) for name in MARIADB_BINARIES}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise ConfigError(f"MariaDB binaries not found: {', '.join(missing)}; install them: {MARIADB_HOWTO}")
    return MariadbInstall({name: path for name, path in found.items() if path is not None})


def check_mariadb() -> MariadbInstall:
    """``require_mariadb`` and report the server version found."""
    install = require_mariadb()
    result = subprocess.run([str(install.binary("mariadbd")), "--version"], capture_output=True, text=True)
    say(f"MariaDB: {result.stdout.strip() or result.stderr.strip()}")
    return install


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sluice.sandbox.install mysql|mariadb|mariadb11|all``: install MySQL 9.x and
    MariaDB 11.8 privately, check the system's MariaDB."""
    parser = argparse.ArgumentParser(
        prog="python -m sluice.sandbox.install",
        description="Install (MySQL 9.x, MariaDB 11.8) or check (the system's MariaDB) the server "
                    "binaries the sandboxes run.",
    )
    parser.add_argument("what", choices=("mysql", "mariadb", "mariadb11", "all"), help="which server")
    parser.add_argument("--force", action="store_true",
                        help="reinstall MySQL / MariaDB 11.8 even when installed")
    args = parser.parse_args(argv)
    try:
        if args.what in ("mariadb", "all"):
            check_mariadb()
        if args.what in ("mysql", "all"):
            install_mysql(force=args.force)
        if args.what in ("mariadb11", "all"):
            install_mariadb11(force=args.force)
    except ConfigError as exc:
        print(f"sluice: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
