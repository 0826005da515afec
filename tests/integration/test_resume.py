"""Resume without loss or duplicates: kill -9 at random moments, server restarts, GTID starts, purged logs.

``sluice tail --checkpoint DIR --output FILE`` is exactly once: the checkpoint records how many
bytes of FILE belong to checkpointed transactions, and a restart cuts FILE back to that before
resuming. These tests kill the process at random points while a workload runs and check that the
file holds every committed change exactly once and that replaying it gives what ``SELECT`` shows.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_files, server_binlog_status
from tests.conftest import THREE_FLAVORS, kills

FLAVORS = THREE_FLAVORS

KILLS = kills(20)


@pytest.fixture(params=FLAVORS)
def server(request):
    return request.getfixturevalue(f"{request.param}_server")


def _sluice(*args: str, **kwargs: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "sluice.cli", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kwargs
    )


def _root(server: Any) -> Connection:
    return Connection.open(parse_dsn(server.dsn("root")))


class Workload(threading.Thread):
    """Small transactions (inserts, updates, deletes, multi-statement) until told to stop."""

    def __init__(self, server: Any, db: str, seed: int) -> None:
        super().__init__(daemon=True)
        self.server, self.db, self.rng = server, db, random.Random(seed)
        self.stop = threading.Event()
        self.changes = 0
        self.transactions = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with _root(self.server) as conn:
                next_id = 1
                live: list[int] = []
                while not self.stop.is_set() or self.transactions < 50:
                    kind = self.rng.random()
                    if kind < 0.5 or len(live) < 5:
                        conn.execute(f"INSERT INTO {self.db}.k VALUES ({next_id}, {next_id * 3}, 'row {next_id}')")
                        live.append(next_id)
                        next_id += 1
                        self.changes += 1
                    elif kind < 0.75:
                        victim = self.rng.choice(live)
                        conn.execute(f"UPDATE {self.db}.k SET v = v + 1, note = 'upd' WHERE id = {victim}")
                        self.changes += 1
                    elif kind < 0.85:
                        victim = live.pop(self.rng.randrange(len(live)))
                        conn.execute(f"DELETE FROM {self.db}.k WHERE id = {victim}")
                        self.changes += 1
                    elif kind < 0.95:
                        conn.execute("BEGIN")
                        conn.execute(f"INSERT INTO {self.db}.k VALUES ({next_id}, 0, 'multi')")
                        conn.execute(f"UPDATE {self.db}.k SET v = v - 1 WHERE id = {live[0]}")
                        conn.execute("COMMIT")
                        live.append(next_id)
                        next_id += 1
                        self.changes += 2
                    else:
                        conn.execute("BEGIN")
                        conn.execute(f"INSERT INTO {self.db}.k VALUES ({next_id + 1_000_000}, 0, 'rolled back')")
                        conn.execute("ROLLBACK")
                        self.transactions -= 1
                    self.transactions += 1
                    time.sleep(self.rng.uniform(0.0, 0.02))
        except BaseException as exc:  # reported by the test
            self.error = exc


def _read_output(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n"), "output ends with a partial line"
    return [json.loads(line) for line in text.splitlines()]


def _replay(changes: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    rows: dict[int, dict[str, Any]] = {}
    for c in changes:
        if c["before"] is not None:
            assert c["before"]["id"] in rows, f"update/delete of a row never inserted: {c}"
            del rows[c["before"]["id"]]
        if c["after"] is not None:
            rows[c["after"]["id"]] = c["after"]
    return rows


def _table_rows(server: Any, db: str) -> dict[int, dict[str, Any]]:
    with _root(server) as conn:
        result = conn.query(f"SELECT id, v, note FROM {db}.k")
    return {int(r[0]): {"id": int(r[0]), "v": int(r[1]), "note": r[2]} for r in result.rows}


def _check_exactly_once(out: Path, server: Any, db: str, expected_changes: int) -> list[dict[str, Any]]:
    changes = _read_output(out)
    positions = [(c["file"], c["pos"], c["row"]) for c in changes]
    assert len(positions) == len(set(positions)), "a change was written twice"
    assert len(changes) == expected_changes
    assert _replay(changes) == _table_rows(server, db)
    return changes


@pytest.mark.slow
def test_kill_9_at_random_points_loses_and_repeats_nothing(server, tmp_path):
    db = f"resume_{uuid.uuid4().hex[:8]}"
    with _root(server) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.k (id INT PRIMARY KEY, v INT, note VARCHAR(40))")
        start = server_binlog_status(conn)
    state, out = tmp_path / "state", tmp_path / "changes.jsonl"
    common = [server.dsn("repl"), "--checkpoint", str(state), "--output", str(out), "--tables", rf"{db}\..*"]
    work = Workload(server, db, seed=len(db))
    work.start()
    rng = random.Random(7)
    kills = 0
    try:
        first = True
        while kills < KILLS:
            args = [*common, "--from", f"{start.file}:{start.pos}"] if first else common
            proc = _sluice("tail", *args)
            time.sleep(rng.uniform(0.2, 1.6))
            if proc.poll() is not None:
                pytest.fail(f"sluice tail exited by itself: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            proc.stderr.close()  # type: ignore[union-attr]
            kills += 1
            if out.exists() and (state / "checkpoint.json").exists():
                first = False
    finally:
        work.stop.set()
        work.join(60)
    assert work.error is None, work.error
    assert not first, "no checkpoint was ever written"
    final = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", *common, "--until-end"], capture_output=True, timeout=120
    )
    assert final.returncode == 0, final.stderr.decode()
    changes = _check_exactly_once(out, server, db, work.changes)
    assert len({c["gtid"] for c in changes}) == work.transactions
    with _root(server) as conn:
        conn.execute(f"DROP DATABASE {db}")


@pytest.fixture(scope="module", params=FLAVORS)
def own_server(request, module_sandbox_factory):
    """A server of the module's own, free to be restarted and to lose its binlogs."""
    server = module_sandbox_factory(request.param)
    yield server
    server.stop()


