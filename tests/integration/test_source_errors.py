"""Errors from inside the ``binlog`` source reach the user as sluice's own one-line error.

``sluice run`` is started as a user starts it. The source's planning (latestOffset) and its tasks
run in Spark's Python workers; what fails there must end the run with sluice's typed message and
exit status 1, never with Spark's message wrapping a Python traceback. A connection lost while
planning is made again with backoff, as a task's is.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.integration.exactly_once import exactly_once
from tests.tcp_proxy import TcpProxy, binlog_dump, query

pytestmark = pytest.mark.spark

NOISE = ("Traceback", "PYTHON_STREAMING_DATA_SOURCE", "SourceFailure", "py4j", "Py4J")


@pytest.fixture(params=["mysql", "mariadb"])
def server(request):
    return request.getfixturevalue(f"{request.param}_server")


def _run(server, lake: Path, db: str, user: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn(user) if user in ("root", "repl")
            else f"{server.dsn('root').split('://')[0]}://{user}:pw-{user}@{server.host}:{server.port}/",
            "--lake", str(lake), "--tables", rf"{db}\..*", *extra]


def _error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "sluice run printed nothing"
    for noise in NOISE:
        assert noise not in stderr, f"{noise!r} reached the user:\n{stderr[-4000:]}"
    return lines[-1]


def _drop_user_once_in_mirror(server, lake: Path, db: str, user: str, args: tuple[str, ...], *,
                              then: str = "", poll: float = 0.5) -> tuple[int, str]:
    """Run sluice as ``user``, drop the user once the mirror of ``db.t`` holds rows (version 0 is the
    mirror created empty when the snapshot plans it; 1 its first rows) and run ``then``; the run's
    exit status and standard error. ``db`` is dropped at the end."""
    proc = subprocess.Popen(_run(server, lake, db, user, *args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not (lake / db / "t" / "_delta_log" / f"{1:020d}.json").exists() and proc.poll() is None:
            assert time.monotonic() < deadline, "no rows reached the mirror"
            time.sleep(poll)
        server.sql(f"DROP USER '{user}'@'%'" + (f"; {then}" if then else ""))
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        server.sql(f"DROP DATABASE {db}")
    return proc.returncode, stderr


@pytest.mark.mysql
@pytest.mark.mariadb
def test_a_server_error_while_planning_is_the_typed_one_line_error(server, tmp_path):
    """The source's user loses its account while ``sluice run`` follows: the next planning's
    connection is refused (an error no reconnect mends) and the run ends with the server's error,
    typed, in one line, and exit status 1."""
    db, user = f"se_{uuid.uuid4().hex[:8]}", f"u{uuid.uuid4().hex[:8]}"
    server.sql(f"CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT);"
               f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw-{user}';"
               f"GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO '{user}'@'%';"
               f"INSERT INTO {db}.t VALUES (1, 1)")
    lake = tmp_path / "lake"
    returncode, stderr = _drop_user_once_in_mirror(server, lake, db, user, ("--trigger", "1s"),
                                                   then=f"INSERT INTO {db}.t VALUES (2, 2)")
    assert returncode == 1, stderr[-4000:]
    line = _error_line(stderr)
    assert line.startswith("sluice: error: server error 1045 (28000): Access denied for user"), stderr[-4000:]
    assert "REPLICATION SLAVE" in line  # the remedy


@pytest.mark.mysql
@pytest.mark.mariadb
def test_a_start_the_server_does_not_have_is_the_typed_one_line_error(server, tmp_path):
    """A start position in a binlog file the server does not have: the server refuses the dump the
    planner asks for, and the run ends with ``BinlogUnavailableError``'s line and its remedy."""
    db = f"se_{uuid.uuid4().hex[:8]}"
    server.sql(f"CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
    try:
        done = subprocess.run(_run(server, tmp_path / "lake", db, "repl", "--trigger", "once", "--from",
                                   "binlog.999999:4"), capture_output=True, text=True, timeout=600)
    finally:
        server.sql(f"DROP DATABASE {db}")
    assert done.returncode == 1, done.stderr[-4000:]
    line = _error_line(done.stderr)
    assert line.startswith("sluice: error: ") and ("binlog.999999" in line or "1236" in line), done.stderr[-4000:]
    assert "SHOW BINARY LOGS" in line or "snapshot" in line, line


@pytest.mark.mysql
@pytest.mark.mariadb
def test_a_connection_lost_while_planning_is_made_again(server, tmp_path):
    """The planner's first replication connections and its first schema query each lose their
    connection (closed under them, through a proxy): planning connects again with backoff and the
    run ends with every change in the lake once."""
    db = f"se_{uuid.uuid4().hex[:8]}"
    first = _first_file(server)
    server.sql(f"CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
    server.sql(";".join(f"INSERT INTO {db}.t VALUES ({i}, {i})" for i in range(1, 201)))
    server.sql(f"UPDATE {db}.t SET v = v + 1 WHERE id % 3 = 0; DELETE FROM {db}.t WHERE id % 7 = 0")
    lake = tmp_path / "lake"
    with TcpProxy(server.host, server.port) as proxy:
        proxy.trap(binlog_dump, times=2, reset=True)  # the planner reads first: latestOffset
        proxy.trap(query("status"), times=2, reset=True)  # where the binlog ends: SHOW BINARY LOG STATUS
        args = [sys.executable, "-m", "sluice.cli", "run", "--source", proxy.dsn(server.dsn("repl")),
                "--lake", str(lake), "--tables", rf"{db}\..*", "--trigger", "once", "--snapshot", "never",
                "--from", f"{first}:4"]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-4000:]
            assert proxy.trapped == 4, proxy.trapped
            exactly_once(server, lake, db, f"{first}:4")
        finally:
            server.sql(f"DROP DATABASE {db}")


def _first_file(server) -> str:
    return server.sql("SHOW BINARY LOGS").splitlines()[0].split("\t")[0]


def _mount_small_volume(where: Path, mib: int) -> None:
    """A tmpfs of ``mib`` MiB at ``where``, or a skip saying why this machine cannot make one."""
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full volume needs a small file system of its own: mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (a container without CAP_SYS_ADMIN?): {done.stderr.strip()}")


def _fill(volume: Path) -> Path:
    """Fill ``volume`` to its last byte with one file; that file."""
    filler = volume / "filler"
    with open(filler, "wb") as out:
        try:
            while True:
                out.write(b"\0" * (1 << 16))
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


@pytest.mark.mariadb
def test_a_full_disk_under_the_lake_says_so_and_the_next_run_is_exact(mariadb_server, tmp_path):
    """The lake on a small volume that fills: ``sluice run`` ends with one line saying the disk is
    full, which path, that nothing was lost and that the next run goes on; once there is space
    again the next run leaves every change once and every mirror equal to its table."""
    server = mariadb_server
    volume = tmp_path / "volume"
    _mount_small_volume(volume, 48)
    db = f"se_{uuid.uuid4().hex[:8]}"
    server.sql(f"CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(200))")
    start = server.sql("SHOW MASTER STATUS").split("\t")[:2]
    lake = volume / "lake"
    args = [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("repl"), "--lake", str(lake),
            "--tables", rf"{db}\..*", "--trigger", "once", "--snapshot", "never", "--from", ":".join(start)]
    try:
        server.sql(";".join(f"INSERT INTO {db}.t VALUES ({i}, REPEAT('a', 150))" for i in range(1, 101)))
        first = subprocess.run(args, capture_output=True, text=True, timeout=600)
        assert first.returncode == 0, first.stderr[-4000:]
        filler = _fill(volume)
        for low in range(1000, 21000, 2000):
            server.sql(f"INSERT INTO t SELECT seq, REPEAT(MD5(seq), 6) FROM seq_{low}_to_{low + 1999}", database=db)
        full = subprocess.run(args, capture_output=True, text=True, timeout=600)
        assert full.returncode == 1, full.stderr[-4000:]
        line = _error_line(full.stderr)
        assert line.startswith("sluice: error: the lake's disk is full"), full.stderr[-4000:]
        assert str(lake) in line and "nothing was lost" in line and "next run goes on exactly" in line, line
        filler.unlink()
        again = subprocess.run(args, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr[-4000:]
        assert exactly_once(server, lake, db, ":".join(start)) == 100 + 20000
    finally:
        server.sql(f"DROP DATABASE {db}")
        subprocess.run(["umount", "-l", str(volume)], capture_output=True)


@pytest.mark.mariadb
def test_a_server_error_in_a_snapshot_chunk_is_the_typed_line_with_no_traceback(mariadb_server, tmp_path):
    """The source's user loses its account while the snapshot's chunks are read on Spark: the next
    chunk's task cannot connect, and the run ends with the server's error in one line, exit status
    1, and no traceback of the task on standard error (Spark's executor log included)."""
    server = mariadb_server
    db, user = f"se_{uuid.uuid4().hex[:8]}", f"u{uuid.uuid4().hex[:8]}"
    server.sql(f"CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
    server.sql("INSERT INTO t SELECT seq, seq FROM seq_1_to_60000", database=db)
    server.sql(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw-{user}';"
               f"GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO '{user}'@'%'")
    lake = tmp_path / "lake"
    returncode, stderr = _drop_user_once_in_mirror(mariadb_server, lake, db, user,
                                                   ("--trigger", "once", "--chunk-rows", "1000"), poll=0.05)
    assert returncode == 1, stderr[-4000:]
    chunks = sorted((lake / db / "t" / "_delta_log").glob("*.json"))
    assert len(chunks) - 1 < 60, "the snapshot ended before the user was dropped"
    line = _error_line(stderr)
    assert line.startswith("sluice: error: ") and "Access denied for user" in line, stderr[-4000:]
