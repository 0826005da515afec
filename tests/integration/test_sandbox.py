"""The throwaway servers themselves: versions, binlog and GTID settings, TLS, users, restart, CLI."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sluice.errors import ServerError, TransportError
from sluice.processes import pid_alive
from sluice.sandbox.server import PASSWORDS, Sandbox, SandboxError
from tests.conftest import THREE_FLAVORS

FLAVORS = THREE_FLAVORS


@pytest.fixture(params=FLAVORS)
def server(request: pytest.FixtureRequest) -> Sandbox:
    server: Sandbox = request.getfixturevalue(f"{request.param}_server")
    return server


def variables(server: Sandbox, *names: str) -> dict[str, str]:
    quoted = ", ".join(f"'{n}'" for n in names)
    rows = server.sql(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({quoted})").splitlines()
    return dict(row.split("\t", 1) for row in rows)


def run_client(server: Sandbox, sql: str, *extra: str, user: str, password: str | None = None,
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(server.client_argv("--batch", "--skip-column-names", *extra, user=user,
                                             password=password),
                          input=sql, capture_output=True, text=True, timeout=60, check=False)


def test_version(server: Sandbox) -> None:
    if server.flavor == "mysql":
        assert re.match(r"9\.\d+\.\d+", server.version), server.version
    else:
        assert server.version.startswith("10.11." if server.flavor == "mariadb" else "11.8."), server.version
        assert "MariaDB" in server.version
    assert server.sql("SELECT VERSION()") == server.version
    tool = subprocess.run(server.binlog_tool_argv("--version"), capture_output=True, text=True,
                          timeout=60, check=False)
    assert tool.returncode == 0, tool.stderr
    assert ("mysqlbinlog" if server.flavor == "mysql" else "mariadb-binlog") in tool.stdout


def test_binlog_is_on_and_row(server: Sandbox) -> None:
    found = variables(server, "log_bin", "binlog_format", "server_id", "log_bin_basename")
    assert found["log_bin"] == "ON"
    assert found["binlog_format"] == "ROW"
    assert found["server_id"] == "1"
    assert Path(found["log_bin_basename"]).parent == server.binlog_dir
    files = server.binlog_files()
    assert files and all((server.binlog_dir / name).is_file() for name in files)
    shown = [row.split("\t")[0] for row in server.sql("SHOW BINARY LOGS").splitlines()]
    assert shown == files


@pytest.mark.mysql
def test_mysql_gtid_mode_is_on(mysql_server: Sandbox) -> None:
    found = variables(mysql_server, "gtid_mode", "enforce_gtid_consistency", "mysqlx")
    assert found["gtid_mode"] == "ON"
    assert found["enforce_gtid_consistency"] == "ON"
    assert "mysqlx" not in found or found["mysqlx"] == "OFF"


@pytest.mark.mariadb
def test_mariadb_writes_gtids(mariadb_server: Sandbox) -> None:
    mariadb_server.sql("CREATE DATABASE IF NOT EXISTS sandbox_gtid; "
                       "CREATE TABLE IF NOT EXISTS sandbox_gtid.t (id INT PRIMARY KEY); "
                       "REPLACE INTO sandbox_gtid.t VALUES (1)")
    assert re.fullmatch(r"0-1-\d+", mariadb_server.sql("SELECT @@gtid_binlog_pos"))


@pytest.mark.mariadb11
def test_mariadb11_reads_only_its_private_root(mariadb11_server: Sandbox) -> None:
    """The 11.8 server runs next to the host's 10.11 files and must read none of them."""
    from sluice.sandbox.install import require_mariadb11

    root = require_mariadb11().root
    found = variables(mariadb11_server, "basedir", "lc_messages_dir", "character_sets_dir", "plugin_dir")
    assert len(found) == 4 and all(Path(value).is_relative_to(root) for value in found.values()), found


def test_setup_statements_are_not_in_the_binlog(server: Sandbox) -> None:
    first = server.binlog_files()[0]
    events = server.sql(f"SHOW BINLOG EVENTS IN '{first}'")
    assert "CREATE USER" not in events
    assert "sluice-repl" not in events


