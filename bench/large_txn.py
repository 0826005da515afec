"""One huge transaction: the memory of ``sluice run``, ``tail`` and ``dump``, and how soon it is in the lake.

For each flavor and each size N (``--rows``, default 2M and 8M) this fills a table of N rows
(``bench.big``: id INT PRIMARY KEY, k INT, c CHAR(60), pad CHAR(40), about 130 bytes a row) on a
sandbox server, starts ``sluice run --trigger 1s`` on it (the snapshot first), waits until a marker
transaction is in the lake, then runs ONE ``UPDATE bench.big SET k = k + 1`` (N row changes) and
20 single-row transactions after it, in a binlog file of their own, and measures:

  run peak      the peak of the RSS of all of sluice run's processes summed (driver, JVM, Python
                workers), sampled every 0.25 s from ``ps``; with the baseline before the UPDATE and
                the peak of each role
  visible       seconds from the UPDATE's COMMIT to the change log commit that holds it (the
                mirror's MERGE commits before it), polled every 0.2 s; and the longest batch's
                split, from sluice run -v: its Spark tasks, then the driver's commits
  binlog tool   ``mysqlbinlog -vv --base64-output=decode-rows FILE`` (``mariadb-binlog`` on MariaDB)
                of the file holding the transaction, run after the pipeline stopped (one core)
  tail, dump    ``sluice tail --from START --until-end`` and ``sluice dump FILE``, their output to
                /dev/null, peak RSS from ``/usr/bin/time`` (one core)

and checks that the mirror equals SELECT (``sluice verify``) and that the change log holds each of
the N + 20 updates once. Targets (issue 44): run peak <= 2.5 GB at both sizes, not growing with N;
tail and dump <= 300 MB; visible within 2x the binlog tool's time.

Run from the repository root::

    .venv/bin/python bench/large_txn.py                          # 2M and 8M rows, MySQL and MariaDB
    .venv/bin/python bench/large_txn.py --rows 20000 --flavors mysql   # the script end to end, small
    .venv/bin/python bench/large_txn.py --rows 200000 --flavors mysql --run-only --part-size 8M
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decode
from catchup_memory import _tree

from sluice.binlog.position import position_key
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.lake.changelog.schema import committed_position
from sluice.lake.layout import open_lake
from sluice.sandbox.server import Sandbox

OUT = decode.OUT / "large_txn"
SMALL = 20  # single-row transactions after the big one
TABLES = r"bench\.(big|marker)"


def fill(box: Sandbox, rows: int) -> None:
    """``bench.big`` with ``rows`` rows (1M per INSERT ... SELECT), and ``bench.marker``."""
    nums = ",".join(f"({i})" for i in range(1000))
    box.sql("CREATE DATABASE IF NOT EXISTS bench; DROP TABLE IF EXISTS bench.big, bench.marker, bench.n1k;"
            "CREATE TABLE bench.n1k (i INT PRIMARY KEY);"
            f"INSERT INTO bench.n1k VALUES {nums};"
            "CREATE TABLE bench.big (id INT PRIMARY KEY, k INT, c CHAR(60), pad CHAR(40));"
            "CREATE TABLE bench.marker (id INT PRIMARY KEY)")
    for chunk in range(0, rows, 1_000_000):
        box.sql(f"INSERT INTO bench.big SELECT {chunk} + a.i * 1000 + b.i + 1, b.i, "
                f"CONCAT('row-', {chunk} + a.i * 1000 + b.i + 1, '-', REPEAT('c', 40)), REPEAT('p', 40) "
                f"FROM bench.n1k a JOIN bench.n1k b WHERE {chunk} + a.i * 1000 + b.i < {rows}", timeout=3600)


class Sampler(threading.Thread):
    """The RSS (MB) of a process tree, every 0.25 s: the summed peak, and each role's."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.stop = threading.Event()
        self.now = 0.0
        self.peak = 0.0
        self.roles = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
        self.roles_now = dict(self.roles)

    def run(self) -> None:
        while not self.stop.is_set():
            parts = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
            for pid, comm, rss in _tree(self.pid):
                role = "driver" if pid == self.pid else "jvm" if comm == "java" else "workers"
                parts[role] += rss / 1024
            self.now = sum(parts.values())
            self.roles_now = parts
            self.peak = max(self.peak, self.now)
            for role, mb in parts.items():
                self.roles[role] = max(self.roles[role], mb)
            time.sleep(0.25)

    def reset(self) -> None:
        self.peak = self.now
        self.roles = {role: 0.0 for role in self.roles}


