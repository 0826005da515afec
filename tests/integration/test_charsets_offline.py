"""Character sets of a live server's binlog files read offline (``sluice dump``, no server).

MariaDB 10.11 set to ``character_set_server=utf8mb4`` (as Debian's configuration does), with its
default NO_LOG row metadata: the TABLE_MAP names no character set, so the columns that declare none
take their database's, which the CREATE DATABASE's QUERY event tells. A table whose database was
created before the files read has those values printed marked, with a warning naming the columns.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

pytestmark = pytest.mark.mariadb

TEXT = "café ✓ 日本"


def dump(*files: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sluice.cli", "dump", "--tables", r"cs\..*", *files],
                          capture_output=True, text=True, timeout=300, check=False)


def test_utf8mb4_server_offline(sandbox_factory: Any) -> None:
    server = sandbox_factory("mariadb", settings={"character_set_server": "utf8mb4",
                                                  "collation_server": "utf8mb4_general_ci"})
    server.sql("SET NAMES utf8mb4;"
               "CREATE DATABASE cs;"
               "FLUSH BINARY LOGS;"
               "CREATE TABLE cs.t (id INT PRIMARY KEY, v VARCHAR(20), tx TEXT, c CHAR(3));"
               f"INSERT INTO cs.t VALUES (1, '{TEXT}', '{TEXT}', 'née');"
               "FLUSH BINARY LOGS;")
    paths = [str(server.binlog_dir / name) for name in server.binlog_files()]
    whole = dump(*paths)
    assert whole.returncode == 0, whole.stderr
    (line,) = whole.stdout.splitlines()
    assert json.loads(line)["after"] == {"id": 1, "v": TEXT, "tx": TEXT, "c": "née"}

    # From the file after the CREATE DATABASE on, the database's character set is not known: the
    # values are printed as their bytes, marked, with a warning naming the columns.
    later = dump(*paths[1:])
    assert later.returncode == 0, later.stderr
    (line,) = later.stdout.splitlines()
    record = json.loads(line)
    assert record["after"] == {"id": 1, "v": {"hex": TEXT.encode().hex()}, "tx": {"hex": TEXT.encode().hex()},
                               "c": {"hex": "née".encode().hex()}}
    assert "cs.t" in later.stderr and "`v`, `tx`, `c`" in later.stderr and "CREATE DATABASE" in later.stderr
