"""Cluster scaling: the catch-up's steady part on a standalone cluster of one worker, then of two.

The five W1 workloads of ``bench/catchup.py`` (4M changes, its binlog files reused from
``bench/out/catchup/``) go through ``sluice run --master spark://… --trigger once`` into a fresh
local lake (every process of the cluster is on this machine and sees it), on a standalone cluster
(``sluice.sandbox.spark_cluster``) of workers of one core each: first one worker, then two. The
figure is the steady part as ``sluice run`` reports it (first batch with changes to the end of the
last), its rows/s with two workers over its rows/s with one (target >= 1.7). The driver, the
cluster's daemons and the database server run on the same machine as the workers: on a machine of
two cores the two workers' executors share them with the driver's own work between batches.

    .venv/bin/python bench/cluster.py --rounds 2

With ``--rounds N`` the two sizes alternate N times (one, two, one, two, ...). Results: a table on
standard output and ``bench/out/cluster.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import catchup
import decode
import pipeline

from sluice.sandbox.process import HOST
from sluice.sandbox.spark_cluster import SparkCluster

OUT = decode.OUT


def one_run(workers: int, files: list[str], dsn: str, changes: int, memory: str) -> dict[str, object]:
    """``sluice run`` of the catch-up on a fresh cluster of ``workers`` one-core workers."""
    root = Path(tempfile.mkdtemp(prefix="sluice-cluster-"))
    cluster = SparkCluster(root)
    try:
        for _ in range(workers):
            cluster.add_worker(cores=1, memory=memory)
        cluster.wait_workers(workers)
        lake = OUT / "cluster-lake"
        shutil.rmtree(lake, ignore_errors=True)
        command = [*decode.SLUICE, "run", "--source", dsn, "--tables", r"bench\.(sbtest1|w1_.*)",
                   "--master", cluster.url, "--trigger", "once", "--lake", str(lake), "--from", f"{files[0]}:4"]
        run = decode.timed(command, pin=False, env={**os.environ, "SPARK_LOCAL_IP": HOST})
        shutil.rmtree(lake, ignore_errors=True)
        steady = pipeline.steady_seconds(run.stderr_tail)
        decode.log(f"cluster of {workers}: {run.seconds:.1f}s end to end, steady {steady:.1f}s"
                   + (f" ({run.error})" if run.error else ""))
        return {"workers": workers, "seconds": run.seconds, "steady_seconds": steady,
                "steady_rows_per_s": changes / steady, "error": run.error, "stderr_tail": run.stderr_tail}
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--flavor", choices=("mysql", "mariadb"), default="mysql")
    parser.add_argument("--rounds", type=int, default=1, help="times the two sizes alternate (default 1)")
    parser.add_argument("--memory", default="2g", help="memory each worker offers its executor (default 2g)")
    args = parser.parse_args()
    decode.precompile()
    box, files, changes = catchup.prepare(args.flavor)
    try:
        runs = [one_run(workers, files, box.dsn("repl"), changes, args.memory)
                for _ in range(args.rounds) for workers in (1, 2)]
    finally:
        box.stop()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "cluster.json").write_text(json.dumps({"flavor": args.flavor, "changes": changes, "runs": runs}, indent=1))
    print("| round | workers (1 core each) | sluice run (end to end) | steady (first to last batch) | steady rows/s "
          "| two over one |")
    print("|---|---|---|---|---|---|")
    for k in range(args.rounds):
        one, two = runs[2 * k], runs[2 * k + 1]
        for r in (one, two):
            ratio = f"{two['steady_rows_per_s'] / one['steady_rows_per_s']:.2f}x" if r is two else ""  # type: ignore[operator]
            err = f" ({r['error']})" if r["error"] else ""
            print(f"| {k + 1} | {r['workers']} | {r['seconds']:.1f}s{err} | {r['steady_seconds']:.1f}s "
                  f"| {r['steady_rows_per_s']:,.0f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