def wait_committed(lake: Path, end: tuple[str, int], proc: subprocess.Popen[bytes], limit: float) -> float:
    """Seconds until the lake's change log has committed past ``end``."""
    from deltalake import DeltaTable

    changes = open_lake(str(lake)).changes
    started = time.perf_counter()
    target = position_key(*end)
    while time.perf_counter() - started < limit:
        if proc.poll() is not None:
            raise RuntimeError(f"sluice run exited: see {lake.parent / 'run.log'}")
        try:
            position = committed_position(DeltaTable(changes), look_back=50)
        except Exception:  # not created yet
            position = None
        if position is not None and position_key(position.file, position.pos) >= target:
            return time.perf_counter() - started
        time.sleep(0.2)
    raise TimeoutError(f"the change was not in the lake after {limit:.0f}s")


def changelog_exact(lake: Path, start: tuple[str, int], expected: int) -> dict[str, Any]:
    """The updates of ``bench.big`` the change log holds from ``start`` on: each once, ``expected`` of them."""
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    columns = ["op", "db", "table", "file", "pos", "row"]
    table = DeltaTable(open_lake(str(lake)).changes).to_pyarrow_table(columns=columns)
    mask = pc.and_(pc.equal(table["table"], "big"), pc.equal(table["op"], "update"))
    rows = table.filter(mask)
    keys = {(f, p, r) for f, p, r in zip(rows["file"].to_pylist(), rows["pos"].to_pylist(), rows["row"].to_pylist(),
                                         strict=True) if position_key(f, p) >= position_key(*start)}
    later = sum(1 for f, p in zip(rows["file"].to_pylist(), rows["pos"].to_pylist(), strict=True)
                if position_key(f, p) >= position_key(*start))
    return {"updates": later, "distinct": len(keys), "exact": later == len(keys) == expected}


def one(box: Sandbox, rows: int, run_args: list[str], run_only: bool) -> dict[str, Any]:
    decode.log(f"{box.flavor} {rows:,} rows: filling")
    fill(box, rows)
    work = OUT / f"{box.flavor}-{rows}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    lake = work / "lake"
    run_log = work / "run.log"  # -v: each batch's tasks and the driver's commits, in seconds
    with open(run_log, "wb") as logged:
        proc = subprocess.Popen([*decode.SLUICE, "run", "--source", box.dsn("repl"), "--lake", str(lake),
                                 "--tables", TABLES, "--trigger", "1s", "-v", *run_args],
                                stdout=subprocess.DEVNULL, stderr=logged)
    sampler = Sampler(proc.pid)
    sampler.start()
    try:
        with Connection.open(parse_dsn(box.dsn("root"))) as conn:
            for n in range(1, 10**6):  # a marker streamed after the snapshot: the pipeline is idle and ready
                conn.execute(f"INSERT INTO bench.marker VALUES ({n})")
                marker = server_binlog_status(conn)
                try:
                    wait_committed(lake, (marker.file, marker.pos), proc, 10)
                    break
                except TimeoutError:
                    continue
            decode.log(f"{box.flavor} {rows:,} rows: snapshot in the lake, updating")
            time.sleep(3)
            baseline, baseline_roles = sampler.now, dict(sampler.roles_now)
            sampler.reset()
            conn.execute("FLUSH BINARY LOGS")
            begin = server_binlog_status(conn)
            conn.execute("UPDATE bench.big SET k = k + 1")
            committed = time.perf_counter()
            after = server_binlog_status(conn)
            for i in range(1, SMALL + 1):
                conn.execute(f"UPDATE bench.big SET k = k + 1 WHERE id = {i}")
            last = server_binlog_status(conn)
            conn.execute("FLUSH BINARY LOGS")
        wait_committed(lake, (after.file, after.pos), proc, 7200)
        visible = time.perf_counter() - committed
        wait_committed(lake, (last.file, last.pos), proc, 600)
        time.sleep(2)
        run_peak, roles = sampler.peak, dict(sampler.roles)
    finally:
        sampler.stop.set()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    decode.log(f"{box.flavor} {rows:,} rows: visible after {visible:.1f}s; checking")
    batch = _largest_batch(run_log)
    verify = subprocess.run([*decode.SLUICE, "verify", "--source", box.dsn("root"), "--lake", str(lake),
                             "--tables", r"bench\.big"], capture_output=True, text=True)
    exact = changelog_exact(lake, (begin.file, begin.pos), rows + SMALL)
    path = str(box.binlog_dir / begin.file)
    binlog_size = os.path.getsize(path)
    if run_only:
        tool = tail = dump = decode.Run(float("nan"), float("nan"), "", "not run (--run-only)")
    else:
        decode.timed(box.binlog_tool_argv("-vv", "--base64-output=decode-rows", path))  # warm the page cache
        tool = decode.timed(box.binlog_tool_argv("-vv", "--base64-output=decode-rows", path))
        tail = decode.timed([*decode.SLUICE, "tail", box.dsn("repl"), "--from", f"{begin.file}:{begin.pos}",
                             "--until-end", "--tables", r"bench\.big"])
        dump = decode.timed([*decode.SLUICE, "dump", path])
    shutil.rmtree(work, ignore_errors=True)
    return {
        # A transaction past max_binlog_size ends its file: the server rotates right after it.
        "flavor": box.flavor, "rows": rows,
        "binlog_bytes": after.pos - begin.pos if after.file == begin.file else binlog_size - begin.pos,
        "run_baseline_mb": baseline, "run_peak_mb": run_peak, "run_roles_mb": roles,
        "run_baseline_roles_mb": baseline_roles,
        "visible_s": visible, "binlog_tool_s": tool.seconds, "ratio": visible / tool.seconds,
        "tail_s": tail.seconds, "tail_peak_mb": tail.max_rss_mb, "tail_error": tail.error,
        "dump_s": dump.seconds, "dump_peak_mb": dump.max_rss_mb, "dump_error": dump.error,
        "verify_ok": verify.returncode == 0, "verify": verify.stdout.strip().splitlines()[-1:],
        "changelog": exact, "largest_batch": batch,
    }


