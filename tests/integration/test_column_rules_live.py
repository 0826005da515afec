"""Columns kept out or hashed on live servers of every flavor: ``sluice tail`` and ``sluice dump`` of
the server's own binlog files, the key from an environment variable the config file names, a
column added later by DDL treated as its name says, and the key in no output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from sluice.cdc.column_rules import hash_value
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status

KEY = "live-key-never-printed-9f3a2b7c41d0"


def _sluice(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run([sys.executable, "-m", "sluice.cli", *argv], capture_output=True, timeout=300,
                          env={**os.environ, **env})
    assert KEY.encode() not in done.stdout + done.stderr
    return done


def test_tail_and_dump_leave_out_and_hash_columns_through_ddl(server: Any, tmp_path: Path) -> None:
    db = f"cols_{uuid.uuid4().hex[:8]}"
    config = tmp_path / "sluice.toml"
    config.write_text('[columns]\nhash_key_env = "SLUICE_LIVE_KEY"\nexclude = \'[^.]+\\.users\\.(ssn|phone)\'\n')
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        start = server_binlog_status(conn)
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.users (email VARCHAR(80) PRIMARY KEY, ssn CHAR(11), age INT)")
        conn.execute(f"CREATE TABLE {db}.orders (id INT PRIMARY KEY, email VARCHAR(80), total DECIMAL(8,2))")
        conn.execute(f"INSERT INTO {db}.users VALUES ('ada@example.com', '123-45-6789', 36), ('bob@x.org', NULL, 41)")
        conn.execute(f"INSERT INTO {db}.orders VALUES (1, 'ada@example.com', 9.50), (2, NULL, 1.00)")
        conn.execute(f"ALTER TABLE {db}.users ADD COLUMN phone VARCHAR(20)")  # matches: kept out from here on
        conn.execute(f"UPDATE {db}.users SET phone = '555-0100', age = 37 WHERE email = 'ada@example.com'")
        conn.execute(f"DELETE FROM {db}.orders WHERE id = 2")
        end = server_binlog_status(conn)
    common = ["--tables", rf"{db}\..*", "--config", str(config), "--hash-columns", r"[^.]+\.[^.]+\.email"]
    env = {"SLUICE_LIVE_KEY": KEY}
    tail = _sluice("tail", server.dsn("repl"), "--from", f"{start.file}:{start.pos}", "--until-end", *common,
                   env=env)
    assert tail.returncode == 0, tail.stderr.decode()
    changes = [json.loads(line) for line in tail.stdout.splitlines()]
    h = {v: hash_value(KEY.encode(), v) for v in ("ada@example.com", "bob@x.org")}
    users = [(c["op"], c["before"], c["after"]) for c in changes if c["table"] == "users"]
    assert users == [
        ("insert", None, {"email": h["ada@example.com"], "age": 36}),
        ("insert", None, {"email": h["bob@x.org"], "age": 41}),
        ("update", {"email": h["ada@example.com"], "age": 36}, {"email": h["ada@example.com"], "age": 37}),
    ]
    orders = [(c["op"], c["before"], c["after"]) for c in changes if c["table"] == "orders"]
    assert orders == [
        ("insert", None, {"id": 1, "email": h["ada@example.com"], "total": "9.50"}),  # joins users on the hash
        ("insert", None, {"id": 2, "email": None, "total": "1.00"}),  # NULL stays NULL
        ("delete", {"id": 2, "email": None, "total": "1.00"}, None),
    ]
    assert all(c["pk"] == (["email"] if c["table"] == "users" else ["id"]) for c in changes)
    events = _sluice("tail", server.dsn("repl"), "--from", f"{start.file}:{start.pos}", "--until-end",
                     "--format", "debezium", *common, env=env)
    assert events.returncode == 0, events.stderr.decode()
    debezium = [json.loads(line) for line in events.stdout.splitlines()]
    assert [e["after"] for e in debezium if e["source"]["table"] == "users"][2] == {
        "email": h["ada@example.com"], "age": 37}
    missing = _sluice("tail", server.dsn("repl"), "--until-end", *common, env={"SLUICE_LIVE_KEY": ""})
    assert missing.returncode != 0 and b"SLUICE_LIVE_KEY" in missing.stderr and b"Traceback" not in missing.stderr

    # The server's own binlog files, read offline with the schema from the live server.
    if start.file != end.file:
        pytest.skip(f"the binlog rotated between {start.file} and {end.file}: one file is read here")
    dump = _sluice("dump", str(Path(server.binlog_dir) / start.file), "--schema", server.dsn("root"), *common, env=env)
    assert dump.returncode == 0, dump.stderr.decode()
    offline = [json.loads(line) for line in dump.stdout.splitlines()]
    assert [(c["op"], c["before"], c["after"]) for c in offline if c["table"] == "orders"] == orders
