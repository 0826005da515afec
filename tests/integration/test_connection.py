"""Connection against the sandbox servers: logins over TCP, TLS and the unix socket, every auth
path the servers offer, result sets, payloads over 16 MiB both ways, and the errors users see.

Logins that need no server (a refused port, a missing socket, a server without TLS) are unit tests
in ``tests/unit/io/test_connection_without_server.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from sluice.dsn import ConnectionConfig, SslMode, parse_dsn
from sluice.errors import AccessDeniedError, ServerError, TransportError
from sluice.io.connection import Connection
from sluice.sandbox.server import Sandbox

FLAVORS = [
    pytest.param("mariadb", marks=pytest.mark.mariadb, id="mariadb"),
    pytest.param("mysql", marks=pytest.mark.mysql, id="mysql"),
]
BIG = 17 * 1024 * 1024  # more than one 16 MiB packet


@pytest.fixture(params=FLAVORS)
def server(request: pytest.FixtureRequest) -> Sandbox:
    sandbox: Sandbox = request.getfixturevalue(f"{request.param}_server")
    return sandbox


def _config(server: Sandbox, user: str = "root", **changes: object) -> ConnectionConfig:
    config = parse_dsn(server.dsn(user))
    return replace(config, **changes)  # type: ignore[arg-type]


def _whoami(conn: Connection) -> str:
    value = conn.query("SELECT CURRENT_USER()").rows[0][0]
    assert value is not None
    return value.split("@")[0]


# --- logins ------------------------------------------------------------------------------------


def test_password_over_tcp_without_tls(server: Sandbox) -> None:
    server.sql("FLUSH PRIVILEGES")  # MySQL: empty caching_sha2's cache, forcing the full path
    config = _config(server, "repl", ssl_mode=SslMode.DISABLED)
    with Connection.open(config) as conn:
        assert not conn.tls
        assert _whoami(conn) == "repl"
        assert conn.is_mariadb == (server.flavor == "mariadb")
        assert conn.connection_id > 0
        assert conn.server_version_tuple >= ((10, 0, 0) if conn.is_mariadb else (8, 0, 0))
        assert not conn.server_version.startswith("5.5.5-")
        if server.flavor == "mysql":
            assert conn.auth_plugin == "caching_sha2_password"
            assert conn.auth_full == "rsa"  # fetched the server's key and sent RSA-OAEP
    # The cache is warm now: the same login takes the fast path.
    with Connection.open(config) as conn:
        assert conn.auth_full is None


@pytest.mark.mysql
def test_caching_sha2_rsa_with_a_public_key_file(mysql_server: Sandbox) -> None:
    key = Path(mysql_server.datadir) / "public_key.pem"
    assert key.exists(), "mysqld writes its RSA key pair into the data directory"
    mysql_server.sql("FLUSH PRIVILEGES")
    config = _config(mysql_server, "repl", ssl_mode=SslMode.DISABLED, server_public_key=str(key),
                     get_server_public_key=False)
    with Connection.open(config) as conn:
        assert conn.auth_full == "rsa"
        assert _whoami(conn) == "repl"


@pytest.mark.mysql
def test_full_auth_without_tls_or_key_is_refused(mysql_server: Sandbox) -> None:
    from sluice.errors import AuthError

    mysql_server.sql("FLUSH PRIVILEGES")
    config = _config(mysql_server, "repl", ssl_mode=SslMode.DISABLED, get_server_public_key=False)
    with pytest.raises(AuthError, match="TLS") as info:
        Connection.open(config)
    assert "sluice-repl" not in str(info.value)


@pytest.mark.parametrize("mode", [SslMode.REQUIRED, SslMode.VERIFY_CA, SslMode.VERIFY_IDENTITY])
def test_tls(server: Sandbox, mode: SslMode) -> None:
    server.sql("FLUSH PRIVILEGES")
    config = _config(server, "repl", ssl_mode=mode, ssl_ca=str(server.ca_path))
    with Connection.open(config) as conn:
        assert conn.tls
        assert _whoami(conn) == "repl"
        if server.flavor == "mysql":
            assert conn.auth_full == "cleartext"  # full auth over TLS sends the password itself
        cipher = conn.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'").rows[0][1]
        assert cipher


def test_tls_preferred_is_used_when_offered(server: Sandbox) -> None:
    with Connection.open(_config(server)) as conn:
        assert conn.tls


def test_verify_identity_by_host_name(server: Sandbox) -> None:
    config = _config(server, host="localhost", ssl_mode=SslMode.VERIFY_IDENTITY, ssl_ca=str(server.ca_path))
    with Connection.open(config) as conn:
        assert conn.tls


def test_verify_ca_with_the_wrong_ca_fails(server: Sandbox, tmp_path: Path) -> None:
    from sluice.sandbox.certs import make_tls_files

    other = make_tls_files(tmp_path)
    config = _config(server, ssl_mode=SslMode.VERIFY_CA, ssl_ca=str(other.ca))
    with pytest.raises(TransportError, match="certificate") as info:
        Connection.open(config)
    assert f"127.0.0.1:{server.port}" in str(info.value)


def test_unix_socket(server: Sandbox) -> None:
    server.sql("FLUSH PRIVILEGES")
    config = _config(server, socket=str(server.socket))
    with Connection.open(config) as conn:
        assert not conn.tls  # the socket is private already
        assert conn.where == str(server.socket)
        assert _whoami(conn) == "root"
        if server.flavor == "mysql":
            assert conn.auth_full in (None, "cleartext")


def test_wrong_password(server: Sandbox) -> None:
    secret = "not-the-password-42"
    config = _config(server, "repl", password=secret, ssl_mode=SslMode.DISABLED)
    with pytest.raises(AccessDeniedError) as info:
        Connection.open(config)
    message = str(info.value)
    assert "Access denied for user 'repl'" in message
    assert "check the user, the password" in message
    assert secret not in message
    assert secret not in repr(config) and secret not in str(config)


def test_repl_user_sees_binlogs(server: Sandbox) -> None:
    with Connection.open(_config(server, "repl")) as conn:
        logs = conn.query("SHOW BINARY LOGS")
        assert logs.rows
        assert logs.columns[0] == "Log_name"
        with pytest.raises(AccessDeniedError):
            conn.execute("CREATE DATABASE repl_may_not")
        assert conn.query("SELECT 1").rows == [("1",)]  # the session survives an ERR


@pytest.mark.mariadb
def test_ed25519(mariadb_server: Sandbox) -> None:
    assert mariadb_server.has_ed25519_user, "the MariaDB sandbox creates 'ed' when auth_ed25519 exists"
    for mode in (SslMode.DISABLED, SslMode.REQUIRED):
        with Connection.open(_config(mariadb_server, "ed", ssl_mode=mode)) as conn:
            assert conn.auth_plugin == "client_ed25519"
            assert _whoami(conn) == "ed"
    with pytest.raises(AccessDeniedError):
        Connection.open(_config(mariadb_server, "ed", password="wrong", ssl_mode=SslMode.DISABLED))


@pytest.mark.mariadb11
def test_mariadb11_handshake_and_logins(mariadb11_server: Sandbox) -> None:
    """MariaDB 11.x greets without the ``5.5.5-`` prefix 10.x sends; sluice knows it as MariaDB."""
    server = mariadb11_server
    assert server.has_ed25519_user, "the MariaDB 11.8 root carries auth_ed25519.so (mariadb-server)"
    for user, mode in (("repl", SslMode.DISABLED), ("repl", SslMode.REQUIRED), ("ed", SslMode.REQUIRED)):
        with Connection.open(_config(server, user, ssl_mode=mode)) as conn:
            assert conn.handshake.server_version.startswith("11.8."), conn.handshake.server_version
            assert conn.is_mariadb and conn.server_version_tuple[:2] == (11, 8)
            assert conn.tls == (mode is SslMode.REQUIRED)
            assert _whoami(conn) == user


def test_password_never_in_repr(server: Sandbox) -> None:
    config = _config(server)
    with Connection.open(config) as conn:
        assert config.password not in repr(conn)
        assert config.password not in str(conn.config)


# --- commands -----------------------------------------------------------------------------------


def test_query_with_nulls_and_many_rows(server: Sandbox) -> None:
    with Connection.open(_config(server)) as conn:
        limit = "max_recursive_iterations" if conn.is_mariadb else "cte_max_recursion_depth"
        conn.execute(f"SET SESSION {limit} = 100000")
        result = conn.query(
            "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 20000) "
            "SELECT n, IF(n % 3 = 0, NULL, CONCAT('r', n)) AS label, NULL AS nothing, 'é' AS e FROM t"
        )
        assert result.columns == ("n", "label", "nothing", "e")
        assert len(result.rows) == 20000
        assert result.rows[0] == ("1", "r1", None, "é")
        assert result.rows[2] == ("3", None, None, "é")
        assert result.rows[-1] == ("20000", "r20000", None, "é")


def test_execute_and_server_errors(server: Sandbox) -> None:
    with Connection.open(_config(server)) as conn:
        conn.execute("CREATE DATABASE IF NOT EXISTS sluice_conn_test")
        try:
            conn.execute("CREATE TABLE sluice_conn_test.t (id INT PRIMARY KEY, v VARCHAR(10))")
            ok = conn.execute("INSERT INTO sluice_conn_test.t VALUES (1, 'a'), (2, NULL)")
            assert ok.affected_rows == 2
            assert conn.query("SELECT v FROM sluice_conn_test.t ORDER BY id").rows == [("a",), (None,)]
            with pytest.raises(ServerError) as info:
                conn.query("SELECT * FROM sluice_conn_test.missing")
            assert info.value.errno == 1146
            conn.ping()
        finally:
            conn.execute("DROP DATABASE sluice_conn_test")


@pytest.fixture
def big_packets(server: Sandbox) -> Iterator[Sandbox]:
    before = server.sql("SELECT @@GLOBAL.max_allowed_packet")
    server.sql("SET GLOBAL max_allowed_packet = 67108864")
    yield server
    server.sql(f"SET GLOBAL max_allowed_packet = {before}")


def test_payload_over_16_mib_sent(big_packets: Sandbox) -> None:
    with Connection.open(_config(big_packets)) as conn:
        literal = "x" * BIG
        assert conn.query(f"SELECT LENGTH('{literal}')").rows == [(str(BIG),)]


def test_payload_over_16_mib_received(big_packets: Sandbox) -> None:
    with Connection.open(_config(big_packets)) as conn:
        rows = conn.query("SELECT REPEAT('x', 17000000), 'after'").rows
        assert len(rows) == 1
        value, after = rows[0]
        assert value == "x" * 17000000
        assert after == "after"
        assert conn.query("SELECT 2").rows == [("2",)]  # still in step after the multi-packet row


def test_read_timeout(server: Sandbox) -> None:
    with Connection.open(_config(server)) as conn:
        conn.settimeout(0.3)
        with pytest.raises(TransportError, match=rf"no bytes from the server at .*127\.0\.0\.1:{server.port} for "
                                                 r"0\.3s: the connection stalled"):
            conn.query("SELECT SLEEP(3)")


def test_every_connection_has_a_deadline(server: Sandbox) -> None:
    """A connection waits at most the DSN's read_timeout for the server, 30 s when it gives none."""
    with Connection.open(_config(server)) as conn:
        assert conn._require_socket().gettimeout() == 30.0
    with Connection.open(_config(server).with_(read_timeout=1.5)) as conn:
        assert conn._require_socket().gettimeout() == 1.5
        with pytest.raises(TransportError, match=r"for 1\.5s: the connection stalled"):
            conn.query("SELECT SLEEP(3)")


