"""The public API against real servers: ``sluice.stream_changes`` with a checkpoint directory resumes."""

from __future__ import annotations

import uuid

import sluice
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status


def test_stream_changes_resumes_from_its_checkpoint(server, tmp_path):
    db = f"api_{uuid.uuid4().hex[:8]}"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        start = server_binlog_status(conn)
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, name VARCHAR(20))")
        conn.execute(f"INSERT INTO {db}.t VALUES (1, 'one'), (2, 'two')")
        state = tmp_path / "state"
        first = list(
            sluice.stream_changes(
                server.dsn("repl"), file=start.file, pos=start.pos, until_end=True, tables=rf"{db}\..*",
                checkpoint_dir=state,
            )
        )
        assert [(c.op, c.after) for c in first] == [
            ("insert", {"id": 1, "name": "one"}),
            ("insert", {"id": 2, "name": "two"}),
        ]
        conn.execute(f"UPDATE {db}.t SET name = 'uno' WHERE id = 1")
        conn.execute(f"DELETE FROM {db}.t WHERE id = 2")
        again = list(
            sluice.stream_changes(server.dsn("repl"), until_end=True, tables=rf"{db}\..*", checkpoint_dir=state)
        )
        assert [(c.op, c.before, c.after, c.pk) for c in again] == [
            ("update", {"id": 1, "name": "one"}, {"id": 1, "name": "uno"}, ("id",)),
            ("delete", {"id": 2, "name": "two"}, None, ("id",)),
        ]
        conn.execute(f"DROP DATABASE {db}")