@pytest.mark.slow  # restarts a server
def test_reconnects_after_the_server_restarts(own_server, tmp_path):
    server = own_server
    db = "restart"
    with _root(server) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.k (id INT PRIMARY KEY, v INT, note VARCHAR(40))")
    out = tmp_path / "changes.jsonl"
    proc = _sluice(
        "tail", server.dsn("repl"), "--checkpoint", str(tmp_path / "state"), "--output", str(out),
        "--tables", rf"{db}\..*", "--retries", "40", "--heartbeat", "1",
    )
    try:
        with _root(server) as conn:
            for i in range(1, 51):
                conn.execute(f"INSERT INTO {db}.k VALUES ({i}, {i}, 'before restart')")
        _wait_for_lines(out, 50, proc)
        server.restart()
        with _root(server) as conn:
            for i in range(51, 101):
                conn.execute(f"INSERT INTO {db}.k VALUES ({i}, {i}, 'after restart')")
            conn.execute(f"UPDATE {db}.k SET v = 0 WHERE id <= 10")
        _wait_for_lines(out, 110, proc)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    stderr = proc.stderr.read().decode()  # type: ignore[union-attr]
    assert "reconnect" in stderr, stderr
    _check_exactly_once(out, server, db, 110)


def _wait_for_lines(path: Path, n: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        if proc.poll() is not None:
            pytest.fail(f"sluice tail exited: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        time.sleep(0.1)
    have = path.read_bytes().count(b"\n") if path.exists() else 0
    pytest.fail(f"only {have} of {n} changes arrived within {timeout:.0f}s")


def test_resume_by_gtid_after_the_binlog_rotated(server, tmp_path):
    db = f"gtid_{uuid.uuid4().hex[:8]}"
    with _root(server) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.k (id INT PRIMARY KEY, v INT, note VARCHAR(40))")
        for i in range(1, 11):
            conn.execute(f"INSERT INTO {db}.k VALUES ({i}, {i}, 'seen')")
        if server.is_mariadb:
            executed = conn.query("SELECT @@GLOBAL.gtid_binlog_pos").rows[0][0]
        else:
            executed = server_binlog_status(conn).gtid_executed
        before = server_binlog_status(conn).file
        conn.execute("FLUSH BINARY LOGS")
        for i in range(11, 21):
            conn.execute(f"INSERT INTO {db}.k VALUES ({i}, {i}, 'new')")
        conn.execute("FLUSH BINARY LOGS")
        conn.execute(f"UPDATE {db}.k SET v = -v WHERE id > 15")
    result = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--gtid", executed, "--until-end",
         "--tables", rf"{db}\..*"],
        capture_output=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()
    changes = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [c["after"]["id"] for c in changes[:10]] == list(range(11, 21))
    assert all(c["op"] == "insert" and c["file"] != before for c in changes[:10])
    assert [c["op"] for c in changes[10:]] == ["update"] * 5
    assert all(c["gtid"] for c in changes)
    with _root(server) as conn:
        conn.execute(f"DROP DATABASE {db}")


def _rows_events(server: Any, file: str) -> list[int]:
    """Offsets of the rows events in ``file``, as the server lists them."""
    events = [row.split("\t") for row in server.sql(f"SHOW BINLOG EVENTS IN '{file}'").splitlines()]
    return [int(e[1]) for e in events if e[2].startswith(("Write_rows", "Update_rows", "Delete_rows"))]


@pytest.mark.mariadb11
def test_gtid_start_at_the_head_of_a_file_counts_positions_right_and_resumes(mariadb11_server, tmp_path):
    """MariaDB 11.8 with binlog_gtid_index=ON: a GTID start seeks into the file, announces that
    position and re-sends the file's GTID_LIST as a made-up event; it must not be counted."""
    server = mariadb11_server
    assert server.sql("SELECT @@GLOBAL.binlog_gtid_index") == "1"
    db = f"gidx_{uuid.uuid4().hex[:8]}"
    with _root(server) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.k (id INT PRIMARY KEY, v VARCHAR(20))")
        conn.execute(f"INSERT INTO {db}.k VALUES (1, 'old')")
        executed = conn.query("SELECT @@GLOBAL.gtid_binlog_pos").rows[0][0]
        conn.execute("FLUSH BINARY LOGS")
        file = server_binlog_status(conn).file
        for i in range(2, 5):
            conn.execute(f"INSERT INTO {db}.k VALUES ({i}, 'new')")
    state, out = tmp_path / "state", tmp_path / "out.jsonl"
    common = [server.dsn("repl"), "--until-end", "--tables", rf"{db}\..*", "--checkpoint", str(state),
              "--output", str(out)]
    first = subprocess.run([sys.executable, "-m", "sluice.cli", "tail", *common, "--gtid", executed],
                           capture_output=True, timeout=120)
    assert first.returncode == 0, first.stderr.decode()
    changes = [json.loads(line) for line in out.read_text().splitlines()]
    assert [c["after"]["id"] for c in changes] == [2, 3, 4]
    assert [(c["file"], c["pos"]) for c in changes] == [(file, pos) for pos in _rows_events(server, file)]
    with _root(server) as conn:
        conn.execute(f"INSERT INTO {db}.k VALUES (5, 'after')")
        end = server_binlog_status(conn)
    saved = json.loads((state / "checkpoint.json").read_text())["checkpoint"]
    assert saved["file"] == file and saved["pos"] < end.pos
    rest = subprocess.run([sys.executable, "-m", "sluice.cli", "tail", *common], capture_output=True, timeout=120)
    assert rest.returncode == 0, rest.stderr.decode()
    changes = [json.loads(line) for line in out.read_text().splitlines()]
    assert [c["after"]["id"] for c in changes] == [2, 3, 4, 5]
    assert [(c["file"], c["pos"]) for c in changes] == [(file, pos) for pos in _rows_events(server, file)]
    with _root(server) as conn:
        conn.execute(f"DROP DATABASE {db}")


def test_until_stops_before_the_first_transaction_at_or_after_the_position(server, tmp_path):
    db = f"until_{uuid.uuid4().hex[:8]}"
    with _root(server) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.k (id INT PRIMARY KEY, v INT)")
        start = server_binlog_status(conn)
        for i in range(1, 6):
            conn.execute(f"INSERT INTO {db}.k VALUES ({i}, {i})")
        stop = server_binlog_status(conn)
        for i in range(6, 9):
            conn.execute(f"INSERT INTO {db}.k VALUES ({i}, {i})")
    state = tmp_path / "state"
    result = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--from", f"{start.file}:{start.pos}",
         "--until", f"{stop.file}:{stop.pos}", "--until-end", "--tables", rf"{db}\..*", "--checkpoint", str(state)],
        capture_output=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()
    changes = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [c["after"]["id"] for c in changes] == [1, 2, 3, 4, 5]
    # The checkpoint is where the printed part ends: a resume prints the rest, once.
    rest = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--until-end", "--tables", rf"{db}\..*",
         "--checkpoint", str(state)],
        capture_output=True, timeout=120,
    )
    assert rest.returncode == 0, rest.stderr.decode()
    assert [json.loads(line)["after"]["id"] for line in rest.stdout.decode().splitlines()] == [6, 7, 8]
    with _root(server) as conn:
        conn.execute(f"DROP DATABASE {db}")


