"""``sluice tail --format debezium`` on live servers: Debezium's change events, with the values in
the connector's default encodings, and ``--checkpoint --output`` exactly once across a restart."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import pytest

from sluice.cli import main as sluice_main
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.sandbox.server import Sandbox


def _setup(server: Sandbox) -> tuple[str, str]:
    db = f"dbz_{uuid.uuid4().hex[:8]}"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, amount DECIMAL(12,2), born DATE, "
                     "seen DATETIME(3), at TIMESTAMP(6) NULL, dur TIME, flags BIT(10), tags SET('a','b','c'), "
                     "kind ENUM('x','y'), doc JSON, raw VARBINARY(8), note VARCHAR(20))")
        start = server_binlog_status(conn)
        conn.execute("SET time_zone = '+00:00'")
        conn.execute(f"INSERT INTO {db}.t VALUES (1, -1234.50, '2018-06-20', '2018-06-20 06:37:03.125', "
                     "'2018-06-20 13:37:03.000001', '-01:02:03', b'1000000001', 'a,c', 'y', '{\"k\": [1, 2.5]}', "
                     "x'00ff', 'é')")
        conn.execute(f"UPDATE {db}.t SET note = 'two' WHERE id = 1")
        conn.execute(f"DELETE FROM {db}.t WHERE id = 1")
    return db, f"{start.file}:{start.pos}"


def _tail(server: Sandbox, db: str, start: str | None, *extra: str) -> int:
    where = ["--from", start] if start else []
    return sluice_main(["tail", server.dsn("repl"), *where, "--until-end", "--format", "debezium",
                        "--topic-prefix", "shop", "--tables", rf"{db}\..*", *extra])


def test_tail_prints_debezium_events_with_its_value_encodings(server: Sandbox, capsys: pytest.CaptureFixture[str]):
    db, start = _setup(server)
    capsys.readouterr()
    assert _tail(server, db, start) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["op"] for e in events] == ["c", "u", "d"]
    row = events[0]["after"]
    assert int.from_bytes(base64.b64decode(row["amount"]), "big", signed=True) == -123450
    assert row["born"] == 17702
    assert row["seen"] == 1529476623125
    assert row["at"] == "2018-06-20T13:37:03.000001Z"
    assert row["dur"] == -(3600 + 2 * 60 + 3) * 1_000_000
    assert base64.b64decode(row["flags"]) == (0b1000000001).to_bytes(2, "little")
    assert row["tags"] == "a,c" and row["kind"] == "y"
    assert json.loads(row["doc"]) == {"k": [1, 2.5]}
    assert base64.b64decode(row["raw"]) == b"\x00\xff" and row["note"] == "é"
    assert events[1]["before"] == row and events[1]["after"]["note"] == "two"
    assert events[2]["before"] == events[1]["after"] and events[2]["after"] is None
    source = events[0]["source"]
    assert source["connector"] == ("mariadb" if server.is_mariadb else "mysql") and source["name"] == "shop"
    assert (source["db"], source["table"]) == (db, "t") and source["file"] and source["pos"] > 4
    assert isinstance(source["server_id"], int) and source["server_id"] > 0


def test_tail_debezium_output_is_exactly_once_across_a_restart(server: Sandbox, tmp_path: Path):
    db, start = _setup(server)
    out, checkpoint = tmp_path / "events.jsonl", tmp_path / "checkpoint"
    common = ("--checkpoint", str(checkpoint), "--output", str(out))
    assert _tail(server, db, start, *common) == 0
    first = out.read_text().splitlines()
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"INSERT INTO {db}.t (id, note) VALUES (2, 'later')")
    assert _tail(server, db, None, *common) == 0  # resumes from the checkpoint
    lines = out.read_text().splitlines()
    assert lines[:len(first)] == first and len(lines) == len(first) + 1
    assert json.loads(lines[-1])["after"]["note"] == "later"
