"""kill -9 of ``sluice run`` on S3 across ``DROP TABLE`` and ``CREATE TABLE`` of one name, and a
``RENAME``, then a restart: every captured table has a whole mirror, none a log without a commit.

The lake is on the S3 test server behind a proxy (``tests.s3_proxy``) that kills ``sluice run
--trigger 1s`` with SIGKILL the moment one request arrives, before the store receives it:

- the removal of the old ``t``'s objects, once they are copied to the archive (DROP and CREATE);
- the first log entry of the new ``t``'s mirror (DROP and CREATE again, other columns);
- the copy of ``u``'s objects to ``w`` (RENAME TABLE u TO w).

DML runs on the source all along, into a table of its own and into each new ``t``. A last run
(``--trigger once``) catches up; then ``t``'s mirror opens at version 0 with the last columns,
every mirror equals ``SELECT``, each dropped ``t`` is archived once, and every change and every DDL
is in the change log once.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

import deltalake
import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.layout import Lake, open_lake
from tests.integration.s3_kills import (
    Killer,
    caught_up,
    changes_once,
    copied_to,
    first_commit,
    folder,
    killed_at,
    objects_deleted,
)
from tests.integration.workload import Workload
from tests.s3_proxy import S3Proxy

pytestmark = [pytest.mark.spark, pytest.mark.slow]

FLAVORS = [pytest.param("mariadb_server", marks=pytest.mark.mariadb, id="mariadb"),
           pytest.param("mysql_server", marks=pytest.mark.mysql, id="mysql")]
ROWS = 20


def _batches(store: Lake) -> int:
    """The change log's version (-1: none yet)."""
    try:
        return deltalake.DeltaTable(store.changes, storage_options=store.delta_options()).version()
    except deltalake.exceptions.TableNotFoundError:
        return -1


def _wait_streaming(store: Lake, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    """Until ``proc`` committed a batch of its own: it replayed what a kill cut short and streams."""
    before, deadline = _batches(store), time.monotonic() + timeout
    while _batches(store) <= before:
        if proc.poll() is not None:
            pytest.fail(f"sluice run ended before it streamed: {proc.communicate()[1].decode()[-3000:]}")
        assert time.monotonic() < deadline, f"no change-log commit in {timeout} s"
        time.sleep(0.5)


def _once_streaming(store: Lake, conn: Connection, statements: list[str]) -> Callable[[subprocess.Popen[bytes]], None]:
    """What a round does while its run starts: wait until the run streams (a DDL before it would be
    snapshotted, not streamed), then run ``statements``."""

    def meanwhile(proc: subprocess.Popen[bytes]) -> None:
        _wait_streaming(store, proc)
        for statement in statements:
            conn.execute(statement)

    return meanwhile


@pytest.mark.parametrize("flavor", FLAVORS)
def test_kill_9_across_drop_create_and_rename_on_s3_leaves_whole_mirrors(request, flavor, s3_server, tmp_path):
    server = request.getfixturevalue(flavor)
    db = f"dk_{uuid.uuid4().hex[:8]}"
    lake = f"s3://{s3_server.bucket}/{db}"
    store = open_lake(lake, s3_server.storage_options())
    options = store.delta_options()
    killer = Killer()
    proxy = S3Proxy(s3_server.port, before=killer)
    env = {**os.environ, **s3_server.env(), "AWS_ENDPOINT_URL": proxy.url}
    args = [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("repl"), "--lake", lake,
            "--tables", rf"{db}\..*", "--checkpoint-dir", str(tmp_path / "checkpoint")]
    values = ", ".join(f"({i}, {i})" for i in range(ROWS))
    # Each round: what it kills at, and the DDL (with the rows that follow it) it runs meanwhile.
    rounds = [
        ("the old t's removal after its archive copy", objects_deleted(folder(store.mirror(db, "t"))),
         [f"DROP TABLE {db}.t", f"CREATE TABLE {db}.t (id INT PRIMARY KEY, first_shape VARCHAR(8))",
          f"INSERT INTO {db}.t VALUES (1, 'a'), (2, 'b')"]),
        ("the new t's first commit", first_commit(folder(store.mirror(db, "t")), "second_shape"),
         [f"DROP TABLE {db}.t", f"CREATE TABLE {db}.t (id BIGINT PRIMARY KEY, second_shape DATE, n INT)",
          f"INSERT INTO {db}.t VALUES (5, '2024-01-02', 5), (6, NULL, 6), (7, '2025-12-31', 7)"]),
        ("u's copy to w", copied_to(folder(store.mirror(db, "w"))),
         [f"RENAME TABLE {db}.u TO {db}.w", f"INSERT INTO {db}.w VALUES (99, 99)"]),
    ]
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        for table in ("t", "u", "k"):
            conn.execute(f"CREATE TABLE {db}.{table} (id INT PRIMARY KEY, v INT)")
            conn.execute(f"INSERT INTO {db}.{table} VALUES {values}")
        first = subprocess.run([*args, "--snapshot", "only"], capture_output=True, timeout=300, env=env)
        assert first.returncode == 0, first.stderr.decode()[-3000:]
        workload = Workload(server, db, table="k", pause=0.1)
        try:
            for what, match, statements in rounds:
                meanwhile = _once_streaming(store, conn, statements)
                killed_at([*args, "--trigger", "1s"], env, killer, what, match, meanwhile)
        finally:
            workload.stop()
            proxy.close()
        verdicts = caught_up(args, env, s3_server, server, store, db)
        conn.execute(f"DROP DATABASE {db}")

    assert all(v.ok for v in verdicts), verdicts
    assert {v.table: v.source_rows for v in verdicts if v.table != "k"} == {"t": 3, "w": ROWS + 1}, verdicts
    assert sorted(v.table for v in verdicts) == ["k", "t", "w"], verdicts
    t = deltalake.DeltaTable(store.mirror(db, "t"), storage_options=options)  # no "No files in log segment"
    assert t.schema().to_arrow().names == ["id", "second_shape", "n"]
    assert deltalake.DeltaTable(store.mirror(db, "t"), version=0, storage_options=options).schema() == t.schema()
    assert not store.is_delta(store.mirror(db, "u")) and not list(store.keys(f"{db}/u/"))
    archived = {name: deltalake.DeltaTable(store.join("_sluice/archive", db, name), storage_options=options)
                for name in store.folders(f"_sluice/archive/{db}")}
    assert sorted(n.split("@")[0] for n in archived) == ["t", "t"], sorted(archived)  # each dropped t once
    shapes = sorted(tuple(a.schema().to_arrow().names) for a in archived.values())
    assert shapes == [("id", "first_shape"), ("id", "v")], shapes
    log = changes_once(store, "k", workload.tally)
    assert collections.Counter((r["table"], r["op"]) for r in log if r["table"] != "k" and r["op"] != "ddl") == {
        ("t", "insert"): 5, ("w", "insert"): 1}
    ddl = [(r["file"], r["pos"]) for r in log if r["op"] == "ddl"]
    assert len(ddl) == len(set(ddl)) == 5, ddl  # two DROPs, two CREATEs, a RENAME: each once