def _largest_batch(run_log: Path) -> str:
    """The run log's line of the batch that took longest (tasks and the driver's commits)."""
    lines = [line for line in run_log.read_text(errors="replace").splitlines() if ": tasks " in line]

    def seconds(line: str) -> float:
        return sum(float(part.split()[-1].rstrip("s")) for part in line.split(": tasks ")[1].split(", "))

    return max(lines, key=seconds).split("batch ", 1)[-1] if lines else "no batch line"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--flavors", default="mysql,mariadb", help="comma-separated: mysql, mariadb")
    parser.add_argument("--rows", default="2000000,8000000", help="comma-separated table sizes (rows updated)")
    parser.add_argument("--part-size", help="sluice run's --part-size (default: sluice's own)")
    parser.add_argument("--run-only", action="store_true", help="measure sluice run only: no tail, dump or binlog tool")
    args = parser.parse_args()
    run_args = ["--part-size", args.part_size] if args.part_size else []
    OUT.mkdir(parents=True, exist_ok=True)
    decode.precompile()
    results: list[dict[str, Any]] = []
    for flavor in args.flavors.split(","):
        workdir = OUT / f"server-{flavor}"
        shutil.rmtree(workdir, ignore_errors=True)
        settings = {**decode.SERVER_SETTINGS, "max_allowed_packet": "64M"}
        box = Sandbox.start(flavor, workdir=workdir, settings=settings)
        try:
            results.extend(one(box, int(n), run_args, args.run_only) for n in args.rows.split(","))
        finally:
            box.stop()
            shutil.rmtree(workdir, ignore_errors=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=1, default=str))
    print("| flavor | rows | binlog | run baseline -> peak (driver / JVM / workers) | visible | binlog tool -vv "
          "| ratio | tail peak | dump peak | mirror = SELECT | change log exact |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        roles, base = r["run_roles_mb"], r["run_baseline_roles_mb"]
        tail_error = f" ({r['tail_error']})" if r["tail_error"] else ""
        dump_error = f" ({r['dump_error']})" if r["dump_error"] else ""
        print(f"| {r['flavor']} | {r['rows']:,} | {r['binlog_bytes'] / 1e6:,.0f} MB "
              f"| {r['run_baseline_mb']:,.0f} -> {r['run_peak_mb']:,.0f} MB ("
              + " / ".join(f"{base[k]:,.0f} -> {roles[k]:,.0f}" for k in ("driver", "jvm", "workers"))
              + f") | {r['visible_s']:.1f}s | {r['binlog_tool_s']:.1f}s "
              f"| {r['ratio']:.2f}x | {r['tail_peak_mb']:,.0f} MB{tail_error} "
              f"| {r['dump_peak_mb']:,.0f} MB{dump_error} "
              f"| {'yes' if r['verify_ok'] else 'NO: ' + ' '.join(r['verify'])} "
              f"| {'yes' if r['changelog']['exact'] else 'NO: ' + json.dumps(r['changelog'])} |")
    for r in results:
        print(f"{r['flavor']} {r['rows']:,}: the longest batch, {r['largest_batch']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
