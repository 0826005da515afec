"""kill -9 of `sluice run` at random moments while DML and DDL of every kind run: nothing lost, nothing twice.

A writer loops over cycles: each creates a table, changes its columns every way the mirror must
follow (ADD with a default, widening MODIFY, RENAME COLUMN, DROP COLUMN, an ADD whose default only a
re-read gets right, TRUNCATE, RENAME TABLE, DROP + CREATE with other columns), with DML between
every DDL, while a steady table takes inserts, updates and deletes. `sluice run --trigger 1s` is
killed with SIGKILL at random moments (during batches, DDL steps, rewrites and re-reads alike) and
started again; a last `--trigger once` catches up. Then every table's mirror equals `SELECT`
(`verify_lake`), the lake has a mirror for exactly the source's tables, and the change log holds
every change once: its count per table and op equals the writer's own tally of affected rows.
"""

from __future__ import annotations

import collections
import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import deltalake
import pytest
from deltalake.exceptions import TableNotFoundError

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.layout import Lake, open_lake
from sluice.lake.mirror.pending import PendingChanges
from sluice.sandbox.server import Sandbox
from sluice.spark.verify.check import verify_lake
from tests.conftest import binlog_row_metadata, kills

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KILLS = kills(3)  # per case, at random moments after a run's first commit (SLUICE_TEST_KILLS for more)


class Writer:
    """DML and DDL on the source, with a tally of the row changes per (table, op)."""

    def __init__(self, conn: Connection, db: str) -> None:
        self.conn = conn
        self.db = db
        self.tally: collections.Counter[tuple[str, str]] = collections.Counter()
        self.steady = 0

    def dml(self, table: str, op: str, sql: str) -> None:
        ok = self.conn.execute(sql.replace("@", f"{self.db}."))
        self.tally[(table, op)] += ok.affected_rows

    def ddl(self, sql: str) -> None:
        self.conn.execute(sql.replace("@", f"{self.db}."))

    def steady_dml(self) -> None:
        n = self.steady
        self.dml("acc", "insert", f"INSERT INTO @acc (id, v, s) VALUES ({n}, {n}, 'a{n}'), ({n + 1}, {n}, 'b{n}')")
        if n >= 10:
            self.dml("acc", "update", f"UPDATE @acc SET v = v + 1 WHERE id = {n - 9}")
            self.dml("acc", "delete", f"DELETE FROM @acc WHERE id = {n - 10}")
        self.steady += 2

    def cycle(self, k: int, pause: float) -> None:
        c, r = f"c{k}", f"r{k}"
        steps = [
            lambda: self.ddl(f"CREATE TABLE @{c} (id INT PRIMARY KEY, a INT, b VARCHAR(10), d DECIMAL(8,2))"),
            lambda: self.dml(c, "insert", f"INSERT INTO @{c} VALUES (1, 1, 'x', 1.25), (2, 2, 'y', 2.5), "
                                          "(3, 3, 'z', 3.75), (4, 4, 'w', 4)"),
            lambda: self.ddl(f"ALTER TABLE @{c} ADD COLUMN s VARCHAR(5) NOT NULL DEFAULT 'new' AFTER a"),
            lambda: self.dml(c, "update", f"UPDATE @{c} SET s = 'upd' WHERE id <= 2"),
            lambda: self.ddl(f"ALTER TABLE @{c} MODIFY a BIGINT, MODIFY d DECIMAL(12,3)"),
            lambda: self.dml(c, "insert",
                             f"INSERT INTO @{c} (id, a, s, b, d) VALUES (5, 5000000000, 'big', 'v', 0.125)"),
            lambda: self.ddl(f"ALTER TABLE @{c} RENAME COLUMN b TO bb"),
            lambda: self.dml(c, "delete", f"DELETE FROM @{c} WHERE id = 1"),
            lambda: self.ddl(f"ALTER TABLE @{c} DROP COLUMN s"),
            lambda: self.dml(c, "insert", f"INSERT INTO @{c} (id, a, bb, d) VALUES (6, 6, 'six', 6)"),
            lambda: self.ddl(f"ALTER TABLE @{c} ADD COLUMN t DATETIME DEFAULT CURRENT_TIMESTAMP"),
            lambda: self.dml(c, "update", f"UPDATE @{c} SET a = a + 1 WHERE id >= 5"),
            lambda: self.ddl(f"TRUNCATE TABLE @{c}"),
            lambda: self.dml(c, "insert", f"INSERT INTO @{c} (id, a, bb, d) VALUES (7, 7, 'seven', 7)"),
            lambda: self.ddl(f"RENAME TABLE @{c} TO @{r}"),
            lambda: self.dml(r, "insert", f"INSERT INTO @{r} (id, a, bb, d) VALUES (8, 8, 'eight', 8)"),
        ]
        if k % 2 == 1:
            old = f"r{k - 1}"
            steps += [
                lambda: self.ddl(f"DROP TABLE @{old}"),
                lambda: self.ddl(f"CREATE TABLE @{old} (id INT PRIMARY KEY, z VARCHAR(3))"),
                lambda: self.dml(old, "insert", f"INSERT INTO @{old} VALUES (1, 'new')"),
            ]
        for step in steps:
            step()
            self.steady_dml()
            time.sleep(pause)


