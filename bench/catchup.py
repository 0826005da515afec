"""Catch-up benchmark: five W1 workloads (4M changes) in one ``sluice run --trigger once``.

A user who starts sluice after a weekend, or on a new table, meets a backlog: Spark's start is then
a small part of the run. This writes W1 (``bench/decode.py``: 500k inserts, 200k updates, 100k
deletes) five times on a sandbox server, each into a table of its own (``bench.w1_1`` ...
``bench.w1_5``: the workload runs on ``bench.sbtest1``, which is renamed after each round), keeps
the binlog files under ``bench/out/catchup/`` (a re-run reuses them) and times, on the same files:

  sluice run    ``sluice run --trigger once --from FIRST:4`` into a fresh local lake (both cores,
                Spark's start included; the driver's peak RSS from ``/usr/bin/time``)
  binlog tool   ``mysqlbinlog -vv --base64-output=decode-rows FILES > /dev/null`` (one core)

Run from the repository root::

    .venv/bin/python bench/catchup.py --flavors mysql
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decode
import pipeline

from sluice.sandbox.server import Sandbox

OUT = decode.OUT / "catchup"
ROUNDS = 5


def prepare(flavor: str) -> tuple[Sandbox, list[str], int]:
    """The flavor's server with the five rounds written (once); their binlog files and changes."""
    workdir = OUT / flavor
    manifest = workdir / "workloads.json"
    if not manifest.exists() and workdir.exists():
        shutil.rmtree(workdir)
    box = Sandbox.start(flavor, workdir=workdir, settings=decode.SERVER_SETTINGS)  # type: ignore[arg-type]
    scale = decode.FULL
    changes = ROUNDS * (scale.w1_rows + scale.w1_updates + scale.w1_deletes)
    if manifest.exists():
        return box, json.loads(manifest.read_text()), changes
    nums = ",".join(f"({i})" for i in range(1000))
    box.sql(decode.SETUP_SQL.format(nums=nums, c=decode._groups(10), pad=decode._groups(5)))
    first = decode._rotate(box)
    for k in range(1, ROUNDS + 1):
        started = time.perf_counter()
        box.sql(decode.W1_TABLE)
        for call in (f"CALL w1_insert({scale.w1_rows // 1000})",
                     f"CALL w1_change({scale.w1_updates}, {scale.w1_deletes}, {scale.w1_rows})"):
            box.sql("SET NAMES utf8mb4; " + call, database="bench", timeout=3600)
        box.sql(f"RENAME TABLE bench.sbtest1 TO bench.w1_{k}")
        decode.log(f"{flavor}: round {k} written in {time.perf_counter() - started:.0f}s")
    last = box.binlog_files()[-1]
    decode._rotate(box)
    names = box.binlog_files()
    files = names[names.index(first): names.index(last) + 1]
    manifest.write_text(json.dumps(files))
    return box, files, changes


def run(flavor: str) -> dict[str, object]:
    box, files, changes = prepare(flavor)
    try:
        paths = [str(box.binlog_dir / name) for name in files]
        decode.timed(box.binlog_tool_argv("-vv", "--base64-output=decode-rows", *paths))  # warm the page cache
        tool = decode.timed(box.binlog_tool_argv("-vv", "--base64-output=decode-rows", *paths))
        lake = OUT / f"lake-{flavor}"
        shutil.rmtree(lake, ignore_errors=True)
        command = [*decode.SLUICE, "run", "--source", box.dsn("repl"), "--tables", r"bench\.(sbtest1|w1_.*)",
                   "--trigger", "once", "--lake", str(lake), "--from", f"{files[0]}:4"]
        sluice = decode.timed(command, pin=False)
        shutil.rmtree(lake, ignore_errors=True)
        return {
            "flavor": flavor, "changes": changes, "files": files,
            "sluice_run": sluice.__dict__, "binlog_tool": tool.__dict__,
            "sluice_rows_per_s": changes / sluice.seconds, "tool_rows_per_s": changes / tool.seconds,
            "ratio": tool.seconds / sluice.seconds, "steady_seconds": pipeline.steady_seconds(sluice.stderr_tail),
            "driver_peak_rss_mb": sluice.max_rss_mb,
        }
    finally:
        box.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--flavors", default="mysql,mariadb", help="comma-separated: mysql, mariadb")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    decode.precompile()
    results = [run(flavor) for flavor in args.flavors.split(",")]
    (OUT / "results.json").write_text(json.dumps(results, indent=1, default=str))
    print("| flavor | changes | sluice run --trigger once (end to end) | binlog tool -vv | sluice / tool "
          "| steady (first to last batch) | driver peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        run_, tool = r["sluice_run"], r["binlog_tool"]
        err = f" ({run_['error']})" if run_.get("error") else ""  # type: ignore[union-attr]
        print(f"| {r['flavor']} | {r['changes']:,} "
              f"| {r['sluice_rows_per_s']:,.0f} rows/s ({run_['seconds']:.1f}s){err} "  # type: ignore[index]
              f"| {r['tool_rows_per_s']:,.0f} rows/s ({tool['seconds']:.1f}s) | {r['ratio']:.2f}x "  # type: ignore[index]
              f"| {r['steady_seconds']:.1f}s | {r['driver_peak_rss_mb']:,.0f} MB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
