"""Replicas the sandbox makes (``sluice.sandbox.replication``, ``sluice sandbox replica|promote``):
following by GTID or by file and offset, with ``log_replica_updates`` on or off, read-only until
promoted, and promoted as a failover does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sluice.errors import ServerError
from sluice.sandbox.process import SandboxError
from sluice.sandbox.replication import ReplicationOptions, promote, replication_status, wait_caught_up
from tests.conftest import THREE_FLAVORS, TWO_FLAVORS

pytestmark = pytest.mark.slow  # each test starts servers of its own


def _var(server, name: str) -> str:
    return server.sql(f"SELECT @@GLOBAL.{name}")


def _ids(server) -> list[int]:
    return [int(i) for i in server.sql("SELECT id FROM r.t ORDER BY id").split()]


def _binlog_has(server, marker: str) -> bool:
    """Whether the server's own binlog holds a rows event of a transaction that wrote ``marker``."""
    for name in server.binlog_files():
        if marker in subprocess.run(server.binlog_tool_argv("-vv", str(server.binlog_dir / name)),
                                    capture_output=True, text=True, timeout=60, check=True).stdout:
            return True
    return False


@pytest.mark.parametrize("flavor", THREE_FLAVORS)
def test_a_replica_follows_by_gtid_read_only_and_is_promoted(flavor, sandbox_factory):
    primary = sandbox_factory(flavor)
    primary.sql("CREATE DATABASE r; CREATE TABLE r.t (id INT PRIMARY KEY, v VARCHAR(20));"
                "INSERT INTO r.t VALUES (1, 'before')")
    replica = sandbox_factory(flavor, replica_of=primary)
    assert _ids(replica) == [1]  # caught up when it is handed over
    status = replication_status(replica)
    assert status["Replica_IO_Running"] == status["Replica_SQL_Running"] == "Yes"
    if flavor == "mysql":
        assert status["Auto_Position"] == "1" and _var(replica, "gtid_mode") == "ON"
        assert _var(replica, "log_replica_updates") == _var(replica, "super_read_only") == "1"
    else:
        assert status["Using_Gtid"] == "Slave_Pos"
        assert _var(replica, "log_slave_updates") == _var(replica, "read_only") == "1"
    assert _var(replica, "server_id") == str(replica.port) != _var(primary, "server_id")
    primary.sql("INSERT INTO r.t VALUES (2, 'replicated')")
    wait_caught_up(replica, primary)
    assert _ids(replica) == [1, 2]
    assert _binlog_has(replica, "replicated")  # log_replica_updates: what it applied is in its binlog
    if flavor == "mysql":  # super_read_only refuses root too (MariaDB's root may write past read_only)
        with pytest.raises(ServerError, match="super-read-only"):
            replica.sql("INSERT INTO r.t VALUES (9, 'refused')")
    primary.stop()
    promote(replica)
    assert replication_status(replica) == {}
    assert _var(replica, "read_only") == "0"
    replica.sql("INSERT INTO r.t VALUES (3, 'promoted')")
    assert _ids(replica) == [1, 2, 3]
    with pytest.raises(SandboxError, match="not a replica"):
        promote(replica)


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_a_replica_without_gtids_nor_log_replica_updates(flavor, sandbox_factory):
    off = {"gtid-mode": "OFF", "enforce-gtid-consistency": "OFF"} if flavor == "mysql" else {}
    primary = sandbox_factory(flavor, settings=off)
    primary.sql("CREATE DATABASE r; CREATE TABLE r.t (id INT PRIMARY KEY, v VARCHAR(20));"
                "INSERT INTO r.t VALUES (1, 'kept out')")
    options = ReplicationOptions(gtids=False, log_replica_updates=False, read_only=False)
    replica = sandbox_factory(flavor, replica_of=primary, replication=options)
    status = replication_status(replica)
    if flavor == "mysql":
        assert status["Auto_Position"] == "0" and _var(replica, "gtid_mode") == "OFF"
        assert _var(replica, "log_replica_updates") == "0"
    else:
        assert status["Using_Gtid"] == "No" and _var(replica, "log_slave_updates") == "0"
    assert _var(replica, "read_only") == "0"
    assert _ids(replica) == [1]
    assert not _binlog_has(replica, "kept out")  # applied, and not in its own binlog
    replica.sql("INSERT INTO r.t VALUES (2, 'its own')")  # writable as asked
    assert _binlog_has(replica, "its own")


@pytest.mark.mysql
def test_a_mysql_replica_whose_gtid_mode_differs_from_its_primary_is_refused(sandbox_factory):
    primary = sandbox_factory("mysql")
    with pytest.raises(SandboxError, match=r"gtid_mode=ON.*--set gtid-mode=OFF"):
        sandbox_factory("mysql", replica_of=primary, replication=ReplicationOptions(gtids=False))


def _cli(*args: str, state_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SLUICE_STATE_DIR": str(state_dir)}
    return subprocess.run([sys.executable, "-m", "sluice.cli", "sandbox", *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_cli_replica_and_promote(flavor, tmp_path):
    state_dir = tmp_path / "state"
    try:
        up = _cli("up", "--flavor", flavor, state_dir=state_dir)
        assert up.returncode == 0, up.stderr
        primary = json.loads(next(state_dir.glob("sandbox-*.json")).read_text())
        sql = primary["client"] + ["--batch", "--skip-column-names"]
        subprocess.run(sql, input="CREATE DATABASE r; CREATE TABLE r.t (id INT PRIMARY KEY)", text=True,
                       check=True, timeout=60)
        made = _cli("replica", state_dir=state_dir)
        assert made.returncode == 0, made.stderr
        assert "a replica of port" in made.stderr and "by GTID" in made.stderr and "read-only" in made.stderr
        port = int(made.stdout.strip().rsplit(":", 1)[1].rstrip("/"))
        replica = json.loads((state_dir / f"sandbox-{port}.json").read_text())
        assert replica["replica_of"] == primary["port"]
        status = _cli("status", state_dir=state_dir)
        assert f"replica of port {primary['port']}" in status.stdout
        tables = subprocess.run(replica["client"] + ["--batch", "--skip-column-names"], input="SHOW TABLES IN r",
                                capture_output=True, text=True, check=True, timeout=60)
        assert tables.stdout.split() == ["t"]
        assert _cli("down", "--port", str(primary["port"]), state_dir=state_dir).returncode == 0
        promoted = _cli("promote", state_dir=state_dir)
        assert promoted.returncode == 0, promoted.stderr
        assert "is a primary now" in promoted.stderr and promoted.stdout.strip() == replica["dsn"]
        written = subprocess.run(replica["client"] + ["--batch", "--skip-column-names"],
                                 input="INSERT INTO r.t VALUES (1); SELECT COUNT(*) FROM r.t",
                                 capture_output=True, text=True, timeout=60, check=False)
        assert written.returncode == 0 and written.stdout.strip() == "1", written.stderr
        assert "replica of" not in _cli("status", state_dir=state_dir).stdout
        again = _cli("promote", state_dir=state_dir)
        assert again.returncode == 1 and "no replica sandbox is running" in again.stderr
    finally:
        _cli("down", "--all", state_dir=state_dir)
