"""The initial snapshot on Spark and real servers: tables written to while they are snapshotted.

A 200k-row table (plus a composite-key table, a VARCHAR key in a case-insensitive collation and a
table without primary key) is snapshotted by ``sluice run`` while another thread inserts, updates
keys in every chunk and deletes; the stream then takes over. Afterwards ``verify`` finds every
mirrored table equal to the source and the change log holds each change committed after the
snapshot's start exactly once. A snapshot killed midway resumes at its first unfinished chunk.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import deltalake
import pytest

from sluice.binlog.position import position_key
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.verify.check import verify_lake

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS = 200_000


def _root(server: Any) -> Connection:
    return Connection.open(parse_dsn(server.dsn("root")))


def _populate(conn: Connection, db: str, rows: int) -> None:
    conn.execute(f"CREATE DATABASE {db}")
    conn.execute(f"CREATE TABLE {db}.big (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(40), amount DECIMAL(12,2))")
    conn.execute(
        f"CREATE TABLE {db}.pairs (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b)) DEFAULT CHARSET=utf8mb4"
    )
    conn.execute(
        f"CREATE TABLE {db}.names (name VARCHAR(32) COLLATE utf8mb4_general_ci PRIMARY KEY, n INT)"
        " DEFAULT CHARSET=utf8mb4"
    )
    conn.execute(f"CREATE TABLE {db}.nokey (x INT, y VARCHAR(10))")
    conn.execute("SET SESSION cte_max_recursion_depth = 1000000" if not conn.is_mariadb
                 else "SET SESSION max_recursive_iterations = 1000000")
    conn.execute(
        f"INSERT INTO {db}.big WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {rows}) "
        "SELECT n, n % 1000, CONCAT('row-', n), n / 100 FROM s"
    )
    conn.execute(
        f"INSERT INTO {db}.pairs WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 3000) "
        "SELECT n % 300, CONCAT('b', n), n FROM s"
    )
    names = ", ".join(f"('{w}', {i})" for i, w in enumerate(
        ["alpha", "Bravo", "charlie", "Élan", "elan2", "Zulu", "ömega", "x-ray", "Yankee", "delta"]
        + [f"name{i:04d}" for i in range(2000)]
    ))
    conn.execute(f"INSERT INTO {db}.names VALUES {names}")
    conn.execute(f"INSERT INTO {db}.nokey VALUES (1, 'a'), (2, 'b'), (2, 'b')")


class Writer(threading.Thread):
    """Inserts, updates of keys spread over every chunk, deletes, key moves — until stopped."""

    def __init__(self, server: Any, db: str, rows: int) -> None:
        super().__init__(daemon=True)
        self.server, self.db, self.rows = server, db, rows
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.statements = 0

    def run(self) -> None:
        rng = random.Random(3)
        db = self.db
        try:
            with _root(self.server) as conn:
                next_id = self.rows + 1
                while not self.stop.is_set():
                    r = rng.randrange(1, self.rows)
                    choice = rng.random()
                    if choice < 0.3:
                        conn.execute(f"INSERT INTO {db}.big VALUES ({next_id}, 1, 'new', 1.50)")
                        next_id += 1
                    elif choice < 0.6:
                        conn.execute(f"UPDATE {db}.big SET k = k + 1, c = 'upd' WHERE id = {r}")
                    elif choice < 0.75:
                        conn.execute(f"DELETE FROM {db}.big WHERE id = {r}")
                    elif choice < 0.8:
                        conn.execute(f"UPDATE {db}.big SET id = {next_id} WHERE id = {r}")  # key moves
                        next_id += 1
                    elif choice < 0.9:
                        conn.execute(f"UPDATE {db}.pairs SET v = v + 1 WHERE a = {r % 300}")
                    else:
                        conn.execute(f"UPDATE {db}.names SET n = n + 1 WHERE name = 'ELAN'")
                        conn.execute(f"INSERT INTO {db}.nokey VALUES ({r}, 'w')")
                    self.statements += 1
                    time.sleep(0.002)
        except BaseException as exc:
            self.error = exc


def _changes_since(server: Any, db: str, start: str) -> list[tuple[str, int, int]]:
    tail = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--from", start, "--until-end",
         "--tables", rf"{db}\..*"],
        capture_output=True, timeout=600, check=True,
    )
    return sorted((c["file"], c["pos"], c["row"]) for c in map(json.loads, tail.stdout.decode().splitlines()))


def _check(server: Any, db: str, lake: str) -> None:
    verdicts = verify_lake(parse_dsn(server.dsn("root")), lake, tables=lambda d, _t: d == db)
    assert {v.table for v in verdicts if v.compared} == {"big", "pairs", "names"}, verdicts
    assert [v.table for v in verdicts if not v.compared] == ["nokey"], verdicts  # no key: change log only
    assert all(v.ok for v in verdicts), [v for v in verdicts if not v.ok]
    state = json.loads((Path(lake) / "_sluice" / "snapshot.json").read_text())
    start = state["start"]
    log = deltalake.DeltaTable(f"{lake}/_sluice/changes").to_pyarrow_table().to_pylist()
    changes = [r for r in log if r["op"] not in ("read", "ddl")]
    keys = sorted((r["file"], r["pos"], r["row"]) for r in changes)
    assert len(keys) == len(set(keys)), "a change is in the change log twice"
    assert keys == _changes_since(server, db, f"{start['file']}:{start['pos']}")
    _check_keyless(server, db, log, changes)


def _check_keyless(server: Any, db: str, log: list[dict[str, Any]], changes: list[dict[str, Any]]) -> None:
    """The key-less table, rebuilt from the change log (its read rows, then its changes after their
    position), holds what the source holds."""
    reads = [r for r in log if r["op"] == "read" and r["db"] == db]
    assert {r["table"] for r in reads} == {"nokey"}
    assert len({(r["file"], r["pos"]) for r in reads}) == 1, "the key-less table was read more than once"
    at = position_key(reads[0]["file"], reads[0]["pos"])

    def row(text: str) -> tuple[Any, ...]:
        return tuple(sorted(json.loads(text).items()))

    rebuilt = Counter(row(r["after"]) for r in reads)
    later = [r for r in changes if r["db"] == db and r["table"] == "nokey" and position_key(r["file"], r["pos"]) > at]
    for r in sorted(later, key=lambda r: (position_key(r["file"], r["pos"]), r["row"])):
        if r["before"] is not None:
            rebuilt[row(r["before"])] -= 1
        if r["after"] is not None:
            rebuilt[row(r["after"])] += 1
    with _root(server) as conn:
        source = Counter(tuple(sorted({"x": int(x), "y": y}.items())) for x, y in conn.query(
            f"SELECT x, y FROM {db}.nokey").rows)
    assert +rebuilt == source


def test_snapshot_while_the_table_is_written_then_stream(server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="sluice.spark.pipeline.staged_batch")
    db = f"snap_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    with _root(server) as conn:
        _populate(conn, db, ROWS)
    writer = Writer(server, db, ROWS)
    writer.start()
    try:
        config = PipelineConfig(source=server.dsn("root"), lake=lake, tables=rf"{db}\..*", trigger="once",
                                snapshot="initial", chunk_rows=20_000)
        stats = Pipeline(config).run(handle_signals=False)
    finally:
        writer.stop.set()
        writer.join(60)
    assert writer.error is None, writer.error
    assert writer.statements > 100, "the writer did not overlap the snapshot"
    snapshot = json.loads((Path(lake) / "_sluice" / "snapshot.json").read_text())
    assert snapshot["complete"] and len(snapshot["tables"][f"{db}.big"]["done"]) >= 10
    assert stats.rows > 0
    # The changes written during the snapshot were filtered column-wise (integer, composite and
    # case-insensitive text keys alike), and the keys the snapshot read after their last change left out.
    kept = re.findall(rf"{db}\.big: the snapshot filter keeps (\d+) of the batch's (\d+) keys", caplog.text)
    assert kept and any(int(k) < int(n) for k, n in kept), caplog.text[-2000:]
    assert "judges the batch's changes one by one" not in caplog.text
    Pipeline(PipelineConfig(source=server.dsn("root"), lake=lake, tables=rf"{db}\..*", trigger="once",
                            snapshot="initial", chunk_rows=20_000)).run(handle_signals=False)
    _check(server, db, lake)
    # Re-snapshot one table on demand (one chunk at a time), then stream on.
    with _root(server) as conn:
        conn.execute(f"UPDATE {db}.pairs SET v = -v WHERE a < 50")
    again = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "snapshot", "--source", server.dsn("root"), "--lake", lake,
         "--tables", rf"{db}\.pairs", "--chunk-rows", "500", "--connections", "1"],
        capture_output=True, timeout=600,
    )
    assert again.returncode == 0, again.stderr.decode()[-3000:]
    assert f"reading again: {db}.pairs" in again.stderr.decode()
    Pipeline(PipelineConfig(source=server.dsn("root"), lake=lake, tables=rf"{db}\..*", trigger="once",
                            snapshot="initial", chunk_rows=20_000)).run(handle_signals=False)
    _check(server, db, lake)
    with _root(server) as conn:
        conn.execute(f"DROP DATABASE {db}")


@pytest.mark.mysql
def test_a_killed_snapshot_resumes_at_its_first_unfinished_chunk(mysql_server, tmp_path):
    # The state a kill leaves is the snapshot's own, the same on both flavors: MySQL's, with its
    # low watermarks taken ahead, is the one with more to resume.
    server = mysql_server
    db = f"snapk_{uuid.uuid4().hex[:8]}"
    lake = tmp_path / "lake"
    with _root(server) as conn:
        _populate(conn, db, 100_000)
    args = [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("root"), "--lake", str(lake),
            "--tables", rf"{db}\..*", "--chunk-rows", "5000"]
    state = lake / "_sluice" / "snapshot.json"
    proc = subprocess.Popen([*args, "--snapshot", "only"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    done = 0
    while time.monotonic() < deadline and proc.poll() is None:
        if state.exists():
            try:
                done = len(json.loads(state.read_text())["tables"].get(f"{db}.big", {}).get("done", {}))
            except ValueError:
                done = 0
            if done >= 3:
                break
        time.sleep(0.2)
    assert proc.poll() is None, proc.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()  # type: ignore[union-attr]
    before = json.loads(state.read_text())
    finished = set(before["tables"][f"{db}.big"]["done"])
    assert 3 <= len(finished) < len(before["tables"][f"{db}.big"]["chunks"])
    with _root(server) as conn:
        conn.execute(f"UPDATE {db}.big SET c = 'after kill' WHERE id % 97 = 0")
        conn.execute(f"DELETE FROM {db}.big WHERE id % 101 = 0")
    final = subprocess.run([*args, "--trigger", "once"], capture_output=True, timeout=900)
    assert final.returncode == 0, final.stderr.decode()[-3000:]
    after = json.loads(state.read_text())
    assert after["complete"]
    for chunk_id in finished:  # finished chunks were not read again
        assert after["tables"][f"{db}.big"]["done"][chunk_id] == before["tables"][f"{db}.big"]["done"][chunk_id]
    _check(server, db, str(lake))
    with _root(server) as conn:
        conn.execute(f"DROP DATABASE {db}")
