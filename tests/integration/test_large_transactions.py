"""``sluice tail`` over transactions larger than its memory budget, on real servers.

With ``--transaction-memory`` set low, a transaction's lines go to the spill directory's anonymous
temporary file until its COMMIT; the output must be what the table shows, every change once even
across kill -9 while a huge transaction is held (read through a proxy that slows the stream), and
a transaction that the binlog rolls back (an XA transaction prepared, so logged with its rows,
then XA ROLLBACK) prints nothing and holds no file.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from sluice.binlog.position import position_key
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from tests.conftest import THREE_FLAVORS, kills
from tests.integration.huge_transactions import huge_table, huge_transactions, kill_when
from tests.tcp_proxy import TcpProxy

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


def _tail(server: Any, db: str, tmp: Path, *extra: str, dsn: str | None = None) -> list[str]:
    return [sys.executable, "-m", "sluice.cli", "tail", dsn or server.dsn("repl"), "--tables", rf"{db}\.k",
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


def _held_at(stderr: str) -> list[tuple[str, int, int]]:
    """Where each transaction that went on to a temporary file was when it did (-v), in order."""
    found = re.finditer(r"\(at ([^:\s]+):(\d+), \d+ row changes\): the rest waits for its COMMIT", stderr)
    return [position_key(m[1], int(m[2])) for m in found]


def _holds_huge(stderr: Path, pid: int, spill: Path, n: int) -> bool:
    """Whether the ``sluice tail -v`` writing ``stderr`` has held ``n`` huge transactions in a temporary
    file and holds one there now."""
    return len(_held_at(stderr.read_text())) >= n and bool(_spill_fds(pid, spill))


@pytest.mark.slow
def test_kill_9_inside_a_large_transaction_loses_and_repeats_nothing(server, tmp_path):
    db = f"bigkill_{uuid.uuid4().hex[:8]}"
    start = huge_table(server, db, ROWS)
    before = _table(server, db)
    expected = huge_transactions(server, db, ROWS)
    (tmp_path / "spill").mkdir()
    out, state, log = tmp_path / "changes.jsonl", tmp_path / "state", tmp_path / "stderr"
    where = ["--from", f"{start.file}:{start.pos}"]
    whole = subprocess.run([*_tail(server, db, tmp_path, *where, "--until-end"), "-v"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=300)
    assert whole.returncode == 0, whole.stderr.decode()
    huge = _held_at(whole.stderr.decode())
    assert len(huge) == 3, whole.stderr.decode()  # the UPDATE, the rolled-back one, the mix
    # Each run reads the binlog through a proxy that hands it on at 1 MiB a second, so that a huge
    # transaction takes the run half a second or more, and is killed while it holds one in its
    # temporary file (the file open in /proc/PID/fd) once it has said (-v) that its n-th one went
    # there: the first huge transaction after where it starts, then the second, in turn, as long as
    # one more is left after it should the run get past the n-th before it is seen holding it.
    with TcpProxy(server.host, server.port, rate=1 << 20) as proxy:
        slow = proxy.dsn(server.dsn("repl"))
        for i in range(max(2, kills(4))):
            resumed = (state / "checkpoint.json").exists()
            after = (position_key(*_checkpoint(state)) if resumed else position_key(start.file, start.pos))
            left = sum(1 for p in huge if p > after)
            assert left, "every huge transaction is behind the checkpoint: no kill can land inside one"
            n = min(1 + i % 2, max(1, left - 1))
            with log.open("wb") as err:
                proc = subprocess.Popen([*_tail(server, db, tmp_path, *([] if resumed else where), "--output",
                                                str(out), "--checkpoint", str(state), dsn=slow),
                                         "-v"], stdout=subprocess.DEVNULL, stderr=err)
            kill_when(proc, functools.partial(_holds_huge, log, proc.pid, tmp_path / "spill", n),
                      f"a huge transaction held in a temporary file, the run's number {n} or a later", log)
    assert (state / "checkpoint.json").exists(), "no checkpoint was ever written"
    final = subprocess.run([*_tail(server, db, tmp_path, "--output", str(out), "--checkpoint", str(state)),
                            "--until-end"], capture_output=True, timeout=300)
    assert final.returncode == 0, final.stderr.decode()
    changes = [json.loads(line) for line in out.read_text().splitlines()]
    assert len({(c["file"], c["pos"], c["row"]) for c in changes}) == len(changes) == expected
    assert _replay(changes, before) == _table(server, db)
    assert list((tmp_path / "spill").iterdir()) == []


def _checkpoint(state: Path) -> tuple[str, int]:
    saved = json.loads((state / "checkpoint.json").read_text())["checkpoint"]
    return saved["file"], int(saved["pos"])