def test_tls_is_configured_with_the_generated_ca(server: Sandbox) -> None:
    found = variables(server, "ssl_ca", "ssl_cert", "ssl_key", "have_ssl")
    assert found["ssl_ca"] == str(server.ca_path)
    assert found["ssl_cert"] == str(server.cert_path)
    if server.is_mariadb:
        assert found["have_ssl"] == "YES"
    # The client verifies the certificate chain and that it names 127.0.0.1.
    if server.flavor == "mysql":
        tls = ["--ssl-mode=VERIFY_IDENTITY", f"--ssl-ca={server.ca_path}"]
    else:
        tls = ["--ssl", f"--ssl-ca={server.ca_path}", "--ssl-verify-server-cert"]
    result = run_client(server, "SHOW SESSION STATUS LIKE 'Ssl_version'", *tls, user="repl")
    assert result.returncode == 0, result.stderr
    assert re.search(r"Ssl_version\tTLSv1\.[23]", result.stdout), result.stdout


def test_root_logs_in_over_tcp_and_socket(server: Sandbox) -> None:
    result = run_client(server, "SELECT CURRENT_USER()", user="root")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in ("root@%", "root@localhost", "root@127.0.0.1")  # name resolution
    assert server.sql("SELECT CURRENT_USER()") == "root@localhost"
    assert run_client(server, "SELECT 1", user="root", password="wrong").returncode != 0


def _privileges(grants: str) -> set[str]:
    line = next(g for g in grants.splitlines() if " ON *.* " in g)
    listed = line.removeprefix("GRANT ").split(" ON *.* ", 1)[0]
    return {p.strip() for p in listed.split(",")}


def test_repl_user_has_exactly_the_replication_grants(server: Sandbox) -> None:
    grants = server.sql("SHOW GRANTS FOR 'repl'@'%'")
    client = "BINLOG MONITOR" if server.is_mariadb else "REPLICATION CLIENT"  # renamed in 10.5
    assert _privileges(grants) == {"SELECT", "REPLICATION SLAVE", client}
    result = run_client(server, "SELECT CURRENT_USER(); SHOW BINARY LOGS", user="repl")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("repl@%")
    denied = run_client(server, "CREATE DATABASE repl_may_not", user="repl")
    assert denied.returncode != 0
    assert "denied" in denied.stderr.lower()


@pytest.mark.mysql
def test_mysql_users_use_caching_sha2(mysql_server: Sandbox) -> None:
    rows = mysql_server.sql("SELECT user, plugin FROM mysql.user WHERE user IN ('root', 'repl')")
    assert {row.split("\t")[1] for row in rows.splitlines()} == {"caching_sha2_password"}


@pytest.mark.mariadb
def test_mariadb_ed25519_user(mariadb_server: Sandbox) -> None:
    assert mariadb_server.has_ed25519_user
    assert mariadb_server.sql("SELECT plugin FROM mysql.user WHERE user = 'ed'") == "ed25519"
    assert _privileges(mariadb_server.sql("SHOW GRANTS FOR 'ed'@'%'")) == {
        "SELECT", "REPLICATION SLAVE", "BINLOG MONITOR"}
    result = run_client(mariadb_server, "SELECT CURRENT_USER()", user="ed")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ed@%"
    assert run_client(mariadb_server, "SELECT 1", user="ed", password="wrong").returncode != 0


def test_dsn(server: Sandbox) -> None:
    scheme = "mariadb" if server.is_mariadb else "mysql"
    assert server.dsn() == f"{scheme}://root:sluice-root@127.0.0.1:{server.port}/"
    assert server.dsn("repl") == f"{scheme}://repl:{PASSWORDS['repl']}@127.0.0.1:{server.port}/"
    with socket.create_connection((server.host, server.port), timeout=5):
        pass


def test_sql_errors_carry_the_server_errno(server: Sandbox) -> None:
    with pytest.raises(ServerError) as excinfo:
        server.sql("SELECT * FROM no_such_db.no_such_table")
    assert excinfo.value.errno in (1049, 1146)
    with pytest.raises(ServerError) as excinfo:
        server.sql("SELEKT 1")
    assert excinfo.value.errno == 1064
    assert excinfo.value.sqlstate == "42000"


def test_sql_returns_tab_separated_rows(server: Sandbox) -> None:
    assert server.sql("SELECT 1, 'a'; SELECT 2, NULL") == "1\ta\n2\tNULL"
    server.sql("CREATE DATABASE IF NOT EXISTS sandbox_sql")
    assert server.sql("SELECT DATABASE()", database="sandbox_sql") == "sandbox_sql"


