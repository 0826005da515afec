"""``sluice run --history`` on real servers and real Spark: a table's history (SCD type 2) beside its
mirror, through the snapshot, a writer's inserts, updates (several per key in one batch and in one
transaction), deletes and key changes, an ADD COLUMN, a kill -9 in the middle and a restart.

The same run keeps a column out (``--exclude-columns``) and hashes another, the primary key, of a
second table with a history (``--hash-columns``), which another writer changes from before the
snapshot on, so that its chunks, cut on the key's own values, are read while its keys change: the
mirror and the history are keyed on the hash, the snapshot filter places each hashed key among the
chunks, and both equal the source with the same HMAC applied (``sluice verify`` by the rules).

The history is then checked against the change log: for every key, its versions are exactly the
ones the change log's changes of that key make, in ``seq`` order (the snapshot's rows open the
first ones, the ADD COLUMN opens one more for each row), each closed by the key's next change, with
the same commit time at both ends; no version twice; and its current versions equal ``SELECT``
(``sluice verify``, which ``exactly_once`` runs, compares them).
"""

from __future__ import annotations

import json
import random
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

from sluice.binlog.position import position_key
from sluice.cdc.column_rules import column_rules, hash_value, sealed
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.mirror.versions import END_AT, END_SEQ, START_AT, START_SEQ
from tests.integration.exactly_once import exactly_once, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.slow]

COLUMNS = ("id", "v", "note", "w")
FIRST = [(i, i, "s") for i in range(1, 21)]  # the rows the snapshot reads
KEY = "history-hash-key-0b7e41d2c9"  # of the config file's [columns] table
USERS = 400  # rows of the table whose key is hashed, read in chunks of 40


