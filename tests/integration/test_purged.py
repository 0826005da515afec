"""Binlogs purged while the pipeline was down: the typed error, then the remedy, exactly once.

A lake streams from a server of its own; ``sluice run`` stops, more is written (rows and a DDL),
and the binlogs are purged past the stream's position (FLUSH BINARY LOGS, PURGE BINARY LOGS TO the
newest: MySQL's ``gtid_purged`` grows, MariaDB's oldest binlog starts with a GTID_LIST past it);
that server and lake are made once a flavor, and each test works on a copy of the lake.
``sluice run`` then stops with ``BinlogPurgedError`` in one line, naming the first missing file and
the missing GTIDs and the remedy, exit status 1, and the lake as it was; so do the Spark source and
``sluice tail`` told to start there. A ``sluice snapshot`` of
some captured tables is refused, naming the others; one of every captured table lets the next
``sluice run`` go on from that snapshot: every change after its start in the change log once, every
mirror equal to SELECT, ``sluice verify`` content. ``--snapshot when-needed`` does it in one run, and a
kill -9 in the middle of the snapshot it takes leaves the next run to resume that snapshot and go on
exactly once. Each on MariaDB 10.11, MySQL and MariaDB 11.8 (whose binlogs have a GTID index); and
the error and the remedy with the lake on S3 (``s3_server``), where every file of the lake is an
object.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import deltalake
import pytest

from sluice.binlog.gtid import Gtid, MariadbGtid, MariadbGtidPosition, MysqlGtidSet
from sluice.binlog.position import Checkpoint, parse_gtids, position_key
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.purged import missing_mariadb, oldest_gtid_list
from sluice.io.replication import server_binlog_files, server_binlog_status
from sluice.lake.layout import open_lake
from sluice.spark.pipeline.stream_resume import spark_offset
from tests.conftest import THREE_FLAVORS
from tests.integration.exactly_once import exactly_once

pytestmark = [pytest.mark.spark, pytest.mark.slow]

NOISE = ("Traceback", "PYTHON_STREAMING_DATA_SOURCE", "SourceFailure", "py4j", "Py4J")


def _sluice(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sluice.cli", *args], capture_output=True, text=True, timeout=900,
                          env=env)


def _run(server, lake: Path | str, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _sluice("run", "--source", server.dsn("repl"), "--lake", str(lake), "--tables", r"p\..*",
                   "--trigger", "once", *extra, env=env)


def _error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stderr[-4000:]
    for noise in NOISE:
        assert noise not in done.stderr, f"{noise!r} reached the user:\n{done.stderr[-4000:]}"
    return [line for line in done.stderr.splitlines() if line.strip()][-1]


def _write(server, first: int) -> None:
    """Rows into p.t and p.u from ``first`` on, some updated and deleted."""
    ids = range(first, first + 30)
    server.sql(";".join(f"INSERT INTO p.t (id, v) VALUES ({i}, {i})" for i in ids) + ";"
               + ";".join(f"INSERT INTO p.u (id, w) VALUES ({i}, 'w{i}')" for i in ids))
    server.sql(f"UPDATE p.t SET v = v * 10 WHERE id % 3 = 0; DELETE FROM p.u WHERE id % 4 = 0 AND id >= {first}")


def _files(server) -> list[str]:
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        return [name for name, _ in server_binlog_files(conn)]


def _purge(server) -> None:
    """FLUSH BINARY LOGS, then PURGE BINARY LOGS TO the newest, until it is the only one (MariaDB
    keeps a file until its binlog checkpoint is written and no dump thread reads it)."""
    deadline = time.monotonic() + 60
    while True:
        server.sql("FLUSH BINARY LOGS")
        with Connection.open(parse_dsn(server.dsn("root"))) as conn:
            newest = server_binlog_status(conn).file
        server.sql(f"PURGE BINARY LOGS TO '{newest}'")
        if _files(server) == [newest]:
            return
        assert time.monotonic() < deadline, f"the server kept {_files(server)}"
        time.sleep(0.3)


def _lake_versions(lake: Path) -> dict[str, int]:
    tables = [lake / "p" / "t", lake / "p" / "u", lake / "_sluice" / "changes"]
    return {str(t): deltalake.DeltaTable(str(t)).version() for t in tables}


def _purged_lake(flavor, sandbox_factory, tmp_path):
    """A server, a lake that streamed from it, and its binlogs purged past the stream's position
    while more was written; (server, lake, the stream's position)."""
    # FULL: the binlog names its columns, so sluice tail (the check's reference) reads across the DDLs
    server = sandbox_factory(flavor, settings={"binlog-row-metadata": "FULL"})
    begin = _files(server)[0]
    server.sql("CREATE DATABASE p; CREATE TABLE p.t (id INT PRIMARY KEY, v INT);"
               "CREATE TABLE p.u (id INT PRIMARY KEY, w VARCHAR(20))")
    _write(server, 1)
    lake = tmp_path / "lake"
    first = _run(server, lake, "--snapshot", "never", "--from", f"{begin}:4")  # the change log from the start
    assert first.returncode == 0, first.stderr[-4000:]
    at = spark_offset(lake / "_sluice" / "checkpoint")
    assert at is not None and at.gtid_set
    purged_before = _gtid_purged(server)
    _write(server, 100)
    server.sql("ALTER TABLE p.u ADD COLUMN x INT NOT NULL DEFAULT 7")  # a DDL the stream never sees
    _write(server, 200)
    _purge(server)
    assert at.file not in _files(server)
    if flavor == "mysql":  # the purged transactions are in gtid_purged now
        grown = MysqlGtidSet.parse(_gtid_purged(server))
        assert MysqlGtidSet.parse(purged_before).issubset(grown) and grown != MysqlGtidSet.parse(purged_before)
    return server, lake, at


def _gtid_purged(server) -> str:
    if server.is_mariadb:
        return ""
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        return str(conn.query("SELECT @@GLOBAL.gtid_purged").rows[0][0] or "").replace("\n", "")


def _missing(server, held: str) -> str:
    """The transactions after ``held`` the server's binlog no longer has, as the server says."""
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        if server.is_mariadb:
            before = oldest_gtid_list(conn, server_binlog_files(conn)[0][0])
            assert before is not None
            # the oldest binlog's GTID_LIST: every transaction written so far is before it
            status = str(conn.query("SELECT @@GLOBAL.gtid_binlog_pos").rows[0][0])
            assert MariadbGtidPosition.parse(status).issubset(before)
            return missing_mariadb(MariadbGtidPosition.parse(held), before)
        return str(conn.query(f"SELECT GTID_SUBTRACT(@@GLOBAL.gtid_purged, '{held}')").rows[0][0]).replace("\n", "")


def _snapshot_start(lake: Path) -> str:
    """The snapshot's start as FILE:POS, after checking its GTID set is exactly the one there: every
    change the change log holds before it is in the set, none after it."""
    start = Checkpoint.from_json(json.loads((lake / "_sluice" / "snapshot.json").read_text())["start"])
    assert start.gtid_set
    held = parse_gtids(start.gtid_set)
    log = deltalake.DeltaTable(str(lake / "_sluice" / "changes")).to_pyarrow_table(
        columns=["file", "pos", "gtid", "op"]).to_pylist()
    for row in log:
        if row["gtid"] and row["op"] != "read":
            gtid = row["gtid"]
            taken = (Gtid.parse(gtid) in held) if isinstance(held, MysqlGtidSet) else (MariadbGtid.parse(gtid) in held)
            assert taken == (position_key(row["file"], row["pos"]) < start.key), (row, start)
    return f"{start.file}:{start.pos}"


def _history_has_checkpoints(lake: Path) -> None:
    """Every position of the schema history is in the Checkpoint form: a DDL's the boundary its
    transaction starts at, GTIDs and server included; a bootstrap its start, with the executed GTIDs
    there (the Spark source's first, at the FILE:POS given, too); the bootstrap at the new snapshot's
    start is that start, GTIDs included."""
    entries = [json.loads(line) for line in (lake / "_sluice" / "schema-history.jsonl").read_text().splitlines()[1:]]
    for entry in entries:
        at = Checkpoint.from_json(entry["at"])
        assert at.gtid_set is not None, entry
        assert (at.file, at.pos) == (entry["file"], entry["pos"]) if entry["kind"] == "bootstrap" else (
            at.source is not None and at.key <= position_key(entry["file"], entry["pos"])), entry
    start = json.loads((lake / "_sluice" / "snapshot.json").read_text())["start"]
    after = [Checkpoint.from_json(e["at"]) for e in entries
             if e["kind"] == "change" and position_key(e["file"], e["pos"]) > Checkpoint.from_json(start).key]
    assert after and all(at.gtid_set for at in after), after  # the ALTER streamed after the snapshot
    assert [e["at"] for e in entries if e["kind"] == "bootstrap"][-1] == start


@pytest.fixture(scope="module", params=THREE_FLAVORS)
def purged(request, module_sandbox_factory, tmp_path_factory):
    """``_purged_lake`` once a flavor, and the transactions after the stream's position that the
    server no longer has, as it says right after the purge. Each test works on a copy of the lake
    (``_copy``); what a test writes to the server comes after the purge, so for the other the
    position is still purged and the same transactions missing."""
    server, lake, at = _purged_lake(request.param, module_sandbox_factory, tmp_path_factory.mktemp(request.param))
    return server, lake, at, _missing(server, at.gtid_set or "")


def _copy(lake: Path, tmp_path: Path) -> Path:
    """A copy of the purged lake for one test (its Spark checkpoint, inside it, too)."""
    return Path(shutil.copytree(lake, tmp_path / "lake"))


def test_a_purged_position_stops_the_run_and_a_snapshot_of_every_table_goes_on_exactly_once(purged, tmp_path):
    server, made, at, missing = purged
    lake = _copy(made, tmp_path)
    versions = _lake_versions(lake)
    line = _error_line(_run(server, lake))
    assert line.startswith(f"sluice: error: the stream's start {at.file}:{at.pos} is no longer on the server"), line
    assert missing and f"with the transactions {missing}" in line, line
    assert f"sluice snapshot --source {parse_dsn(server.dsn('repl')).redacted()} --lake {lake}" in line, line
    assert "--snapshot when-needed" in line, line
    assert _lake_versions(lake) == versions  # nothing written
    # The same start met by the Spark source itself (a new lake told to start there), and by sluice tail
    for done in (_run(server, tmp_path / "new", "--snapshot", "never", "--from", f"{at.file}:{at.pos}"),
                 _sluice("tail", server.dsn("repl"), "--from", f"{at.file}:{at.pos}", "--until-end")):
        line = _error_line(done)
        assert line.startswith(f"sluice: error: the stream's start {at.file}:{at.pos} is no longer on the server")
        assert "sluice snapshot" in line and "a position the server still has" in line, line

    some = _sluice("snapshot", "--source", server.dsn("repl"), "--lake", str(lake), "--tables", r"p\.t")
    line = _error_line(some)
    assert "leaves out p.u" in line and "nothing was read" in line, line
    assert _lake_versions(lake) == versions

    every = _sluice("snapshot", "--source", server.dsn("repl"), "--lake", str(lake), "--tables", r"p\..*")
    assert every.returncode == 0, every.stderr[-4000:]
    start = _snapshot_start(lake)
    _write(server, 300)  # after the snapshot: the stream goes on from its start
    server.sql("ALTER TABLE p.t ADD COLUMN z INT NOT NULL DEFAULT 3; INSERT INTO p.t VALUES (399, 1, 4)")
    server.sql("UPDATE p.u SET x = id WHERE id < 150")
    again = _run(server, lake)
    assert again.returncode == 0, again.stderr[-4000:]
    assert "the stream goes on from the snapshot's start" in again.stderr, again.stderr[-4000:]
    assert _snapshot_start(lake) == start  # its GTID set against the changes after it too
    _history_has_checkpoints(lake)
    assert exactly_once(server, lake, "p", start, older_kept=True) > 0
    verify = _sluice("verify", "--source", server.dsn("repl"), "--lake", str(lake))
    assert verify.returncode == 0, verify.stdout + verify.stderr[-4000:]
    _write(server, 400)  # and from its own position after that
    assert _run(server, lake).returncode == 0
    assert exactly_once(server, lake, "p", start, older_kept=True) > 0


def test_snapshot_when_needed_snapshots_again_and_goes_on_in_one_run(purged, tmp_path):
    server, made, at, _ = purged
    lake = _copy(made, tmp_path)
    done = _run(server, lake, "--snapshot", "when-needed")
    assert done.returncode == 0, done.stderr[-4000:]
    said = [line for line in done.stderr.splitlines() if "--snapshot when-needed" in line]
    assert len(said) == 1 and f"{at.file}:{at.pos} is no longer on the server" in said[0], done.stderr[-4000:]
    assert "snapshotting every captured table again" in said[0]
    start = _snapshot_start(lake)
    exactly_once(server, lake, "p", start, older_kept=True)
    _write(server, 500)
    assert _run(server, lake, "--snapshot", "when-needed").returncode == 0
    assert exactly_once(server, lake, "p", start, older_kept=True) > 0


def _chunks(lake: Path) -> tuple[dict[str, object] | None, int, bool]:
    """The snapshot's start, its chunks done and whether it is complete, as its state says now."""
    try:
        state = json.loads((lake / "_sluice" / "snapshot.json").read_text())
    except (OSError, ValueError):
        return None, 0, False
    return state.get("start"), sum(len(t.get("done", {})) for t in state["tables"].values()), bool(state["complete"])


def test_a_kill_in_the_middle_of_the_when_needed_snapshot_resumes_it_exactly_once(purged, tmp_path):
    server, made, _, _ = purged
    lake = _copy(made, tmp_path)
    for first in range(1000, 4000, 1000):  # p.t in some 30 chunks of 100 rows, read one at a time
        server.sql("INSERT INTO p.t (id, v) VALUES " + ",".join(f"({i}, {i})" for i in range(first, first + 1000)))
    server.sql("ANALYZE NO_WRITE_TO_BINLOG TABLE p.t")  # the chunks follow the row estimate: a fresh one
    proc = subprocess.Popen(
        [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("repl"), "--lake", str(lake),
         "--tables", r"p\..*", "--trigger", "once", "--snapshot", "when-needed", "--chunk-rows", "100",
         "--snapshot-connections", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while (taken := _chunks(lake))[0] is None or taken[1] < 3:
            assert proc.poll() is None, proc.communicate()[1][-4000:]
            assert time.monotonic() < deadline, "the snapshot did not get going"
            time.sleep(0.1)
        proc.kill()  # its Spark JVM runs in a session of its own and dies with it
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    begun, _, complete = _chunks(lake)
    assert not complete and begun == taken[0], "killed after the snapshot had ended"
    assert "snapshotting every captured table again" in stderr, stderr[-4000:]
    _write(server, 5000)  # while it was down
    again = _run(server, lake, "--snapshot", "when-needed", "--chunk-rows", "100")
    assert again.returncode == 0, again.stderr[-4000:]
    assert "snapshotting every captured table again" not in again.stderr  # the snapshot under way goes on
    assert "the stream goes on from the snapshot's start" in again.stderr, again.stderr[-4000:]
    assert _chunks(lake)[0] == begun and _chunks(lake)[2]
    start = _snapshot_start(lake)
    assert exactly_once(server, lake, "p", start, older_kept=True) > 0


@pytest.mark.mysql
def test_the_purge_remedy_with_the_lake_on_s3(sandbox_factory, s3_server):
    server = sandbox_factory("mysql", settings={"binlog-row-metadata": "FULL"})
    begin = _files(server)[0]
    server.sql("CREATE DATABASE p; CREATE TABLE p.t (id INT PRIMARY KEY, v INT);"
               "CREATE TABLE p.u (id INT PRIMARY KEY, w VARCHAR(20))")
    _write(server, 1)
    lake, options = f"s3://{s3_server.bucket}/purged-{uuid.uuid4().hex[:8]}", s3_server.storage_options()
    env = {**os.environ, **s3_server.env()}
    first = _run(server, lake, "--snapshot", "never", "--from", f"{begin}:4", env=env)
    assert first.returncode == 0, first.stderr[-4000:]
    changes = f"{lake}/_sluice/changes"
    version = deltalake.DeltaTable(changes, storage_options=options).version()
    _write(server, 100)
    _purge(server)
    line = _error_line(_run(server, lake, env=env))
    assert line.startswith("sluice: error: the stream's start ") and "is no longer on the server" in line, line
    assert f"--lake {lake}" in line and "--snapshot when-needed" in line, line
    assert deltalake.DeltaTable(changes, storage_options=options).version() == version  # nothing written
    done = _run(server, lake, "--snapshot", "when-needed", env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "snapshotting every captured table again" in done.stderr, done.stderr[-4000:]
    _write(server, 200)
    assert _run(server, lake, "--snapshot", "when-needed", env=env).returncode == 0
    verify = _sluice("verify", "--source", server.dsn("repl"), "--lake", lake, env=env)
    assert verify.returncode == 0, verify.stdout + verify.stderr[-4000:]
    store = open_lake(lake, options)
    start = Checkpoint.from_json(store.get_json(store.SNAPSHOT_STATE)["start"])
    tail = _sluice("tail", server.dsn("repl"), "--from", f"{start.file}:{start.pos}", "--until-end",
                   "--tables", r"p\..*")
    assert tail.returncode == 0, tail.stderr[-4000:]
    expected = sorted((c["file"], c["pos"], c["row"]) for c in map(json.loads, tail.stdout.splitlines()))
    log = deltalake.DeltaTable(changes, storage_options=options).to_pyarrow_table(
        columns=["file", "pos", "row", "op"]).to_pylist()
    taken = sorted((r["file"], r["pos"], r["row"]) for r in log
                   if r["op"] not in ("ddl", "read") and position_key(r["file"], r["pos"]) >= start.key)
    assert taken == expected and len(expected) > 0  # every change after the snapshot's start once
