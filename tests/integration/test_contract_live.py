"""Contract details checked on live servers: redacted credentials, MariaDB JSON as text, XA GTIDs."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status

SECRET = "Sw0rdfish-" + uuid.uuid4().hex[:8]


def _sluice(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "sluice.cli", *args], capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    return out.stdout.decode() + out.stderr.decode()


def test_no_output_shows_an_account_password(server):
    user = f"u{uuid.uuid4().hex[:8]}"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        mariadb = conn.is_mariadb
        start = server_binlog_status(conn)
        conn.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{SECRET}'")
        conn.execute(f"ALTER USER '{user}'@'%' IDENTIFIED BY '{SECRET}2'")
        conn.execute(f"SET PASSWORD FOR '{user}'@'%' = PASSWORD('{SECRET}3')" if conn.is_mariadb
                     else f"SET PASSWORD FOR '{user}'@'%' = '{SECRET}3'")
        conn.execute(f"DROP USER '{user}'@'%'")
        conn.execute("FLUSH BINARY LOGS")
    where = f"{start.file}:{start.pos}"
    outputs = [
        _sluice("tail", server.dsn("repl"), "--from", where, "--until-end", "--events"),
        _sluice("tail", server.dsn("repl"), "--from", where, "--until-end", "--ddl"),
        # Rows of other tests' tables are not decoded (their schema is not in these files).
        _sluice("dump", "--events", "--tables", r"no_such\.table",
                *[str(server.binlog_dir / f) for f in server.binlog_files()]),
    ]
    assert any(user in text for text in outputs), "the account statements are not in the output at all"
    for text in outputs:
        assert SECRET not in text
    if mariadb:  # MySQL rewrites the statements itself before logging them
        assert "<redacted>" in outputs[0]


def test_mariadb_json_is_text_when_the_schema_comes_from_ddl(mariadb_server):
    db = f"js_{uuid.uuid4().hex[:8]}"
    with Connection.open(parse_dsn(mariadb_server.dsn("root"))) as conn:
        start = server_binlog_status(conn)
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, doc JSON)")
        conn.execute(f"INSERT INTO {db}.t VALUES (1, '{{\"a\": [1, 2]}}')")
        conn.execute("FLUSH BINARY LOGS")
    files = [str(mariadb_server.binlog_dir / f) for f in mariadb_server.binlog_files()]
    first = files.index(str(mariadb_server.binlog_dir / start.file))
    out = _sluice("dump", "--tables", rf"{db}\..*", *files[first:])
    (line,) = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    assert line["after"]["doc"] == '{"a": [1, 2]}'


def _last_gtid(conn: Connection) -> str | None:
    """The GTID the server gave its last transaction (None with GTIDs off)."""
    if conn.is_mariadb:
        pos = str(conn.query("SELECT @@GLOBAL.gtid_binlog_pos").rows[0][0] or "")
        return pos.split(",")[-1] or None
    executed = str(conn.query("SELECT @@GLOBAL.gtid_executed").rows[0][0] or "").replace("\n", "")
    if not executed:
        return None
    uuid_part, _, ranges = executed.split(",")[0].partition(":")
    return f"{uuid_part}:{ranges.split(':')[-1].split('-')[-1]}"


def test_xa_rows_carry_the_prepare_gtid(server):
    db = f"xa_{uuid.uuid4().hex[:8]}"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY)")
        start = server_binlog_status(conn)
        conn.execute("XA START 'x1'")
        conn.execute(f"INSERT INTO {db}.t VALUES (1)")
        conn.execute("XA END 'x1'")
        conn.execute("XA PREPARE 'x1'")
        prepared = _last_gtid(conn)
        conn.execute("XA COMMIT 'x1'")
        committed = _last_gtid(conn)
        rows = _sluice("tail", server.dsn("repl"), "--from", f"{start.file}:{start.pos}", "--until-end",
                       "--tables", rf"{db}\..*")
        conn.execute(f"DROP DATABASE {db}")
    if prepared is None:
        pytest.skip("GTIDs are off on this server: no GTID to compare")
    assert prepared != committed
    (change,) = [json.loads(x) for x in rows.splitlines() if x.startswith("{")]
    assert change["gtid"] == prepared, (change, prepared, committed)
