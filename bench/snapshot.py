"""Snapshot benchmark: a 1M-row sysbench-shaped table into the Delta mirror, next to mysqldump.

On a sandbox server (``--flavors``, MariaDB by default) a table ``bench.sbtest1 (id INT PRIMARY KEY,
k INT, c CHAR(120), pad CHAR(60))`` gets ``--rows`` rows (kept under ``bench/out/snapshot-<flavor>``
for re-runs). Then, in one run:

  dump      ``mysqldump --single-transaction bench sbtest1 > /dev/null`` (MariaDB: ``mariadb-dump``),
            the best of ``--repeat`` runs
  sluice    ``sluice run --snapshot only`` of the table into a fresh lake, in chunks of the default
            size (64 MiB of the table's average row: 294,000 rows here), with Spark ``local[*]`` on
            both cores (start-up included), while a writer thread updates random rows one statement at
            a time: the longest single write is reported (the source must never be blocked > 1 s)
  phase     the snapshot alone, in this process with a Spark session already up (``SnapshotRunner``
            into a fresh lake, no writer): once with new Python workers, then ``--repeat`` times
            with warm ones, the best of which is compared with the best ``mysqldump``: this
            machine's speed moves by a third from one minute to the next, and one run of each made
            the ratio swing between 0.36x and 0.53x

``--table wide`` snapshots ``bench.wide`` instead: W2's table of ``bench/decode.py`` (200,000 rows of
INT UNSIGNED, BIGINT, DECIMAL, DOUBLE, DATETIME(6), TIMESTAMP(3), DATE, TIME(3), VARCHAR, TEXT,
BLOB, JSON, ENUM, SET, BIT and YEAR), on the decoding benchmark's server (``--rows`` does not apply).

Run from the repository root::

    .venv/bin/python bench/snapshot.py            # 1M rows
    .venv/bin/python bench/snapshot.py --rows 100000 --repeat 1
    .venv/bin/python bench/snapshot.py --table wide --flavors mysql
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decode

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.sandbox.server import Sandbox

OUT = decode.OUT


def prepare(flavor: str, rows: int) -> Sandbox:
    workdir = OUT / f"snapshot-{flavor}-{rows}"
    marker = workdir / "ready.json"
    if not marker.exists() and workdir.exists():
        shutil.rmtree(workdir)
    box = Sandbox.start(flavor, workdir=workdir, settings=decode.SERVER_SETTINGS)  # type: ignore[arg-type]
    if not marker.exists():
        decode.log(f"{flavor}: creating bench.sbtest1 with {rows:,} rows")
        with Connection.open(parse_dsn(box.dsn("root"))) as conn:
            conn.execute("CREATE DATABASE bench")
            conn.execute(decode.W1_TABLE)
            conn.execute("SET SESSION max_recursive_iterations = 100000000" if conn.is_mariadb
                         else "SET SESSION cte_max_recursion_depth = 100000000")
            step = 100_000
            for first in range(1, rows + 1, step):
                last = min(rows, first + step - 1)
                conn.execute(
                    f"INSERT INTO bench.sbtest1 WITH RECURSIVE s (n) AS (SELECT {first} UNION ALL SELECT n + 1 FROM s "
                    f"WHERE n < {last}) SELECT n, n % 100000, REPEAT(CONCAT(n, '-'), 10), REPEAT('p', 60) FROM s"
                )
        marker.write_text(json.dumps({"rows": rows}))
    return box


#: Each table: the UPDATE the writer runs while it is snapshotted ({id}: a random key).
TABLES = {"sbtest1": "UPDATE bench.sbtest1 SET k = k + 1 WHERE id = {id}",
          "wide": "UPDATE bench.wide SET b = b + 1 WHERE id = {id}"}


def dump(box: Sandbox, table: str) -> tuple[decode.Run, float]:
    """``mysqldump`` of the table to /dev/null, and the CPU seconds the server spent meanwhile."""
    tool = "mariadb-dump" if box.is_mariadb else "mysqldump"
    path = shutil.which(tool) or tool
    args = [path, "--no-defaults", "--protocol=TCP", f"--host={box.host}", f"--port={box.port}", "--user=root",
            "--password=" + decode.PASSWORDS["root"], "--single-transaction", "--skip-lock-tables", "bench", table]
    pid = box.pid
    assert pid is not None, "the server runs"
    before = decode.cpu_seconds(pid)
    run = decode.timed(args, pin=False)
    return run, decode.cpu_seconds(pid) - before


def snapshot(box: Sandbox, rows: int, table: str) -> dict[str, object]:
    lake = OUT / f"snapshot-lake-{box.flavor}"
    shutil.rmtree(lake, ignore_errors=True)
    stop = threading.Event()
    longest = [0.0]
    writes = [0]

    def writer() -> None:
        rng = random.Random(1)
        with Connection.open(parse_dsn(box.dsn("root"))) as conn:
            while not stop.is_set():
                started = time.perf_counter()
                conn.execute(TABLES[table].format(id=rng.randrange(1, rows)))
                longest[0] = max(longest[0], time.perf_counter() - started)
                writes[0] += 1
                time.sleep(0.01)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        run = decode.timed([*decode.SLUICE, "run", "--source", box.dsn("root"), "--lake", str(lake),
                            "--tables", rf"bench\.{table}", "--snapshot", "only"], pin=False)
    finally:
        stop.set()
        thread.join()
    return {"run": run.__dict__, "longest_write_s": longest[0], "writes": writes[0]}


def phase(box: Sandbox, repeat: int, table: str) -> dict[str, float]:
    from sluice.lake.layout import open_lake
    from sluice.spark.runtime.session import spark_session
    from sluice.spark.snapshot.driver import SnapshotRunner

    started = time.perf_counter()
    spark = spark_session()
    out = {"spark_start_s": time.perf_counter() - started}
    try:
        for run in ["cold_s", *(f"warm_{i}" for i in range(repeat))]:
            lake = OUT / f"snapshot-phase-lake-{box.flavor}"
            shutil.rmtree(lake, ignore_errors=True)
            (lake / "_sluice").mkdir(parents=True)
            runner = SnapshotRunner(spark, box.dsn("root"), open_lake(lake), f"bench-{run}",
                                    lambda d, t: (d, t) == ("bench", table),
                                    progress=lambda _text: None)
            started = time.perf_counter()
            runner.run()
            out[run] = time.perf_counter() - started
    finally:
        spark.stop()
    out["warm_s"] = min(v for k, v in out.items() if k.startswith("warm_"))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--flavors", default="mariadb", help="comma-separated: mariadb, mysql")
    parser.add_argument("--repeat", type=int, default=3, help="runs of mysqldump and of the warm phase (best kept)")
    parser.add_argument("--table", choices=tuple(TABLES), default="sbtest1",
                        help="sbtest1 (default; --rows of it) or wide (W2's 200,000 rows of many types)")
    args = parser.parse_args()
    if args.table == "wide":
        args.rows = decode.FULL.w2_rows
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    for flavor in args.flavors.split(","):
        box = prepare(flavor, args.rows) if args.table == "sbtest1" else decode.prepare(flavor, decode.FULL)[0]
        try:
            decode.log(f"{flavor}: mysqldump")
            d, server_cpu = min((dump(box, args.table) for _ in range(max(1, args.repeat))),
                                key=lambda done: done[0].seconds)
            decode.log(f"{flavor}: sluice snapshot")
            s = snapshot(box, args.rows, args.table)
            decode.log(f"{flavor}: snapshot phase with Spark up")
            p = phase(box, max(1, args.repeat), args.table)
        finally:
            box.stop()
        results.append({"flavor": flavor, "table": args.table, "rows": args.rows, "dump": d.__dict__,
                        "dump_server_cpu_s": server_cpu, "sluice": s, "phase": p})
    (OUT / f"snapshot-{args.table}-{args.rows}.json").write_text(json.dumps(results, indent=1, default=str))
    print("| flavor | rows | mysqldump --single-transaction (server CPU) | sluice snapshot → Delta | ratio | "
          "longest write | snapshot phase, Spark up (new / warm workers) | phase ratio (warm / mysqldump) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        d, s = r["dump"], r["sluice"]["run"]  # type: ignore[index]
        dump_rate = r["rows"] / d["seconds"]  # type: ignore[index,operator]
        sluice_rate = r["rows"] / s["seconds"]  # type: ignore[index,operator]
        err = "".join(f" ({x['error']})" for x in (d, s) if x.get("error"))  # type: ignore[union-attr]
        print(f"| {r['flavor']} | {r['rows']:,} | {dump_rate:,.0f} rows/s ({d['seconds']:.1f}s; "  # type: ignore[index]
              f"{r['dump_server_cpu_s']:.1f}s) | "  # type: ignore[index]
              f"{sluice_rate:,.0f} rows/s ({s['seconds']:.1f}s) | {sluice_rate / dump_rate:.2f}x | "  # type: ignore[index]
              f"{r['sluice']['longest_write_s']:.3f}s | "  # type: ignore[index]
              f"{r['rows'] / r['phase']['cold_s']:,.0f} / {r['rows'] / r['phase']['warm_s']:,.0f} rows/s "  # type: ignore
              f"(Spark start {r['phase']['spark_start_s']:.1f}s) | "  # type: ignore[index]
              f"{d['seconds'] / r['phase']['warm_s']:.2f}x |{err}")  # type: ignore[index]
    return 0


if __name__ == "__main__":
    sys.exit(main())