@pytest.mark.parametrize("flavor", FLAVORS)
def test_settings_and_restart_keep_data(flavor: str, sandbox_factory: Callable[..., Sandbox]) -> None:
    server = sandbox_factory(flavor, settings={"binlog_row_metadata": "FULL", "binlog_checksum": "NONE"})
    assert variables(server, "binlog_row_metadata", "binlog_checksum") == {
        "binlog_row_metadata": "FULL", "binlog_checksum": "NONE"}
    server.sql("CREATE DATABASE keep; CREATE TABLE keep.t (id INT PRIMARY KEY, v VARCHAR(10)); "
               "INSERT INTO keep.t VALUES (1, 'one'), (2, 'two')")
    port, before, old_pid = server.port, server.binlog_files(), server.pid
    server.restart()
    assert server.port == port
    assert server.pid != old_pid
    assert server.sql("SELECT id, v FROM keep.t ORDER BY id") == "1\tone\n2\ttwo"
    after = server.binlog_files()
    assert after[: len(before)] == before and len(after) == len(before) + 1  # a new file per start
    assert variables(server, "binlog_checksum")["binlog_checksum"] == "NONE"
    assert run_client(server, "SELECT 1", user="repl").returncode == 0


@pytest.mark.mariadb
def test_stop_kills_the_server_and_removes_its_directory(sandbox_factory: Callable[..., Sandbox]) -> None:
    server = sandbox_factory("mariadb")
    pid, workdir = server.pid, server.workdir
    assert pid is not None and pid_alive(pid)
    server.stop()
    assert not pid_alive(pid)
    assert not workdir.exists()
    server.stop()  # idempotent
    with pytest.raises(SandboxError, match="not running"):
        server.sql("SELECT 1")


@pytest.mark.mariadb
def test_sql_on_a_dead_server_is_a_transport_error(sandbox_factory: Callable[..., Sandbox]) -> None:
    server = sandbox_factory("mariadb")
    assert server.pid is not None
    os.killpg(server.pid, signal.SIGKILL)
    with pytest.raises(TransportError, match="could not talk"):
        server.sql("SELECT 1")


@pytest.mark.mariadb
def test_a_server_that_does_not_come_up_reports_its_error_log(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match=r"(?s)error log .* ends with:.*no_such_option"):
        Sandbox.start("mariadb", settings={"no_such_option": "1"})


def _cli(*args: str, state_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SLUICE_STATE_DIR": str(state_dir)}
    return subprocess.run([sys.executable, "-m", "sluice.cli", "sandbox", *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow  # starts a server of its own
@pytest.mark.parametrize("flavor", FLAVORS)
def test_cli_up_status_down(flavor: str, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    up = _cli("up", "--flavor", flavor, "--set", "binlog_row_metadata=FULL", state_dir=state_dir)
    assert up.returncode == 0, up.stderr
    dsn = up.stdout.strip()
    scheme = "mysql" if flavor == "mysql" else "mariadb"
    match = re.fullmatch(rf"{scheme}://root:sluice-root@127\.0\.0\.1:(\d+)/", dsn)
    assert match, up.stdout
    port = int(match[1])
    assert f"sluice sandbox down --port {port}" in up.stderr
    try:
        (state_file,) = state_dir.glob("sandbox-*.json")
        state = json.loads(state_file.read_text())
        assert state["port"] == port and state["flavor"] == flavor
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        client = subprocess.run([*state["client"], "--batch", "--skip-column-names"],
                                input="SELECT @@binlog_row_metadata", capture_output=True, text=True,
                                timeout=60, check=False)
        assert client.stdout.strip() == "FULL", client.stderr
        status = _cli("status", "--json", state_dir=state_dir)
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["running"] is True
        again = _cli("up", "--flavor", flavor, "--port", str(port), state_dir=state_dir)
        assert again.returncode == 1 and "already runs" in again.stderr
    finally:
        down = _cli("down", state_dir=state_dir)
    assert down.returncode == 0, down.stderr
    assert "stopped" in down.stderr
    assert not pid_alive(state["pid"])
    assert not Path(state["workdir"]).exists()
    assert not list(state_dir.glob("sandbox-*.json"))
    assert "no sandboxes" in _cli("status", state_dir=state_dir).stdout


@pytest.mark.mariadb
def test_a_killed_owner_takes_its_server_along_and_its_directory_is_swept() -> None:
    code = ("import os, signal\n"
            "from sluice.sandbox.server import Sandbox\n"
            "s = Sandbox.start('mariadb')\n"
            "print(s.pid, s.workdir, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=False)
    pid_text, workdir = out.stdout.split()
    pid = int(pid_text)
    for _ in range(100):
        if not pid_alive(pid):
            break
        time.sleep(0.05)
    assert not pid_alive(pid)
    assert Path(workdir).exists()
    with Sandbox.start("mariadb"):  # the next start removes what the killed process left
        assert not Path(workdir).exists()
