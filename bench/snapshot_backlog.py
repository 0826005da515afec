"""The backlog a snapshot leaves: the changes written to a table while it was read, streamed after it.

On ``bench/snapshot.py``'s table (``bench.sbtest1``, ``--rows`` rows, kept under ``bench/out``) a
writer runs 1,000-row UPDATEs of random key ranges, back to back, while ``sluice run --snapshot
only`` reads the table into a lake; that lake is kept (``bench/out/snapshot-backlog-<flavor>/``).
Each of the writer's changes lies in the snapshot's window, so the stream that follows judges every
one against the chunk holding its key: the snapshot read the key after the change, or not.

Then, ``--repeat`` times, a copy of the kept lake is caught up by ``sluice run --trigger once``
(both cores, Spark's start included): its seconds, the changes it streamed (the writer's from the
snapshot's start on; it began before, while Spark started), the steady part (from
the first batch with changes to the end of the last, as ``sluice run`` reports it), and the peak
RSS of the driver's Python, of its JVM and of the largest Python worker (sampled every second).
The mirror is then compared with the server's table (``sluice verify``). ``--reuse`` keeps the lake
and backlog of an earlier run: two builds compared on the same backlog.

Run from the repository root::

    .venv/bin/python bench/snapshot_backlog.py --flavor mysql
    .venv/bin/python bench/snapshot_backlog.py --flavor mysql --reuse
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import catchup_memory
import decode
import pipeline
import snapshot

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.sandbox.server import Sandbox

OUT = decode.OUT


def backlog(box: Sandbox, rows: int, kept: Path) -> dict[str, object]:
    """Snapshot the table into ``kept`` while the writer runs; the writer's changes."""
    shutil.rmtree(kept, ignore_errors=True)
    stop = threading.Event()
    changed = [0]

    def writer() -> None:
        rng = random.Random(7)
        with Connection.open(parse_dsn(box.dsn("root"))) as conn:
            while not stop.is_set():
                first = rng.randrange(1, rows - 1000)
                conn.execute(f"UPDATE bench.sbtest1 SET k = k + 1 WHERE id BETWEEN {first} AND {first + 999}")
                changed[0] += 1000

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        run = decode.timed([*decode.SLUICE, "run", "--source", box.dsn("root"), "--lake", str(kept / "lake"),
                            "--tables", r"bench\.sbtest1", "--snapshot", "only"], pin=False)
    finally:
        stop.set()
        thread.join()
    if run.error:
        raise SystemExit(f"the snapshot failed: {run.error}")
    info = {"snapshot_seconds": run.seconds, "changes": changed[0]}
    (kept / "backlog.json").write_text(json.dumps(info))
    return info


def catch_up(box: Sandbox, kept: Path, repeat: int) -> list[dict[str, object]]:
    out = []
    for i in range(repeat):
        lake = kept / "catch-up"
        shutil.rmtree(lake, ignore_errors=True)
        shutil.copytree(kept / "lake", lake)
        result = catchup_memory.sampled([*decode.SLUICE, "run", "--source", box.dsn("root"), "--lake", str(lake),
                                         "--tables", r"bench\.sbtest1", "--trigger", "once"])
        stderr = str(result["stderr_tail"])
        verify = subprocess.run([*decode.SLUICE, "verify", "--source", box.dsn("root"), "--lake", str(lake),
                                 "--tables", r"bench\.sbtest1"], capture_output=True, text=True)
        streamed = re.search(r"stopped: (\d+) batches, ([\d,]+) changes", stderr)
        out.append({**result, "steady_seconds": pipeline.steady_seconds(stderr),
                    "mirror_equals_server": verify.returncode == 0,
                    "batches": int(streamed.group(1)) if streamed else None,
                    "changes": int(streamed.group(2).replace(",", "")) if streamed else None})
        decode.log(f"catch-up {i + 1}: {result['seconds']:.1f}s")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--flavor", default="mysql", choices=("mysql", "mariadb"))
    parser.add_argument("--repeat", type=int, default=2, help="catch-up runs on copies of the same lake")
    parser.add_argument("--reuse", action="store_true", help="keep the lake and backlog of an earlier run")
    args = parser.parse_args()
    decode.precompile()
    kept = OUT / f"snapshot-backlog-{args.flavor}"
    box = snapshot.prepare(args.flavor, args.rows)
    try:
        if args.reuse and (kept / "backlog.json").exists():
            info = json.loads((kept / "backlog.json").read_text())
        else:
            decode.log(f"{args.flavor}: the snapshot, with the writer")
            info = backlog(box, args.rows, kept)
        runs = catch_up(box, kept, args.repeat)
    finally:
        box.stop()
    (kept / "results.json").write_text(json.dumps({"backlog": info, "runs": runs}, indent=1, default=str))
    print(f"the writer: {info['changes']:,} changes while `sluice run --snapshot only` ran "
          f"({info['snapshot_seconds']:.1f}s, Spark's start included: some came before the snapshot's start)")
    print("| run | changes streamed (batches) | sluice run --trigger once | steady (first to last batch) "
          "| driver peak RSS | JVM | worker | mirror = server |")
    print("|---|---|---|---|---|---|---|---|")
    for i, r in enumerate(runs, 1):
        print(f"| {i} | {r['changes'] or 0:,} ({r['batches']}) | {r['seconds']:.1f}s | {r['steady_seconds']:.1f}s "
              f"| {r['driver_mb']:,.0f} MB | {r['jvm_mb']:,.0f} MB | {r['worker_mb']:,.0f} MB "
              f"| {'yes' if r['mirror_equals_server'] else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