def test_killed_connection(server: Sandbox) -> None:
    with Connection.open(_config(server)) as conn, Connection.open(_config(server)) as killer:
        killer.execute(f"KILL {conn.connection_id}")
        with pytest.raises((TransportError, ServerError)):
            conn.query("SELECT 1")


# --- without a server ---------------------------------------------------------------------------


def test_stream_rows_in_chunks(server: Sandbox) -> None:
    with Connection.open(_config(server)) as conn:
        sql = "SELECT seq, CONCAT('r', seq), NULL FROM (" + " UNION ALL ".join(
            f"SELECT {i} AS seq" for i in range(25)) + ") t ORDER BY seq"
        chunks = list(conn.stream_rows(sql, 10))
        assert [len(c) for c in chunks] == [10, 10, 5]
        assert [row for c in chunks for row in c] == [(str(i), f"r{i}", None) for i in range(25)]
        assert list(conn.stream_rows("SELECT 1 FROM DUAL WHERE 1 = 0", 10)) == []
        assert list(conn.stream_rows("DO 1", 10)) == []
        with pytest.raises(ServerError) as raised:
            list(conn.stream_rows("SELECT * FROM no_such_db.no_such_table", 10))
        assert raised.value.errno in (1049, 1146)  # unknown database / table
        assert conn.query("SELECT 7").rows == [("7",)]  # the connection is in step afterwards