# Two of the four (flavor, metadata) pairs, each minutes long: MariaDB with its default metadata
# (names from the schema history), MySQL with FULL (names from the binlog) and every MERGE of the
# mirrors waiting (lake.pending), so that kills land between appends of pending changes, their MERGEs
# and the DDL that MERGEs them first.
@pytest.mark.parametrize("flavor, metadata, later", [
    pytest.param("mariadb", "default", False, marks=pytest.mark.mariadb, id="mariadb-default"),
    pytest.param("mysql", "FULL", True, marks=pytest.mark.mysql, id="mysql-FULL-pending"),
])
def test_kill_9_during_ddl_loses_and_repeats_nothing(flavor, metadata, later, request, tmp_path):
    server = request.getfixturevalue(f"{flavor}_server")
    with binlog_row_metadata(server, metadata):
        _chaos(server, open_lake(tmp_path / "lake"), dict(os.environ), tmp_path, later=later)


def _wait_pending(store: Lake, db: str, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not PendingChanges(store, db, "acc").rows:
        if proc.poll() is not None:
            pytest.fail(f"sluice run exited by itself: {proc.stderr.read().decode()[-3000:]}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            pytest.fail(f"no change of acc was left pending in {timeout:.0f} s")
        time.sleep(0.5)


def _wait_commit(store: Lake, since: float, proc: subprocess.Popen[bytes], timeout: float = 300) -> None:
    """Wait until the change log has a commit written at ``since`` or later: the run is past its start."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(TableNotFoundError):  # the snapshot made none: the run's first batch does
            log = deltalake.DeltaTable(f"{store.uri}/_sluice/changes", storage_options=store.delta_options())
            if log.history(1)[0]["timestamp"] >= since * 1000:
                return
        if proc.poll() is not None:
            pytest.fail(f"sluice run exited by itself: {proc.stderr.read().decode()[-3000:]}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            pytest.fail(f"sluice run committed no batch in {timeout:.0f} s")
        time.sleep(0.2)


def _chaos(server: Sandbox, store: Lake, env: dict[str, str], tmp_path: Path, later: bool = False) -> None:
    db = f"kc_{uuid.uuid4().hex[:8]}"
    lake = store.uri
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.acc (id INT PRIMARY KEY, v INT, s VARCHAR(10))")
        conn.execute(f"INSERT INTO {db}.acc VALUES (-1, 0, 'before')")  # in the snapshot, not the change log
    done = threading.Event()
    failure: list[BaseException] = []
    tally: collections.Counter[tuple[str, str]] = collections.Counter()

    def workload(first_ddl: threading.Event) -> None:
        try:
            with Connection.open(parse_dsn(server.dsn("root"))) as conn:
                writer = Writer(conn, db)
                # A DDL right after the initial snapshot, before the stream's first batch.
                writer.ddl("ALTER TABLE @acc ADD COLUMN early INT NOT NULL DEFAULT 7")
                first_ddl.set()
                k = 0
                while not done.is_set():
                    writer.cycle(k, pause=0.3)
                    k += 1
                tally.update(writer.tally)
        except BaseException as exc:
            failure.append(exc)
            first_ddl.set()

    args = [
        sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("root"), "--lake", lake,
        "--tables", rf"{db}\..*", "--max-rows-per-batch", "50", "--checkpoint-dir", str(tmp_path / "checkpoint"),
    ]
    if later:
        config = tmp_path / "later.toml"
        config.write_text("[mirror]\nmerge_below = 1\nbytes_per_change = 1\nmax_lag = 3600\n")
        args += ["--config", str(config)]
    first = subprocess.run([*args, "--snapshot", "only"], capture_output=True, timeout=300, env=env)
    assert first.returncode == 0, first.stderr.decode()[-3000:]
    first_ddl = threading.Event()
    thread = threading.Thread(target=workload, args=(first_ddl,), daemon=True)
    thread.start()
    first_ddl.wait(60)
    rng = random.Random(29)
    try:
        for _ in range(KILLS):
            since = time.time()
            proc = subprocess.Popen([*args, "--trigger", "1s"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    env=env)
            if later and not PendingChanges(store, db, "acc").rows:
                _wait_pending(store, db, proc)  # the kills below land while changes are pending
            _wait_commit(store, since, proc)  # past Spark's start, however long it takes
            time.sleep(rng.uniform(0.0, 4.0))  # then a random moment of the batches and DDL steps that follow
            if proc.poll() is not None:
                pytest.fail(f"sluice run exited by itself: {proc.stderr.read().decode()[-3000:]}")  # type: ignore[union-attr]
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            proc.stderr.close()  # type: ignore[union-attr]
    finally:
        done.set()
        thread.join(120)
    assert not failure, failure
    if later:
        assert PendingChanges(store, db, "acc").rows > 0, "no batch of acc was left pending by the kills"
    final = subprocess.run([*args, "--trigger", "once"], capture_output=True, timeout=900, env=env)
    assert final.returncode == 0, final.stderr.decode()[-3000:]

    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        source = {row[0] for row in conn.query(
            f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{db}'").rows}
        verdicts = verify_lake(parse_dsn(server.dsn("root")), store, tables=lambda d, _t: d == db)
        conn.execute(f"DROP DATABASE {db}")
    assert {t for d, t in store.mirrors() if d == db} == source
    assert not PendingChanges(store, db, "acc").rows, "a clean stop left changes pending"
    assert all(v.ok for v in verdicts), [v for v in verdicts if not v.ok]
    log = deltalake.DeltaTable(f"{lake}/_sluice/changes", storage_options=store.delta_options()
                               ).to_pyarrow_table().to_pylist()
    rows = [r for r in log if r["op"] in ("insert", "update", "delete")]
    keys = [(r["file"], r["pos"], r["row"]) for r in rows]
    assert len(keys) == len(set(keys)), "a change is in the change log twice"
    logged = collections.Counter((r["table"], r["op"]) for r in rows)
    if logged != +tally:
        differing = {k for k in set(logged) | set(tally) if logged[k] != tally[k]}
        detail = sorted((r["table"], r["op"], r["file"], r["pos"], r["row"], r["batch_id"], r["before"], r["after"])
                        for r in rows if (r["table"], r["op"]) in differing)
        pytest.fail(f"the change log does not hold the writer's changes once: {differing}, "
                    f"logged {[logged[k] for k in differing]}, written {[tally[k] for k in differing]}:\n"
                    + "\n".join(map(str, detail[-60:])))
    ddl = [(r["file"], r["pos"]) for r in log if r["op"] == "ddl"]
    assert len(ddl) == len(set(ddl)), "a DDL is in the change log twice"
