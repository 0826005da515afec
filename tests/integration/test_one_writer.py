"""One writer at a time on a lake, as schedulers start pipelines: a second ``sluice run`` on a lake a
live pipeline writes, and a writer paused (SIGSTOP) past its lease while another takes over.

The second run has its own ``--checkpoint-dir`` (a rollout's new pod, an Airflow retry): it must
stop at once with one line naming the running one, and commit nothing. The paused writer, resumed
(SIGCONT) after the other took over, must stop with the same error, and commit nothing either. In
both, DML runs on the source all along; a last run catches up, and then every change is in the
change log once and the mirror equals ``SELECT``. On a path and on S3 (the S3 test server). The
second run is tried on MySQL in a test of its own, on MariaDB in the paused writer's run.
"""

from __future__ import annotations

import collections
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import deltalake
import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.layout import Lake, open_lake
from sluice.spark.verify.check import verify_lake
from tests.integration.workload import Workload

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WHERE = ["path", "s3"]


def _lake(request: pytest.FixtureRequest, where: str, db: str, tmp_path: Path) -> tuple[str, Lake, dict[str, str]]:
    if where == "path":
        uri = str(tmp_path / "lake")
        return uri, open_lake(uri), dict(os.environ)
    s3 = request.getfixturevalue("s3_server")
    uri = f"s3://{s3.bucket}/{db}"
    return uri, open_lake(uri, s3.storage_options()), {**os.environ, **s3.env()}


def _run_args(server: Any, db: str, lake: str, checkpoint: Path, *more: str) -> list[str]:
    return [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("repl"), "--lake", lake,
            "--tables", rf"{db}\..*", "--checkpoint-dir", str(checkpoint), *more]


def _batches(lake: Lake) -> int:
    """The change log's version (-1: none yet)."""
    try:
        return deltalake.DeltaTable(lake.changes, storage_options=lake.delta_options()).version()
    except deltalake.exceptions.TableNotFoundError:
        return -1


