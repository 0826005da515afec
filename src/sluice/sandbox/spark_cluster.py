"""A throwaway Spark standalone cluster for tests and benchmarks: a master and its workers.

The cluster is started from the pyspark package itself (``bin/spark-class`` runs the standalone
``Master`` and ``Worker``), each process in a group of its own that dies with its parent, on
loopback ports, logging into the cluster's folder. Each worker offers ``cores`` cores; its
executors run the same Python as the caller (``PYSPARK_PYTHON``). ``kill_worker`` ends a worker as a
machine's death would: its whole process group, executors and their Python workers included.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from sluice.sandbox.process import HOST, SandboxError, die_with_parent, free_port, log_tail

__all__ = ["SparkCluster"]


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "bin" / "spark-class"


class SparkCluster:
    """A standalone master and its workers, each in a process group of its own; ``url`` is the
    master's (``--master``)."""

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
        with (self.root / f"{name}.log").open("ab") as log:
            return subprocess.Popen([str(_spark_class()), *args], stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=self.env, cwd=self.root,
                                    start_new_session=True, preexec_fn=die_with_parent)

    def add_worker(self, *, cores: int = 1, memory: str = "1g") -> None:
        """Start one more worker offering ``cores`` cores and ``memory`` to executors."""
        n = len(self.workers)
        work = self.root / f"work{n}"
        work.mkdir()
        self.workers.append(self._spawn(f"worker{n}", "org.apache.spark.deploy.worker.Worker", self.url,
                                        "--host", HOST, "--cores", str(cores), "--memory", memory,
                                        "--webui-port", "0", "--work-dir", str(work)))

    def alive_workers(self) -> int:
        """Workers the master counts as alive (0 while it does not answer)."""
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.ui}/json/", timeout=5) as reply:
                state = json.load(reply)
        except OSError:
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def wait_workers(self, n: int, timeout: float = 120) -> None:
        """Wait until ``n`` workers are alive; SandboxError with the logs' tails after ``timeout``."""
        deadline = time.monotonic() + timeout
        while self.alive_workers() < n:
            if time.monotonic() > deadline:
                logs = "\n".join(log_tail(p, 20) for p in sorted(self.root.glob("*.log")))
                raise SandboxError(f"the standalone cluster has fewer than {n} live workers after "
                                   f"{timeout:.0f}s:\n{logs}")
            time.sleep(1)

    def kill_worker(self) -> None:
        """SIGKILL the oldest live worker and everything it started (its executors and their Python
        workers)."""
        worker = next(w for w in self.workers if w.poll() is None)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()

    def stop(self) -> None:
        """SIGKILL every worker and the master."""
        for proc in [*self.workers, self.master]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
