"""Ctrl-C of ``sluice run`` in a real terminal: a tmux pane runs it as a user's shell would, in the
terminal's foreground process group, and gets the keys a user types.

The first Ctrl-C ends the run at the end of the batch in flight, with one line saying so, the
summary and exit status 0; a second one ends it at once with status 130 and one line. Either way
the terminal shows no traceback, the driver JVM does not outlive sluice, and the next run leaves
every change in the change log once and every mirror equal to its table.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import deltalake
import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.sandbox.server import Sandbox
from sluice.spark.verify.check import verify_lake

pytestmark = pytest.mark.spark

ROWS = 60_000  # the backlog: its first batch runs long enough for two Ctrl-C typed in turn
FIRST = "sluice run: stopping at the end of this batch; Ctrl-C again to stop now"
NOISE = ("Traceback", "py4j", "Py4J", "KeyboardInterrupt", "Exception", "Segmentation")


class Terminal:
    """A tmux server of its own (its socket in the test's folder) with one pane running ``argv``
    directly; the pane stays after its process ends, to read its exit status."""

    def __init__(self, folder: Path, argv: list[str]) -> None:
        tmux = shutil.which("tmux")
        if tmux is None:
            pytest.fail("tmux is not installed: the Ctrl-C tests need a real terminal (./run installs tmux)")
        conf = folder / "tmux.conf"
        conf.write_text("set -g remain-on-exit on\nset -g history-limit 50000\n")
        self.base = [tmux, "-S", str(folder / "tmux.sock"), "-f", str(conf)]
        self.env = {**os.environ, "TERM": os.environ.get("TERM") or "xterm"}
        self.tmux("new-session", "-d", "-s", "run", "-x", "220", "-y", "50", *argv)
        self.pid = int(self.tmux("display-message", "-p", "-t", "run", "#{pane_pid}"))

    def tmux(self, *args: str) -> str:
        out = subprocess.run([*self.base, *args], capture_output=True, text=True, env=self.env, timeout=30)
        assert out.returncode == 0, f"tmux {args[0]}: {out.stderr}"
        return out.stdout.strip()

    def ctrl_c(self) -> None:
        self.tmux("send-keys", "-t", "run", "C-c")

    def text(self) -> str:
        """What the terminal shows, but the line tmux adds once the process ended ("Pane is dead")."""
        shown = self.tmux("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", "run")
        return "\n".join(line for line in shown.splitlines() if not line.startswith("Pane is dead ("))

    def exit_status(self) -> int | None:
        """The process's exit status once it ended (minus the signal's number when one killed it)."""
        state = self.tmux("display-message", "-p", "-t", "run",
                          "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}").split(":")
        if state[0] != "1":
            return None
        if state[1] or state[2]:
            return int(state[1]) if state[1] else -int(state[2])
        return _zombie_status(self.pid)  # tmux saw the terminal close but has not reaped the process yet

    def wait_exit(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.exit_status()
            if status is not None:
                return status
            time.sleep(0.2)
        pytest.fail(f"sluice run did not end within {timeout:.0f}s of Ctrl-C:\n{self.text()}")

    def wait_text(self, needle: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.text():
                return
            time.sleep(0.05)
        pytest.fail(f"{needle!r} did not appear within {timeout:.0f}s:\n{self.text()}")

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, env=self.env, timeout=30)


def _backlog(server: Sandbox) -> tuple[str, str, int]:
    """A database with ``ROWS`` rows inserted (then some updated and deleted) after the returned position."""
    db = f"cc_{uuid.uuid4().hex[:8]}"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        start = server_binlog_status(conn)
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT, note VARCHAR(40))")
        step = 5_000
        for low in range(0, ROWS, step):
            values = ",".join(f"({i}, {i}, 'row {i}')" for i in range(low + 1, low + step + 1))
            conn.execute(f"INSERT INTO {db}.t VALUES {values}")
        conn.execute(f"UPDATE {db}.t SET v = v + 1 WHERE id % 7 = 0")
        conn.execute(f"DELETE FROM {db}.t WHERE id % 11 = 0")
    return db, start.file, start.pos


def _run_args(server: Sandbox, lake: Path, db: str, file: str, pos: int) -> list[str]:
    return [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("repl"), "--lake", str(lake),
            "--tables", rf"{db}\..*", "--from", f"{file}:{pos}"]


def _batch_in_flight(terminal: Terminal, lake: Path, timeout: float) -> int:
    """The number of a batch sluice is inside of: its tasks have staged their files (Spark logs a
    batch's offsets before it calls sluice, and a batch not yet called when Ctrl-C comes is left whole
    to the next run)."""
    staging = lake / "_sluice" / "staging"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if terminal.exit_status() is not None:
            pytest.fail(f"sluice run ended before its first batch:\n{terminal.text()}")
        staged = sorted(int(p.name) for p in staging.glob("[0-9]*")) if staging.is_dir() else []
        if staged:
            return staged[-1]
        time.sleep(0.05)
    pytest.fail(f"no batch began within {timeout:.0f}s")


def _driver_jvm(terminal: Terminal) -> int:
    """The pid of the driver JVM that ``sluice run`` (the pane's process) started."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if terminal.exit_status() is not None:
            pytest.fail(f"sluice run ended before its JVM started:\n{terminal.text()}")
        for entry in Path("/proc").glob("[0-9]*"):
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == terminal.pid and b"java" in cmdline.split(b"\0")[0]:
                return int(entry.name)
        time.sleep(0.1)
    pytest.fail("sluice run started no driver JVM")


def _zombie_status(pid: int) -> int | None:
    """The exit status of a process that ended and waits for its parent to reap it (the last field of
    /proc/PID/stat, as waitpid reports it), None while it runs or once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    if fields[0] != "Z":
        return None
    status = int(fields[-1])
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)


def _gone(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` has ended (a zombie has) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def _lines(text: str) -> list[str]:
    """The pane's lines but blank ones and the terminal's echo of Ctrl-C."""
    return [line for line in text.splitlines() if line.strip() and line.strip() != "^C"]


def _assert_quiet(text: str) -> None:
    assert not [line for line in text.splitlines() if any(word in line for word in NOISE)], text
    assert all(line.startswith("sluice") for line in _lines(text)), text


def _finish_and_check(server: Sandbox, lake: Path, db: str, file: str, pos: int) -> None:
    """The next run (to the end of the binlog) leaves every change in the change log once and the
    mirror equal to the table."""
    final = subprocess.run([*_run_args(server, lake, db, file, pos), "--trigger", "once"], capture_output=True,
                           text=True, timeout=600)
    assert final.returncode == 0, final.stderr[-3000:]
    tail = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--from", f"{file}:{pos}", "--until-end",
         "--tables", rf"{db}\..*"],
        capture_output=True, timeout=300, check=True,
    )
    expected = sorted((c["file"], c["pos"], c["row"]) for c in map(json.loads, tail.stdout.decode().splitlines()))
    log = deltalake.DeltaTable(str(lake / "_sluice" / "changes")).to_pyarrow_table().to_pylist()
    keys = sorted((r["file"], r["pos"], r["row"]) for r in log if r["op"] != "ddl")
    assert len(keys) == len(set(keys)), "a change is in the change log twice"
    assert keys == expected, "the change log lost changes"
    assert len(expected) == ROWS + ROWS // 7 + ROWS // 11
    verdicts = verify_lake(parse_dsn(server.dsn("root")), lake, tables=lambda d, _t: d == db)
    assert [v.table for v in verdicts] == ["t"]
    assert all(v.ok for v in verdicts), verdicts
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"DROP DATABASE {db}")


@dataclass(frozen=True)
class Interrupted:
    """A run of ``sluice run`` on a backlog, stopped with Ctrl-C during its first batch."""

    lake: Path
    db: str
    file: str
    pos: int
    jvm: int  # the driver JVM's pid
    batch: int  # the batch in flight at the first Ctrl-C
    status: int
    text: str  # the terminal's


def _ctrl_c_during_a_batch(server: Sandbox, folder: Path, presses: int) -> Interrupted:
    """Ctrl-C once, or twice (the second once the first one's line is on the terminal)."""
    db, file, pos = _backlog(server)
    lake = folder / "lake"
    terminal = Terminal(folder, [*_run_args(server, lake, db, file, pos), "--trigger", "1s"])
    try:
        jvm = _driver_jvm(terminal)
        batch = _batch_in_flight(terminal, lake, 300)
        terminal.ctrl_c()
        if presses == 2:
            terminal.wait_text(FIRST, 30)
            terminal.ctrl_c()
        status = terminal.wait_exit(300)
        text = terminal.text()
    finally:
        terminal.close()
    _assert_quiet(text)
    assert _lines(text).count(FIRST) == 1, text
    return Interrupted(lake, db, file, pos, jvm, batch, status, text)


@pytest.mark.parametrize("server", [pytest.param("mariadb_server", marks=pytest.mark.mariadb, id="mariadb")],
                         indirect=True)
def test_ctrl_c_ends_sluice_run_at_the_end_of_the_batch(server, tmp_path):
    run = _ctrl_c_during_a_batch(server, tmp_path, 1)
    assert run.status == 0, run.text
    lines = _lines(run.text)
    summary = [i for i, line in enumerate(lines) if line.startswith("sluice run: stopped: ")]
    assert len(summary) == 1 and summary[0] > lines.index(FIRST), run.text
    # The steady part, and the driver's share of it (which lies inside it).
    parts = re.search(r"([0-9.]+)s from the first batch with changes to the end of the last "
                      r"\(([0-9.]+)s of it the driver's DDL, MERGEs and commits\)$", lines[summary[0]])
    assert parts is not None, lines[summary[0]]
    steady, driver = float(parts.group(1)), float(parts.group(2))
    assert steady > 0 and 0 <= driver <= steady, lines[summary[0]]
    assert _gone(run.jvm, 60), "the driver JVM outlived sluice run"
    checkpoint = run.lake / "_sluice" / "checkpoint"
    assert (checkpoint / "commits" / str(run.batch)).exists(), "the batch in flight at Ctrl-C was not finished"
    done = deltalake.DeltaTable(str(run.lake / "_sluice" / "changes")).to_pyarrow_table(columns=["batch_id"])
    assert max(done.column("batch_id").to_pylist()) >= run.batch, "the batch in flight is not in the change log"
    staging = run.lake / "_sluice" / "staging"
    assert not staging.exists() or not any(staging.iterdir())
    _finish_and_check(server, run.lake, run.db, run.file, run.pos)


@pytest.mark.parametrize("server", [pytest.param("mysql_server", marks=pytest.mark.mysql, id="mysql")],
                         indirect=True)
def test_a_second_ctrl_c_ends_sluice_run_at_once(server, tmp_path):
    run = _ctrl_c_during_a_batch(server, tmp_path, 2)
    assert run.status == 130, run.text
    assert _lines(run.text)[-1] == ("sluice run: stopped now, in the middle of a batch; the next run does that "
                                    "batch again, nothing lost or written twice"), run.text
    assert _gone(run.jvm, 0), "the driver JVM outlived sluice run"
    assert not (run.lake / "_sluice" / "checkpoint" / "commits" / str(run.batch)).exists(), "the batch ran to its end"
    _finish_and_check(server, run.lake, run.db, run.file, run.pos)