def _run(server: Any, lake: Path, db: str, *more: str, history: str = r"\.(t|u)") -> subprocess.Popen[str]:
    config = lake.parent / "sluice.toml"
    config.write_text(f'[columns]\nhash_key = "{KEY}"\n')
    return subprocess.Popen(
        [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("repl"), "--lake", str(lake),
         "--tables", rf"{db}\..*", "--history", db + history, "--chunk-rows", "40", "--config", str(config),
         "--exclude-columns", rf"{db}\.u\.ssn", "--hash-columns", rf"{db}\.u\.email", *more],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


class _Load(threading.Thread):
    """A writer of one table (``name``) on its own connection until ``stop``; ``write`` is its loop."""

    def __init__(self, server: Any, name: str) -> None:
        super().__init__(daemon=True)
        self.server, self.name = server, name
        self.done = threading.Event()
        self.failure: list[BaseException] = []

    def run(self) -> None:
        try:
            with Connection.open(parse_dsn(self.server.dsn("root"))) as conn:
                self.write(conn)
        except BaseException as exc:
            self.failure.append(exc)

    def write(self, conn: Connection) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.done.set()
        self.join(60)
        assert not self.failure, self.failure


class _Users(_Load):
    """Updates, deletes, inserts and key changes of ``db.u`` (keyed on an email), all over the key
    range, until stopped."""

    def __init__(self, server: Any, db: str) -> None:
        super().__init__(server, f"{db}.u")

    def write(self, conn: Connection) -> None:
        rng, live, n = random.Random(7), [f"user{i:04d}@example.com" for i in range(USERS)], USERS
        while not self.done.is_set():
            email = rng.choice(live)
            r = rng.random()
            if r < 0.5:
                conn.execute(f"UPDATE {self.name} SET v = v + 1 WHERE email = '{email}'")
            elif r < 0.65:
                conn.execute(f"DELETE FROM {self.name} WHERE email = '{email}'")
                live.remove(email)
            elif r < 0.85:
                email = f"user{rng.randrange(USERS * 2):04d}x{n}@example.com"
                n += 1
                conn.execute(f"INSERT INTO {self.name} VALUES ('{email}', 0, '000-00-0000')")
                live.append(email)
            else:  # the key changes, most likely into another chunk
                moved = f"user{rng.randrange(USERS):04d}m{n}@example.com"
                n += 1
                conn.execute(f"UPDATE {self.name} SET email = '{moved}' WHERE email = '{email}'")
                live[live.index(email)] = moved
            time.sleep(0.01)


class _Writer(_Load):
    """Rounds of inserts, updates of one key several times (apart and in one transaction), a key
    change every few rounds and deletes, until stopped."""

    def __init__(self, server: Any, db: str) -> None:
        super().__init__(server, f"{db}.t")

    def write(self, conn: Connection) -> None:
        t = self.name
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


def _of_t(lake: Path, db: str, op: str) -> int:
    """How many changes of ``db.t`` with ``op`` the lake's change log holds (-1 before it exists)."""
    try:
        return deltalake.DeltaTable(str(lake / "_sluice" / "changes")).to_pyarrow_table(
            filters=[("db", "=", db), ("table", "=", "t"), ("op", "=", op)]).num_rows
    except Exception:
        return -1


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
        if r["db"] != db or (r["op"] != "ddl" and r["table"] != "t"):
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
        conn.execute(f"CREATE TABLE {db}.u (email VARCHAR(80) PRIMARY KEY, v INT, ssn CHAR(11))")
        conn.execute(f"INSERT INTO {db}.u VALUES " + ", ".join(f"('user{i:04d}@example.com', {i}, '123-45-6789')"
                                                               for i in range(USERS)))
        users = _Users(server, db)
        users.start()  # before the snapshot: its chunks are read while the keys change
        first = _run(server, lake, db, "--trigger", "1s")
        second: subprocess.Popen[str] | None = None
        writer = _Writer(server, db)
        try:
            wait_for(lambda: _snapshot_complete(lake), first, 240, 0.5)
            writer.start()
            wait_for(lambda: _of_t(lake, db, "update") >= 40, first, 240, 0.5)
            conn.execute(f"ALTER TABLE {db}.t ADD COLUMN w INT DEFAULT 7")
            wait_for(lambda: _of_t(lake, db, "update") >= 120, first, 240, 0.3)
            first.send_signal(signal.SIGKILL)  # while the writer writes: most likely inside a batch
            first.wait(60)
            deleted = _of_t(lake, db, "delete")
            second = _run(server, lake, db, "--trigger", "1s")
            wait_for(lambda: _of_t(lake, db, "delete") >= deleted + 20, second, 240, 0.5)  # its own batches
            writer.stop()
            users.stop()
            second.send_signal(signal.SIGINT)
            assert second.wait(180) == 0, second.communicate()[1][-3000:]
        finally:
            for proc in (first, second):
                if proc is not None and proc.poll() is None:
                    proc.kill()
            writer.done.set()
            users.done.set()
        last = _run(server, lake, db, "--trigger", "once")  # everything written so far
        assert last.wait(300) == 0, last.communicate()[1][-3000:]

        rules = column_rules(rf"{db}\.u\.ssn", rf"{db}\.u\.email", KEY.encode())
        # the mirrors and the histories' current versions equal SELECT, u's with the same HMAC applied
        exactly_once(server, lake, db, None, columns=rules)
        _check_hashed_users(conn, lake, db)
        log = deltalake.DeltaTable(str(lake / "_sluice" / "changes")).to_pyarrow_table().to_pylist()
        history = deltalake.DeltaTable(str(lake / db / "t__history")).to_pyarrow_table().to_pylist()
        got = [(r["id"], r[START_SEQ], r[END_SEQ], tuple(r[c] for c in COLUMNS)) for r in history]
        assert len(got) == len(set(got)), "a version is in the history twice"
        mine = [r for r in log if r["db"] == db and (r["table"] == "t" or r["op"] == "ddl")]
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
        other = _run(server, lake, db, "--trigger", "once", history=r"\.t")  # the lake records its --history
        assert other.wait(120) != 0
        assert "keeps the histories of --history" in other.communicate()[1]
        _read_again(server, conn, lake, db)
        exactly_once(server, lake, db, None, columns=rules)  # t's history equals the source again
        conn.execute(f"DROP DATABASE {db}")


def _check_hashed_users(conn: Any, lake: Path, db: str) -> None:
    """``db.u``'s mirror and history are keyed on the email's HMAC, hold no email and no ssn, and
    its snapshot was read in several chunks, their bounds sealed in ``snapshot.json``, while the
    writer changed keys before their high watermarks."""
    emails = [r[0] for r in conn.query(f"SELECT email FROM {db}.u").rows]
    mirror = deltalake.DeltaTable(str(lake / db / "u")).to_pyarrow_table()
    assert mirror.column_names == ["email", "v"]
    assert sorted(mirror.column("email").to_pylist()) == sorted(hash_value(KEY.encode(), e) for e in emails)
    history = deltalake.DeltaTable(str(lake / db / "u__history")).to_pyarrow_table().to_pylist()
    versions = [(r["email"], r[START_SEQ], r[END_SEQ]) for r in history]
    assert len(versions) == len(set(versions)), "a version is in the history twice"
    assert all(len(r["email"]) == 64 and "@" not in r["email"] for r in history)
    log = [r for r in deltalake.DeltaTable(str(lake / "_sluice" / "changes")).to_pyarrow_table().to_pylist()
           if r["db"] == db and r["table"] == "u" and r["op"] != "ddl"]
    assert not [r for r in log if "@" in (r["before"] or "") + (r["after"] or "") or "123-45" in (r["after"] or "")]
    text = (lake / "_sluice" / "snapshot.json").read_text()
    assert "example.com" not in text  # the chunks' bounds, emails, are sealed
    state = json.loads(text)
    table = state["tables"][f"{db}.u"]
    assert len(table["chunks"]) > 3 and all(sealed(c) for c in table["chunks"])
    start = position_key(state["start"]["file"], state["start"]["pos"])
    highs = [position_key(d["high"]["file"], d["high"]["pos"]) for d in table["done"].values()]
    during = [r for r in log if r["op"] != "read" and start <= position_key(r["file"], r["pos"]) < max(highs)]
    assert len(during) > 10, "no change of the hashed table before its chunks' last high watermark: nothing placed"


def _read_again(server: Any, conn: Any, lake: Path, db: str) -> None:
    """Rows of ``db.t`` changed while the pipeline is stopped, then ``sluice snapshot`` reads the
    table again and the next run streams on: the changes before the new snapshot's high watermarks
    stay out of the mirror and the history, and the history is compared with the mirror the
    snapshot left at the run's first batch: a version opened for each row that changed (no
    ``seq``), the deleted row's closed."""
    ids = sorted(int(r[0]) for r in conn.query(f"SELECT id FROM {db}.t").rows)
    changed, gone = ids[:3], ids[3]
    conn.execute(f"UPDATE {db}.t SET v = v + 1000 WHERE id IN ({', '.join(map(str, changed))})")
    conn.execute(f"DELETE FROM {db}.t WHERE id = {gone}")
    again = subprocess.run([sys.executable, "-m", "sluice.cli", "snapshot", "--source", server.dsn("repl"), "--lake",
                            str(lake), "--tables", rf"{db}\.t", "--config", str(lake.parent / "sluice.toml")],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((lake / "_sluice" / "snapshot.json").read_text())["tables"][f"{db}.t"]["resync_history"]
    last = _run(server, lake, db, "--trigger", "once")
    assert last.wait(300) == 0, last.communicate()[1][-3000:]
    assert "resync_history" not in json.loads((lake / "_sluice" / "snapshot.json").read_text())["tables"][f"{db}.t"]
    history = deltalake.DeltaTable(str(lake / db / "t__history")).to_pyarrow_table().to_pylist()
    current = {r["id"]: r for r in history if r[END_AT] is None}
    assert gone not in current
    assert all(current[i]["v"] >= 1000 and current[i][START_SEQ] is None for i in changed)
