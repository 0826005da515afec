r"""End-to-end benchmark: the W1 workload from the server into the Delta mirror, and latency under load.

Two measurements on sandbox servers (the W1 binlogs of ``bench/decode.py`` are reused from
``bench/out/`` or generated there first):

  throughput  ``sluice run --trigger once`` streaming W1 (500k inserts in 1,000-row statements,
              200k single-row updates, 100k single-row deletes) from the server into a fresh lake:
              changes/s end to end, next to ``mysqlbinlog -vv --base64-output=decode-rows`` (resp.
              ``mariadb-binlog``) decoding the same files in the same run, as a ratio; the steady
              part (from the first batch with changes to the end of the last, as ``sluice run``
              reports it), the start-up (the same command over an empty range, ``--from latest``)
              and the peak RSS of the largest process (the Spark driver's JVM); and the same
              command over W1's files capturing a table none of them changes (``--tables
              bench\.uncaptured``): every range holds no captured change, so its seconds over the
              start-up's are what reading the files without decoding a row costs.
              ``--workload W2`` streams W2 instead (the wide table: DOUBLE, BLOB, JSON, SET and
              temporal columns). Each mirror is then compared with the server's table
              (``sluice verify``).
              With ``--s3`` the W1 run is repeated with the lake on the S3 test server (moto, in
              memory, on this machine): its steady rows/s over the local lake's.
  latency     a steady load of about ``--rate`` rows/s (inserts and updates in small transactions)
              while the pipeline runs with a 1 s trigger: the median and 90th percentile of
              commit-to-visible latency (from a change's commit to the end of the micro-batch that
              made it visible in the lake).

Run from the repository root::

    .venv/bin/python bench/pipeline.py --quick      # 1/10 of W1, 20 s of load
    .venv/bin/python bench/pipeline.py              # the full run

Results: a table on standard output and ``bench/out/pipeline-{quick,full}.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decode

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.sandbox.s3 import S3Sandbox
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig

OUT = decode.OUT


#: Each workload's table, and its row changes at a scale.
WORKLOADS = {
    "W1": ("sbtest1", lambda s: s.w1_rows + s.w1_updates + s.w1_deletes),
    "W2": ("wide", lambda s: s.w2_rows + s.w2_updates),
}


def throughput(flavor: str, scale: decode.Scale, s3: S3Sandbox | None = None,
               workload: str = "W1") -> dict[str, object]:
    box, files = decode.prepare(flavor, scale)
    try:
        names = files[workload]
        table, count = WORKLOADS[workload]
        paths = [str(box.binlog_dir / name) for name in names]
        tool = decode.timed(box.binlog_tool_argv("-vv", "--base64-output=decode-rows", *paths))
        lake = OUT / f"lake-{scale.name}-{flavor}"
        sluice_run = [*decode.SLUICE, "run", "--source", box.dsn("repl"), "--trigger", "once"]
        command = [*sluice_run, "--tables", rf"bench\.{table}"]
        shutil.rmtree(lake, ignore_errors=True)
        run = decode.timed([*command, "--lake", str(lake), "--from", f"{names[0]}:4"], pin=False)
        # The mirror against the server's table (which the workload left as it is): what a user gets.
        verify = decode.timed([*decode.SLUICE, "verify", "--source", box.dsn("root"), "--lake", str(lake),
                               "--tables", rf"bench\.{table}"], pin=False, keep_stdout=True)
        # Start-up: the same command over an empty range (a fresh lake starting at the server's end).
        shutil.rmtree(lake, ignore_errors=True)
        empty = decode.timed([*command, "--lake", str(lake), "--from", "latest"], pin=False)
        shutil.rmtree(lake, ignore_errors=True)
        # The workload's files with nothing in them captured: the driver skips every transaction at its TABLE_MAP.
        uncaptured = decode.timed([*sluice_run, "--tables", r"bench\.uncaptured", "--lake", str(lake),
                                   "--from", f"{names[0]}:4"], pin=False)
        shutil.rmtree(lake, ignore_errors=True)
        rows = count(scale)
        batch_seconds = steady_seconds(run.stderr_tail)
        on_s3: dict[str, object] = {}
        if s3 is not None:  # the same run with the lake on the S3 server (a bucket prefix of its own)
            uri = f"s3://{s3.bucket}/{workload.lower()}-{scale.name}-{flavor}-{int(time.time())}"
            checkpoint = OUT / f"checkpoint-{scale.name}-{flavor}"
            shutil.rmtree(checkpoint, ignore_errors=True)
            cpu, logged = decode.cpu_seconds(s3.proc.pid), s3.log.stat().st_size
            remote = decode.timed([*command, "--lake", uri, "--checkpoint-dir", str(checkpoint),
                                   "--from", f"{names[0]}:4"], pin=False, env={**os.environ, **s3.env()})
            shutil.rmtree(checkpoint, ignore_errors=True)
            remote_seconds = steady_seconds(remote.stderr_tail)
            on_s3 = {"s3_run": remote.__dict__, "s3_batch_seconds": remote_seconds,
                     "s3_steady_rows_per_s": rows / remote_seconds,
                     "s3_over_local_steady": batch_seconds / remote_seconds,
                     # what the S3 server did for the whole run: its CPU time and its requests
                     "s3_server_cpu_seconds": decode.cpu_seconds(s3.proc.pid) - cpu,
                     "s3_requests": _requests(s3.log, logged)}
        return {
            "flavor": flavor, "workload": workload, "rows": rows,
            "verified": verify.error is None and " equal the source" in verify.stdout + verify.stderr_tail,
            "sluice_run": run.__dict__, "binlog_tool": tool.__dict__,
            "sluice_rows_per_s": rows / run.seconds, "tool_rows_per_s": rows / tool.seconds,
            "batch_seconds": batch_seconds, "steady_rows_per_s": rows / batch_seconds,
            "startup_seconds": empty.seconds, "startup_error": empty.error,
            "uncaptured_seconds": uncaptured.seconds, "uncaptured_error": uncaptured.error,
            "w1_bytes": sum(os.path.getsize(p) for p in paths), **on_s3,
        }
    finally:
        box.stop()


def _requests(log: Path, offset: int) -> dict[str, int]:
    """The S3 server's requests logged after ``offset``, by method."""
    with log.open("rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    counts: dict[str, int] = {}
    for method in re.findall(r'"(GET|PUT|POST|HEAD|DELETE) ', text):
        counts[method] = counts.get(method, 0) + 1
    return counts


def steady_seconds(stderr: str) -> float:
    """The steady part ``sluice run`` reports on its last line (``stderr``), NaN when it did not."""
    steady = re.search(r"([0-9.]+)s from the first batch with changes", stderr)
    return float(steady.group(1)) if steady else float("nan")


def latency(flavor: str, seconds: float, rate: int) -> dict[str, object]:
    workdir = OUT / f"latency-{flavor}"
    shutil.rmtree(workdir, ignore_errors=True)
    box = decode.Sandbox.start(flavor, workdir=workdir, settings=decode.SERVER_SETTINGS)  # type: ignore[arg-type]
    try:
        with Connection.open(parse_dsn(box.dsn("root"))) as conn:
            conn.execute("CREATE DATABASE load_db")
            conn.execute("CREATE TABLE load_db.t (id INT PRIMARY KEY, k INT, c VARCHAR(100))")
            start = server_binlog_status(conn)
        lake = workdir / "lake"
        pipeline = Pipeline(PipelineConfig(
            source=box.dsn("repl"), lake=str(lake), tables=r"load_db\..*", trigger="1s",
            starting_position=f"{start.file}:{start.pos}", max_rows_per_batch=50_000,
        ))
        query = pipeline.start()
        while query.lastProgress is None:
            time.sleep(0.2)
        stop = threading.Event()
        written = [0]

        def load() -> None:
            per_tx = 50
            with Connection.open(parse_dsn(box.dsn("root"))) as c:
                next_id, t0 = 0, time.monotonic()
                while not stop.is_set():
                    values = ",".join(f"({next_id + i}, {i}, 'row {next_id + i}')" for i in range(per_tx))
                    c.execute(f"INSERT INTO load_db.t VALUES {values}")
                    next_id += per_tx
                    written[0] += per_tx
                    ahead = written[0] / rate - (time.monotonic() - t0)
                    if ahead > 0:
                        time.sleep(ahead)

        writer = threading.Thread(target=load, daemon=True)
        pipeline.stats.latencies.clear()
        began = time.monotonic()
        writer.start()
        time.sleep(seconds)
        stop.set()
        writer.join()
        elapsed = time.monotonic() - began
        stats = pipeline.stats
        median, p90, timed = stats.latency(0.5), stats.latency(0.9), sum(n for _, n in stats.latencies)
        query.processAllAvailable()
        query.stop()
        return {
            "flavor": flavor, "rows": written[0], "achieved_rate": written[0] / elapsed,
            "batches": pipeline.stats.batches,
            "changes_timed": timed, "median_s": median, "p90_s": p90,
        }
    finally:
        box.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1/10 of W1 and 20 s of load")
    parser.add_argument("--flavors", default="mariadb,mysql", help="comma-separated: mysql, mariadb")
    parser.add_argument("--rate", type=int, default=5000, help="rows/s of the latency load (default 5000)")
    parser.add_argument("--only", choices=("throughput", "latency"), help="run one of the two measurements")
    parser.add_argument("--workload", choices=tuple(WORKLOADS), default="W1",
                        help="the throughput's workload: W1 (default) or W2 (the wide table: DOUBLE, BLOB, JSON, "
                        "SET ...)")
    parser.add_argument("--s3", action="store_true",
                        help="also run W1 with the lake on the S3 test server (moto): its steady rows/s next to "
                        "the local lake's")
    args = parser.parse_args()
    scale = decode.QUICK if args.quick else decode.FULL
    OUT.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, object]]] = {"throughput": [], "latency": []}
    s3 = S3Sandbox.start() if args.s3 else None
    for flavor in args.flavors.split(","):
        if args.only != "latency":
            decode.log(f"{flavor}: {args.workload} end to end")
            results["throughput"].append(throughput(flavor, scale, s3, args.workload))
        if args.only != "throughput":
            decode.log(f"{flavor}: latency at {args.rate} rows/s")
            results["latency"].append(latency(flavor, 20.0 if args.quick else 60.0, args.rate))
    if s3 is not None:
        s3.stop()
    (OUT / f"pipeline-{scale.name}-{args.workload}{'-' + args.only if args.only else ''}.json").write_text(
        json.dumps(results, indent=1, default=str)
    )
    if args.only:
        print(json.dumps(results, indent=1, default=str))
        return 0
    print(f"| flavor | {args.workload} changes | sluice run (server -> Delta) | mysqlbinlog -vv | ratio | "
          "steady (first to last batch) | start-up (empty range) | the files, nothing captured | mirror = server | "
          "driver peak RSS | load rows/s | median commit-to-visible | p90 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for t, lat in zip(results["throughput"], results["latency"], strict=True):
        run, tool = t["sluice_run"], t["binlog_tool"]
        err = f" ({run['error']})" if run.get("error") else ""  # type: ignore[union-attr]
        print(
            f"| {t['flavor']} | {t['rows']:,} | {t['sluice_rows_per_s']:,.0f} rows/s ({run['seconds']:.1f}s){err} | "  # type: ignore[index]
            f"{t['tool_rows_per_s']:,.0f} rows/s ({tool['seconds']:.1f}s) | "  # type: ignore[index]
            f"{t['sluice_rows_per_s'] / t['tool_rows_per_s']:.2f}x | "  # type: ignore[operator]
            f"{t['steady_rows_per_s']:,.0f} rows/s ({t['batch_seconds']:.1f}s) | {t['startup_seconds']:.1f}s | "
            f"{t['uncaptured_seconds']:.1f}s | {'yes' if t['verified'] else 'NO'} | "
            f"{run['max_rss_mb']:,.0f} MB | {lat['achieved_rate']:,.0f} | "  # type: ignore[index]
            f"{lat['median_s']:.2f}s | {lat['p90_s']:.2f}s |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
