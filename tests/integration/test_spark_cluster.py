"""`sluice run` on a Spark standalone cluster: a master and two workers as processes of their own,
the lake on an S3 API server they write to directly (its options given in the config's
[lake.storage], which the workers' environment lacks), a worker and then the driver killed with
SIGKILL mid-run. A lake on a path is what every ``local[*]`` suite writes, executors included; on a
cluster the object store is the case of its own (options reaching the executors), so it is the one
run here: a cluster run costs minutes of a CI run.

The cluster is started from the pyspark package itself (``bin/spark-class`` runs the standalone
``Master`` and ``Worker``). The snapshot runs on it first. Then, while a writer keeps changing the
source, `sluice run --master spark://… --trigger 1s` runs its batches on the workers' executors; one
worker is killed together with its executor (its whole process group, as when a machine dies), the
run must go on with the other, a new worker joins, and then the driver is killed the same way. A
last `--trigger once` catches up. The mirror must equal the source and the change log must hold
every change exactly once.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import deltalake
import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.sandbox.process import free_port
from sluice.spark.lake.store import LakeStore, lake_store
from sluice.spark.verify.check import verify_lake

pytestmark = [pytest.mark.spark, pytest.mark.slow]

HOST = "127.0.0.1"


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "bin" / "spark-class"


class Cluster:
    """A standalone master and its workers, each in a process group of its own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port, self.ui = free_port(), free_port()
        self.url = f"spark://{HOST}:{self.port}"
        self.env = {**os.environ, "SPARK_LOCAL_IP": HOST, "SPARK_LOG_DIR": str(root),
                    "PYSPARK_PYTHON": sys.executable}
        self.workers: list[subprocess.Popen[bytes]] = []
        self.master = self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", HOST,
                                  "--port", str(self.port), "--webui-port", str(self.ui))

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 - the process owns it
        return subprocess.Popen([str(_spark_class()), *args], stdout=log, stderr=subprocess.STDOUT,
                                env=self.env, cwd=self.root, start_new_session=True)

    def add_worker(self) -> None:
        n = len(self.workers)
        work = self.root / f"work{n}"
        work.mkdir()
        self.workers.append(self._spawn(f"worker{n}", "org.apache.spark.deploy.worker.Worker", self.url,
                                        "--host", HOST, "--cores", "1", "--memory", "1g",
                                        "--webui-port", "0", "--work-dir", str(work)))

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.ui}/json/", timeout=5) as reply:
                state = json.load(reply)
        except OSError:
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def wait_workers(self, n: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.alive_workers() < n:
            if time.monotonic() > deadline:
                logs = "\n".join(p.read_text()[-1500:] for p in sorted(self.root.glob("*.log")))
                pytest.fail(f"the standalone cluster has fewer than {n} live workers after {timeout:.0f}s:\n{logs}")
            time.sleep(1)

    def kill_worker(self) -> None:
        """SIGKILL the oldest live worker and everything it started (its executors and their Python
        workers): the cluster serves the module's tests in turn, each killing one."""
        worker = next(w for w in self.workers if w.poll() is None)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()

    def stop(self) -> None:
        for proc in [*self.workers, self.master]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        c.add_worker()
        c.add_worker()
        c.wait_workers(2)
        yield c
    finally:
        c.stop()


def _commits(lake: LakeStore) -> int:
    """Versions of the change log committed so far (each batch commits one)."""
    return sum(1 for key in lake.keys("_sluice/changes/_delta_log") if key.endswith(".json"))


def _wait_commits(lake: LakeStore, n: int, proc: subprocess.Popen[bytes], timeout: float = 240) -> None:
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
    lake = lake_store(f"s3://{s3_server.bucket}/{db}", options)
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
