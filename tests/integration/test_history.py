"""``sluice run --history`` on real servers and real Spark: a table's history (SCD type 2) beside its
mirror, through the snapshot, a writer's inserts, updates (several per key in one batch and in one
transaction), deletes and key changes, an ADD COLUMN, a kill -9 in the middle and a restart.

The history is then checked against the change log: for every key, its versions are exactly the
ones the change log's changes of that key make, in ``seq`` order (the snapshot's rows open the
first ones, the ADD COLUMN opens one more for each row), each closed by the key's next change, with
the same commit time at both ends; no version twice; and its current versions equal ``SELECT``
(``sluice verify``, which ``exactly_once`` runs, compares them).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import deltalake
import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.mirror.versions import END_AT, END_SEQ, START_AT, START_SEQ
from tests.integration.exactly_once import changes_in_log, exactly_once, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.slow]

COLUMNS = ("id", "v", "note", "w")
FIRST = [(i, i, "s") for i in range(1, 21)]  # the rows the snapshot reads


def _run(server: Any, lake: Path, db: str, *more: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("repl"), "--lake", str(lake),
         "--tables", rf"{db}\..*", "--history", rf"{db}\.t", *more],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


class _Writer(threading.Thread):
    """Rounds of inserts, updates of one key several times (apart and in one transaction), a key
    change every few rounds and deletes, until stopped."""

    def __init__(self, server: Any, db: str) -> None:
        super().__init__(daemon=True)
        self.server, self.name = server, f"{db}.t"
        self.done = threading.Event()
        self.failure: list[BaseException] = []

    def run(self) -> None:
        t = self.name
        try:
            with Connection.open(parse_dsn(self.server.dsn("root"))) as conn:
                n = 100
                while not self.done.is_set():
                    conn.execute(f"INSERT INTO {t} (id, v, note) VALUES ({n}, {n}, 'i'), ({n + 1}, {n}, 'i')")
                    conn.execute(f"UPDATE {t} SET v = v + 1 WHERE id = {n - 4}")
                    conn.execute(f"UPDATE {t} SET v = v + 1 WHERE id = {n - 4}")
                    conn.execute("BEGIN")
                    conn.execute(f"UPDATE {t} SET v = v + 10 WHERE id = {n - 6}")
                    conn.execute(f"UPDATE {t} SET note = 'u' WHERE id = {n - 6}")
                    conn.execute("COMMIT")
                    if n % 10 == 0:
                        conn.execute(f"UPDATE {t} SET id = id + 100000 WHERE id = {n - 8}")  # a key change
                    conn.execute(f"DELETE FROM {t} WHERE id = {n - 12}")
                    n += 2
                    time.sleep(0.05)
        except BaseException as exc:
            self.failure.append(exc)

    def stop(self) -> None:
        self.done.set()
        self.join(60)
        assert not self.failure, self.failure


def _snapshot_complete(lake: Path) -> bool:
    state = lake / "_sluice" / "snapshot.json"
    return state.exists() and json.loads(state.read_text()).get("complete") is True


def _expected(log: list[dict[str, Any]], db: str) -> set[tuple[Any, ...]]:
    """The versions the change log's changes of ``db.t`` make, from the snapshot's rows on:
    ``(key, start_seq, end_seq, values)``."""
    open_: dict[int, tuple[int | None, tuple[Any, ...]]] = {r[0]: (None, (*r, None)) for r in FIRST}
    done: set[tuple[Any, ...]] = set()

    def close(key: int, seq: int) -> None:
        start, values = open_.pop(key)
        done.add((key, start, seq, values))

    for r in sorted(log, key=lambda r: r["seq"]):
        if r["db"] != db:
            continue
        if r["op"] == "ddl":
            if f"{db}.t" in json.loads(r["ddl"])["tables"]:  # the ADD COLUMN: each row's w is now 7
                for key in list(open_):
                    values = open_[key][1]
                    close(key, r["seq"])
                    open_[key] = (r["seq"], (*values[:3], 7))
            continue
        before = json.loads(r["before"]) if r["before"] else None
        after = json.loads(r["after"]) if r["after"] else None
        if before is not None:
            close(before["id"], r["seq"])
        if after is not None:
            open_[after["id"]] = (r["seq"], tuple(after.get(c) for c in COLUMNS))
    return done | {(key, start, None, values) for key, (start, values) in open_.items()}


def test_history_keeps_every_version_exactly_once_through_a_kill(server, tmp_path):
    db = f"hist_{uuid.uuid4().hex[:8]}"
    lake = tmp_path / "lake"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT, note VARCHAR(8))")
        conn.execute(f"INSERT INTO {db}.t VALUES " + ", ".join(f"({i}, {v}, '{s}')" for i, v, s in FIRST))
        first = _run(server, lake, db, "--trigger", "1s")
        second: subprocess.Popen[str] | None = None
        writer = _Writer(server, db)
        try:
            wait_for(lambda: _snapshot_complete(lake), first, 240, 0.5)
            writer.start()
            wait_for(lambda: changes_in_log(lake, db, "update") >= 40, first, 240, 0.5)
            conn.execute(f"ALTER TABLE {db}.t ADD COLUMN w INT DEFAULT 7")
            wait_for(lambda: changes_in_log(lake, db, "update") >= 120, first, 240, 0.3)
            first.send_signal(signal.SIGKILL)  # while the writer writes: most likely inside a batch
            first.wait(60)
            deleted = changes_in_log(lake, db, "delete")
            second = _run(server, lake, db, "--trigger", "1s")
            wait_for(lambda: changes_in_log(lake, db, "delete") >= deleted + 20, second, 240, 0.5)  # its own batches
            writer.stop()
            second.send_signal(signal.SIGINT)
            assert second.wait(180) == 0, second.communicate()[1][-3000:]
        finally:
            for proc in (first, second):
                if proc is not None and proc.poll() is None:
                    proc.kill()
            writer.done.set()
        last = _run(server, lake, db, "--trigger", "once")  # everything written so far
        assert last.wait(300) == 0, last.communicate()[1][-3000:]

        exactly_once(server, lake, db, None)  # the mirror and the history's current versions equal SELECT
        log = deltalake.DeltaTable(str(lake / "_sluice" / "changes")).to_pyarrow_table().to_pylist()
        history = deltalake.DeltaTable(str(lake / db / "t__history")).to_pyarrow_table().to_pylist()
        got = [(r["id"], r[START_SEQ], r[END_SEQ], tuple(r[c] for c in COLUMNS)) for r in history]
        assert len(got) == len(set(got)), "a version is in the history twice"
        mine = [r for r in log if r["db"] == db]
        assert {r["op"] for r in mine} >= {"insert", "update", "delete", "ddl"}
        assert any(r["op"] == "update" and json.loads(r["before"])["id"] != json.loads(r["after"])["id"]
                   for r in mine), "no key change was written"
        assert set(got) == _expected(mine, db)
        # each version starts when the one before it of its key ends, at the same commit time
        by_end = {(r["id"], r[END_SEQ]): r[END_AT] for r in history if r[END_SEQ] is not None}
        follows = [(r[START_AT], by_end[(r["id"], r[START_SEQ])]) for r in history
                   if (r["id"], r[START_SEQ]) in by_end]
        assert follows and all(start == end for start, end in follows)
        assert all(r[START_AT] is not None for r in history)
        assert sum(r[END_AT] is None for r in history) == len({r["id"] for r in history if r[END_AT] is None})
        conn.execute(f"DROP DATABASE {db}")
