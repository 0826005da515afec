"""``sluice tail`` over transactions larger than its memory budget, on real servers.

With ``--transaction-memory`` set low, a transaction's lines go to the spill directory's anonymous
temporary file until its COMMIT; the output must be what the table shows, every change once even
across kill -9, and a transaction that the binlog rolls back (an XA transaction prepared, so
logged with its rows, then XA ROLLBACK) prints nothing and holds no file.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from tests.conftest import THREE_FLAVORS
from tests.integration.huge_transactions import huge_table, huge_transactions

ROWS = 6000  # a transaction of ROWS updates: about 1.5 MB of JSON lines against a budget of 64K


@pytest.fixture(params=THREE_FLAVORS)
def server(request):
    return request.getfixturevalue(f"{request.param}_server")


def _root(server: Any) -> Connection:
    return Connection.open(parse_dsn(server.dsn("root")))


def _table(server: Any, db: str) -> dict[int, dict[str, Any]]:
    with _root(server) as conn:
        rows = conn.query(f"SELECT id, v, note FROM {db}.k").rows
    return {int(r[0]): {"id": int(r[0]), "v": int(r[1]), "note": r[2]} for r in rows}


def _replay(changes: list[dict[str, Any]], start: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    rows = dict(start)
    for c in changes:
        if c["before"] is not None:
            del rows[c["before"]["id"]]
        if c["after"] is not None:
            rows[c["after"]["id"]] = c["after"]
    return rows


def _spill_fds(pid: int, spill: Path) -> list[str]:
    """The files in ``spill`` the process ``pid`` holds open."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(spill)):
            out.append(target)
    return out


def _tail(server: Any, db: str, tmp: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--tables", rf"{db}\.k",
            "--transaction-memory", "64K", "--spill-dir", str(tmp / "spill"), *extra]


def test_transactions_larger_than_the_budget_print_once_and_rollbacks_not_at_all(server, tmp_path):
    db = f"big_{uuid.uuid4().hex[:8]}"
    start = huge_table(server, db, ROWS)
    before = _table(server, db)
    (tmp_path / "spill").mkdir()
    out = tmp_path / "changes.jsonl"
    proc = subprocess.Popen(
        [*_tail(server, db, tmp_path, "--from", f"{start.file}:{start.pos}", "--output", str(out),
                "--checkpoint", str(tmp_path / "state")), "-v"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        expected = huge_transactions(server, db, ROWS)
        deadline = time.monotonic() + 120
        while not (out.exists() and out.read_bytes().count(b"\n") >= expected):
            assert proc.poll() is None, proc.stderr.read().decode()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the changes did not all arrive"
            time.sleep(0.1)
        time.sleep(0.5)
        assert _spill_fds(proc.pid, tmp_path / "spill") == []  # the rolled-back one's file is gone too
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    stderr = proc.stderr.read().decode()  # type: ignore[union-attr]
    assert stderr.count("waits for its COMMIT in a temporary file") == 3, stderr  # the XA one too
    changes = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(changes) == expected
    assert not any(c["after"] and c["after"]["note"] == "rolled back" for c in changes)
    assert len({(c["file"], c["pos"], c["row"]) for c in changes}) == expected
    assert _replay(changes, before) == _table(server, db)
    assert list((tmp_path / "spill").iterdir()) == []


@pytest.mark.slow
def test_kill_9_inside_a_large_transaction_loses_and_repeats_nothing(server, tmp_path):
    db = f"bigkill_{uuid.uuid4().hex[:8]}"
    start = huge_table(server, db, ROWS)
    before = _table(server, db)
    expected = huge_transactions(server, db, ROWS)
    (tmp_path / "spill").mkdir()
    out, state = tmp_path / "changes.jsonl", tmp_path / "state"
    rng = random.Random(44)
    first = True
    for _ in range(4):
        where = ["--from", f"{start.file}:{start.pos}"] if first else []
        proc = subprocess.Popen(_tail(server, db, tmp_path, *where, "--output", str(out), "--checkpoint", str(state)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.5))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        first = first and not (state / "checkpoint.json").exists()
    assert not first, "no checkpoint was ever written"
    final = subprocess.run([*_tail(server, db, tmp_path, "--output", str(out), "--checkpoint", str(state)),
                            "--until-end"], capture_output=True, timeout=300)
    assert final.returncode == 0, final.stderr.decode()
    changes = [json.loads(line) for line in out.read_text().splitlines()]
    assert len({(c["file"], c["pos"], c["row"]) for c in changes}) == len(changes) == expected
    assert _replay(changes, before) == _table(server, db)
    assert list((tmp_path / "spill").iterdir()) == []
