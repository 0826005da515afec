"""Capture from a read-only server, as from a replica that many teams must point CDC at.

A server of its own runs with ``read_only`` and, on MySQL, ``super_read_only`` ON (which refuses
writes even to root): ``sluice run`` snapshots its tables and streams its binlog from it. sluice
writes nothing to the source: any statement that wrote would fail there, and the server's binlog
end and GTIDs stay where they were while sluice runs.
"""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from tests.conftest import TWO_FLAVORS
from tests.integration.exactly_once import exactly_once

pytestmark = pytest.mark.spark


def _read_only(server, on: bool) -> None:
    value = "ON" if on else "OFF"
    if server.is_mariadb:
        server.sql(f"SET GLOBAL read_only = {value}")
    elif on:
        server.sql("SET GLOBAL super_read_only = ON")  # read_only with it
    else:
        server.sql("SET GLOBAL super_read_only = OFF; SET GLOBAL read_only = OFF")


def _end(server) -> str:
    """The binlog's end and the executed GTIDs: what a write would move."""
    status = "SHOW MASTER STATUS" if server.is_mariadb else "SHOW BINARY LOG STATUS"
    gtids = "@@GLOBAL.gtid_binlog_pos" if server.is_mariadb else "@@GLOBAL.gtid_executed"
    return server.sql(status) + "|" + server.sql(f"SELECT {gtids}")


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_a_snapshot_and_a_stream_from_a_read_only_server(sandbox_factory, tmp_path, flavor):
    server = sandbox_factory(flavor)
    db = f"ro_{uuid.uuid4().hex[:8]}"
    server.sql(f"CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(20));"
               f"CREATE TABLE {db}.k (a INT, b INT)")
    server.sql(";".join(f"INSERT INTO {db}.t VALUES ({i}, 'v{i}')" for i in range(1, 301)))
    server.sql(f"INSERT INTO {db}.k VALUES (1, 1), (2, 2)")
    if not server.is_mariadb:  # the key-less table's consistent scan: LOCK INSTANCE FOR BACKUP (README)
        server.sql("GRANT BACKUP_ADMIN ON *.* TO 'repl'@'%'")
    lake = tmp_path / "lake"
    args = [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("repl"), "--lake", str(lake),
            "--tables", rf"{db}\..*", "--trigger", "once"]
    _read_only(server, True)
    if not server.is_mariadb:  # MariaDB's read_only lets root (READ_ONLY ADMIN) write
        with pytest.raises(Exception, match=r"super-read-only"):
            server.sql(f"INSERT INTO {db}.t VALUES (0, 'root too')")
    before = _end(server)
    first = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-4000:]
    assert _end(server) == before, "sluice wrote to the source"
    exactly_once(server, lake, db, None)  # the snapshot
    # The replica applies its primary's changes (here: the server's own, with read_only off a moment).
    _read_only(server, False)
    start = server.sql("SHOW MASTER STATUS" if server.is_mariadb else "SHOW BINARY LOG STATUS").split("\t")[:2]
    server.sql(f"UPDATE {db}.t SET v = 'changed' WHERE id % 4 = 0; DELETE FROM {db}.t WHERE id % 9 = 0;"
               f"INSERT INTO {db}.t VALUES (1000, 'new'); INSERT INTO {db}.k VALUES (3, 3)")
    _read_only(server, True)
    before = _end(server)
    second = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-4000:]
    assert _end(server) == before, "sluice wrote to the source"
    assert exactly_once(server, lake, db, ":".join(start)) == 75 + 33 + 1 + 1
