"""The command lines of a sandbox's programs in each install: the initialisation of a data
directory, the server with its distribution's own options, the CLI client and the binlog tool
(``mysqld`` / ``mariadbd``, ``mysql`` / ``mariadb``, ``mysqlbinlog`` / ``mariadb-binlog``) and the
dump tool (``mysqldump`` / ``mariadb-dump``). The programs of a private root (MySQL 9.x, MariaDB
11.8) run through its loader and are given every directory of the root explicitly, so that none of
them reads the host's MariaDB files.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from sluice.sandbox.install import Mariadb11Install, MariadbInstall, MysqlInstall

__all__ = ["Install", "binlog_tool_argv", "client_argv", "dump_tool_argv", "initialize_argv", "server_argv"]

Install = MysqlInstall | MariadbInstall | Mariadb11Install


def _user_option() -> list[str]:
    return [f"--user={getpass.getuser()}"] if os.geteuid() == 0 else []


def initialize_argv(install: Install, datadir: Path, workdir: Path, init_log: Path) -> list[str]:
    """``mysqld --initialize-insecure`` or ``mariadb-install-db`` for an empty ``datadir``: root
    without a password, temporary files in ``workdir/tmp``."""
    if isinstance(install, MysqlInstall):
        return install.command(
            "mysqld", "--no-defaults", *_user_option(), "--initialize-insecure",
            f"--basedir={install.basedir}", f"--datadir={datadir}",
            f"--lc-messages-dir={install.lc_messages_dir}", f"--plugin-dir={install.plugin_dir}",
            f"--tmpdir={workdir / 'tmp'}", f"--log-error={init_log}",
        )
    args = [
        "--no-defaults", *_user_option(),
        f"--datadir={datadir}", "--auth-root-authentication-method=normal",
        "--skip-test-db", "--skip-name-resolve",
        f"--tmpdir={workdir / 'tmp'}",
    ]
    if isinstance(install, Mariadb11Install):
        # The script runs its helpers from --basedir and passes the options it does not know on to
        # mariadbd (mariadb-install-db's parse_arguments).
        return [str(install.binary("mariadb-install-db")), *args,
                f"--basedir={install.install_db_basedir}", *_mariadb11_dirs(install)]
    return [str(install.binary("mariadb-install-db")), *args]


def _mariadb11_dirs(install: Mariadb11Install) -> list[str]:
    return [f"--lc-messages-dir={install.lc_messages_dir}",
            f"--character-sets-dir={install.charsets_dir}", f"--plugin-dir={install.plugin_dir}"]


def server_argv(install: Install, options: Sequence[str], settings: Mapping[str, str]) -> list[str]:
    """The server's command line: ``--no-defaults``, ``options``, then the distribution's own (MySQL:
    GTIDs on, no X plugin; MariaDB: ROW format), then ``settings`` as ``--name=value``."""
    args = ["--no-defaults", *_user_option(), *options]
    if isinstance(install, MysqlInstall):
        args += [
            f"--basedir={install.basedir}", f"--lc-messages-dir={install.lc_messages_dir}",
            f"--plugin-dir={install.plugin_dir}",
            "--gtid-mode=ON", "--enforce-gtid-consistency=ON", "--mysqlx=OFF",
        ]  # binlog_format is ROW by default and the option is deprecated in MySQL 9
    else:
        if isinstance(install, Mariadb11Install):
            args += [f"--basedir={install.basedir}", *_mariadb11_dirs(install)]
        args += ["--binlog-format=ROW"]
    args += [f"--{name.lstrip('-')}={value}" for name, value in settings.items()]
    if isinstance(install, MysqlInstall):
        return install.command("mysqld", *args)
    if isinstance(install, Mariadb11Install):
        return install.command("mariadbd", *args)
    return [str(install.binary("mariadbd")), *args]


def client_argv(install: Install, *args: str) -> list[str]:
    """The distribution's CLI client (``mysql`` / ``mariadb``) with ``args``."""
    if isinstance(install, MysqlInstall):
        return install.command("mysql", *args)
    if isinstance(install, Mariadb11Install):
        return install.command("mariadb", *args)
    return [str(install.binary("mariadb")), *args]


def binlog_tool_argv(install: Install, *args: str) -> list[str]:
    """``mysqlbinlog`` / ``mariadb-binlog`` with ``args``."""
    if isinstance(install, MysqlInstall):
        return install.command("mysqlbinlog", *args)
    if isinstance(install, Mariadb11Install):
        return install.command("mariadb-binlog", *args)
    return [str(install.binary("mariadb-binlog")), *args]


def dump_tool_argv(install: Install, *args: str) -> list[str]:
    """``mysqldump`` / ``mariadb-dump`` (beside the client) with ``args``."""
    if isinstance(install, MysqlInstall):
        return install.command("mysqldump", *args)
    if isinstance(install, Mariadb11Install):
        return install.command("mariadb-dump", *args)
    return [str(install.binary("mariadb").parent / "mariadb-dump"), *args]
