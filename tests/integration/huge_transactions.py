"""What the large-transaction tests read: a table ``k`` of ``rows`` rows ``(id, v, note)``
(``huge_table``) and huge transactions over it (``huge_transactions``); and how their kill -9 tests
kill (``kill_when``): when the process shows it is where the kill must land, never after a guessed
number of seconds."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import BinlogStatus, server_binlog_status

__all__ = ["huge_table", "huge_transactions", "kill_when"]


def huge_table(server: Any, db: str, rows: int) -> BinlogStatus:
    """Create ``db`` and its table ``k`` with ids 1 to ``rows``; where the binlog ends after them."""
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.k (id INT PRIMARY KEY, v INT, note VARCHAR(60)) ENGINE=InnoDB")
        for first in range(1, rows + 1, 5000):
            values = ",".join(f"({i}, {i}, 'row {i} {'x' * 30}')" for i in range(first, min(first + 5000, rows + 1)))
            conn.execute(f"INSERT INTO {db}.k VALUES {values}")
        return server_binlog_status(conn)


def huge_transactions(server: Any, db: str, rows: int, *, keys_move: bool = False, alter: bool = False) -> int:
    """A huge UPDATE of every row, a huge one rolled back in the binlog (an XA transaction prepared,
    so logged with its rows, then XA ROLLBACK), a huge mix of deletes and updates (``keys_move``:
    the updates move their rows' keys too), with ``alter`` an ALTER TABLE right after it and
    updates in the new layout, and a last small insert; the number of changes committed."""
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute("BEGIN")
        conn.execute(f"UPDATE {db}.k SET v = v + 1, note = CONCAT('first ', id)")
        conn.execute("COMMIT")
        conn.execute("XA START 'big'")
        conn.execute(f"UPDATE {db}.k SET v = -v, note = 'rolled back'")
        conn.execute("XA END 'big'")
        conn.execute("XA PREPARE 'big'")
        conn.execute("XA ROLLBACK 'big'")
        conn.execute("BEGIN")
        conn.execute(f"DELETE FROM {db}.k WHERE id % 3 = 0")
        conn.execute(f"UPDATE {db}.k SET v = v * 2{', id = id + 1000000' if keys_move else ''} WHERE id % 3 = 1")
        conn.execute("COMMIT")
        changes = rows + rows // 3 + (rows + 2) // 3 + 1
        if alter:
            conn.execute(f"ALTER TABLE {db}.k ADD COLUMN extra INT NOT NULL DEFAULT 7")
            changes += int(conn.query(f"SELECT COUNT(*) FROM {db}.k WHERE id % 5 = 0").rows[0][0])
            conn.execute(f"UPDATE {db}.k SET extra = 8 WHERE id % 5 = 0")
        conn.execute(f"INSERT INTO {db}.k VALUES (0, 0, 'last'{', 9' if alter else ''})")
    return changes


def kill_when(proc: subprocess.Popen[bytes], ready: Callable[[], bool], what: str, stderr: Path,
              timeout: float = 300.0, every: float = 0.02) -> None:
    """kill -9 ``proc`` as soon as ``ready()`` holds (polled ``every`` seconds). The test fails, saying
    ``what`` it waited for and the end of the process' ``stderr`` file, if ``proc`` ends first or
    ``ready()`` does not hold within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"sluice {proc.args[3]} ended (code {proc.returncode}) before {what}; its stderr ends: "
                        f"{stderr.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            pytest.fail(f"not within {timeout:.0f}s: {what}; its stderr ends: {stderr.read_text()[-3000:]}")
        time.sleep(every)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
