"""`sluice run` on a Spark standalone cluster: a master and two workers as processes of their own,
the lake on an S3 API server they write to directly (its options given in the config's
[lake.storage], which the workers' environment lacks), a worker and then the driver killed with
SIGKILL mid-run. A lake on a path is what every ``local[*]`` suite writes, executors included; on a
cluster the object store is the case of its own (options reaching the executors), so it is the one
run here: a cluster run costs minutes of a CI run.

The cluster is ``sluice.sandbox.spark_cluster``'s: the standalone ``Master`` and ``Worker`` of the
pyspark package. The snapshot runs on it first. Then, while a writer keeps changing the
source, `sluice run --master spark://… --trigger 1s` runs its batches on the workers' executors; one
worker is killed together with its executor (its whole process group, as when a machine dies), the
run must go on with the other, a new worker joins, and then the driver is killed the same way. A
last `--trigger once` catches up. The mirror must equal the source and the change log must hold
every change exactly once.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import deltalake
import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.layout import Lake, open_lake
from sluice.sandbox.process import HOST
from sluice.sandbox.spark_cluster import SparkCluster
from sluice.spark.verify.check import verify_lake

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    c = SparkCluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        c.add_worker()
        c.add_worker()
        c.wait_workers(2)
        yield c
    finally:
        c.stop()


def _commits(lake: Lake) -> int:
    """Versions of the change log committed so far (each batch commits one)."""
    return sum(1 for key in lake.keys("_sluice/changes/_delta_log") if key.endswith(".json"))


def _wait_commits(lake: Lake, n: int, proc: subprocess.Popen[bytes], timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while _commits(lake) < n:
        if proc.poll() is not None:
            pytest.fail(f"sluice run exited by itself: {proc.stderr.read().decode()[-3000:]}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            pytest.fail(f"the change log did not reach {n} commits in {timeout:.0f}s")
        time.sleep(0.2)


def test_a_cluster_run_on_s3_survives_kill_9_of_a_worker_and_of_the_driver(cluster, mysql_server, s3_server,
                                                                          tmp_path):
    server = mysql_server
    db = f"cl_{uuid.uuid4().hex[:8]}"
    options = s3_server.storage_options()
    lake = open_lake(f"s3://{s3_server.bucket}/{db}", options)
    storage = "".join(f'{k} = "{v}"\n' for k, v in options.items())
    config = f'[lake]\nuri = "{lake.uri}"\n[lake.storage]\n{storage}'
    (tmp_path / "pipeline.toml").write_text(config)
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.acc (id INT PRIMARY KEY, v INT, s VARCHAR(20))")
        conn.execute(f"INSERT INTO {db}.acc VALUES " + ", ".join(f"({i}, {i}, 'seed{i}')" for i in range(-500, 0)))
    done = threading.Event()
    failure: list[BaseException] = []
    tally: collections.Counter[str] = collections.Counter()

    def writer() -> None:
        try:
            with Connection.open(parse_dsn(server.dsn("root"))) as conn:
                n = 0
                while not done.is_set():
                    tally["insert"] += conn.execute(
                        f"INSERT INTO {db}.acc VALUES ({n}, {n}, 'a{n}'), ({n + 1}, {n}, 'b{n}')").affected_rows
                    tally["update"] += conn.execute(f"UPDATE {db}.acc SET v = v + 1 WHERE id = {n // 2}").affected_rows
                    if n >= 10:
                        tally["delete"] += conn.execute(f"DELETE FROM {db}.acc WHERE id = {n - 10}").affected_rows
                    n += 2
                    time.sleep(0.02)
        except BaseException as exc:
            failure.append(exc)

    args = [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("root"),
            "--config", str(tmp_path / "pipeline.toml"), "--checkpoint-dir", str(tmp_path / "checkpoint"),
            "--tables", rf"{db}\..*", "--master", cluster.url, "--max-rows-per-batch", "200"]
    env = {**os.environ, "SPARK_LOCAL_IP": HOST}
    first = subprocess.run([*args, "--snapshot", "only"], capture_output=True, timeout=600, env=env)
    assert first.returncode == 0, first.stderr.decode()[-3000:]
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        proc = subprocess.Popen([*args, "--trigger", "1s"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=env, start_new_session=True)
        try:
            _wait_commits(lake, _commits(lake) + 3, proc)
            cluster.kill_worker()  # with its executor, while batches run
            _wait_commits(lake, _commits(lake) + 3, proc)  # the run goes on with the other worker
            cluster.add_worker()
            cluster.wait_workers(2)
            _wait_commits(lake, _commits(lake) + 2, proc)
            time.sleep(0.5)  # into the next batch
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)  # the driver and its JVM, as when its machine dies
            proc.wait()
            proc.stderr.close()  # type: ignore[union-attr]
        time.sleep(2)
    finally:
        done.set()
        thread.join(60)
    assert not failure, failure
    assert tally["delete"] > 0
    final = subprocess.run([*args, "--trigger", "once"], capture_output=True, timeout=600, env=env)
    assert final.returncode == 0, final.stderr.decode()[-3000:]

    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        verdicts = verify_lake(parse_dsn(server.dsn("root")), lake, tables=lambda d, _t: d == db)
        conn.execute(f"DROP DATABASE {db}")
    assert [v.table for v in verdicts] == ["acc"]
    assert all(v.ok for v in verdicts), verdicts
    log = deltalake.DeltaTable(lake.join("_sluice/changes"), storage_options=lake.delta_options()
                               ).to_pyarrow_table().to_pylist()
    rows = [r for r in log if r["op"] in ("insert", "update", "delete")]
    keys = [(r["file"], r["pos"], r["row"]) for r in rows]
    assert len(keys) == len(set(keys)), "a change is in the change log twice"
    assert collections.Counter(r["op"] for r in rows) == +tally