def test_purged_start_position_says_how_to_recover(own_server):
    server = own_server
    with _root(server) as conn:
        before = [name for name, _size in server_binlog_files(conn)]
        conn.execute("CREATE DATABASE p")
        conn.execute("FLUSH BINARY LOGS")
        current = server_binlog_status(conn).file
        deadline = time.monotonic() + 30
        while True:  # a file a replica thread still reads is kept until that thread has gone
            conn.execute(f"PURGE BINARY LOGS TO '{current}'")
            purged = [name for name in before if name not in {n for n, _ in server_binlog_files(conn)}]
            if purged or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    assert purged, f"the server kept {before}"
    result = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--from", f"{purged[0]}:4", "--until-end"],
        capture_output=True, timeout=60,
    )
    assert result.returncode == 1
    message = result.stderr.decode()
    assert "purged" in message and purged[0] in message, message


def test_follow_reports_each_reconnect_and_loses_nothing(server):
    """A replication connection killed on the server: ``follow`` reconnects at the last boundary,
    tells ``on_retry`` (the pipeline's reconnect count comes from it) and yields every change once."""
    from sluice.cdc.capture import CaptureConfig, ChangeCapture
    from sluice.cdc.capture_start import StartRequest, prepare_capture
    from sluice.cdc.follow import FollowConfig, follow

    db = f"retry_{uuid.uuid4().hex[:8]}"
    with _root(server) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.k (id INT PRIMARY KEY)")
        keep = lambda d, _t: d == db  # noqa: E731
        begin = prepare_capture(parse_dsn(server.dsn("repl")), StartRequest(from_now=True), include=keep)
        capture = ChangeCapture(CaptureConfig(table_filter=keep), begin.start, begin.tracker)
        retried: list[BaseException] = []
        stream = follow(FollowConfig(parse_dsn(server.dsn("repl")), heartbeat_period=1), capture,
                        sleep=lambda _s: None, on_retry=retried.append)
        conn.execute(f"INSERT INTO {db}.k VALUES (1)")
        seen = [r.after["id"] for r in next(stream).records]
        for row in conn.query("SHOW PROCESSLIST").rows:
            if str(row[4]).startswith("Binlog Dump") and row[1] == "repl":
                conn.execute(f"KILL {row[0]}")
        for i in range(2, 6):
            conn.execute(f"INSERT INTO {db}.k VALUES ({i})")
        while len(seen) < 5:
            seen += [r.after["id"] for r in next(stream).records]
        stream.close()
        conn.execute(f"DROP DATABASE {db}")
    assert seen == [1, 2, 3, 4, 5]
    assert len(retried) >= 1