def _wait_batches(lake: Lake, n: int, proc: subprocess.Popen[bytes], timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while _batches(lake) < n:
        if proc.poll() is not None:
            pytest.fail(f"sluice run ended before {n} batches: {proc.communicate()[1].decode()[-3000:]}")
        assert time.monotonic() < deadline, f"fewer than {n} change-log commits in {timeout} s"
        time.sleep(0.5)


def _wait_mirror(lake: Lake, db: str, proc: subprocess.Popen[bytes], timeout: float = 240) -> None:
    """Until the snapshot made the mirror of ``db.t``: the stream goes on from the snapshot's start,
    so every change made from now on is streamed."""
    deadline = time.monotonic() + timeout
    while (db, "t") not in lake.mirrors():
        if proc.poll() is not None:
            pytest.fail(f"sluice run ended before its snapshot: {proc.communicate()[1].decode()[-3000:]}")
        assert time.monotonic() < deadline, f"no mirror of {db}.t in {timeout} s"
        time.sleep(0.5)


def _setup(server: Any, db: str) -> None:
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
        conn.execute(f"INSERT INTO {db}.t VALUES " + ", ".join(f"({i}, {i})" for i in range(50)))


def _last_run_exact(server: Any, db: str, uri: str, lake: Lake, env: dict[str, str], checkpoint: Path,
                    tally: collections.Counter[str]) -> None:
    """A last run (``--trigger once``, with ``checkpoint``) catches up; then every change is in the
    change log once, and the mirror equals ``SELECT``."""
    final = subprocess.run(_run_args(server, db, uri, checkpoint, "--trigger", "once"),
                           capture_output=True, timeout=600, env=env)
    assert final.returncode == 0, final.stderr.decode()[-3000:]
    log = deltalake.DeltaTable(lake.changes, storage_options=lake.delta_options()).to_pyarrow_table().to_pylist()
    changes = [r for r in log if r["op"] not in ("ddl", "read")]
    keys = [(r["file"], r["pos"], r["row"]) for r in changes]
    assert len(keys) == len(set(keys)), "a change is in the change log twice"
    assert collections.Counter(r["op"] for r in changes if r["table"] == "t") == tally
    verdicts = verify_lake(parse_dsn(server.dsn("root")), lake, tables=lambda d, _t: d == db)
    assert [v.table for v in verdicts] == ["t"] and verdicts[0].ok, verdicts
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"DROP DATABASE {db}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        assert proc.wait(180) == 0, proc.communicate()[1].decode()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.mysql
@pytest.mark.parametrize("where", WHERE)
def test_a_second_run_on_a_live_lake_stops_at_once_naming_the_first(request, mysql_server, where, tmp_path):
    """On MariaDB the paused writer's test makes this check in its own run, before the pause."""
    server = mysql_server
    db = f"ow_{uuid.uuid4().hex[:8]}"
    uri, lake, env = _lake(request, where, db, tmp_path)
    _setup(server, db)
    first = subprocess.Popen(_run_args(server, db, uri, tmp_path / "one", "--trigger", "1s"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _wait_mirror(lake, db, first)
    workload = Workload(server, db)
    try:
        _wait_batches(lake, 2, first)
        _second_run_stops_at_once(server, db, uri, lake, env, first, tmp_path / "two")
    finally:
        workload.stop()
    _stop(first)
    _last_run_exact(server, db, uri, lake, env, tmp_path / "one", workload.tally)


@pytest.mark.mariadb
@pytest.mark.parametrize("where", WHERE)
def test_a_writer_paused_past_its_lease_never_commits_after_another_took_over(request, mariadb_server, where,
                                                                              tmp_path):
    """Before the pause, a second run with a checkpoint of its own stops at once naming the writer
    (the second-run test's check, made here on MariaDB)."""
    server = mariadb_server
    db = f"ow_{uuid.uuid4().hex[:8]}"
    uri, lake, env = _lake(request, where, db, tmp_path)
    _setup(server, db)
    lease = ("--writer-lease", "6")
    paused = subprocess.Popen(_run_args(server, db, uri, tmp_path / "one", "--trigger", "1s", *lease),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _wait_mirror(lake, db, paused)
    workload = Workload(server, db)
    taker = None
    try:
        _wait_batches(lake, 3, paused)
        _second_run_stops_at_once(server, db, uri, lake, env, paused, tmp_path / "two")
        paused.send_signal(signal.SIGSTOP)
        time.sleep(8)  # past its lease: it renewed at most 2 s before the pause
        taker = subprocess.Popen(_run_args(server, db, uri, tmp_path / "three", "--trigger", "1s", *lease),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        _wait_batches(lake, _batches(lake) + 3, taker)
        paused.send_signal(signal.SIGCONT)
        try:
            assert paused.wait(180) == 1
        finally:
            if paused.poll() is None:
                paused.kill()
        text = paused.communicate()[1].decode()
        (line,) = [t for t in text.splitlines() if t.startswith("sluice: error:")]
        assert "another sluice" in line or "another writer" in line, line
        _wait_batches(lake, _batches(lake) + 2, taker)  # the new writer goes on, undisturbed
    except BaseException:
        for proc in (paused, taker):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
        raise
    finally:
        workload.stop()
    _stop(taker)
    _last_run_exact(server, db, uri, lake, env, tmp_path / "three", workload.tally)


def _second_run_stops_at_once(server: Any, db: str, uri: str, lake: Lake, env: dict[str, str],
                              first: subprocess.Popen[bytes], checkpoint: Path) -> None:
    """A second ``sluice run`` with a checkpoint of its own (``checkpoint``) stops at once with one
    line naming ``first``, before it starts Spark; ``first`` goes on, undisturbed."""
    before = _batches(lake)
    second = subprocess.run(_run_args(server, db, uri, checkpoint, "--trigger", "1s"),
                            capture_output=True, timeout=120, env=env)
    text = second.stderr.decode()
    assert second.returncode == 1, text[-3000:]
    (line,) = [t for t in text.splitlines() if t.startswith("sluice: error:")]
    assert "is written by another sluice" in line, line
    assert f"host {socket.gethostname()}, pid {first.pid}, writing since " in line, line
    assert "Spark" not in text, "the second run started Spark before it stopped"
    _wait_batches(lake, before + 2, first)  # the first goes on, undisturbed
