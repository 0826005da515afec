"""Many tables in every batch: the mirrors of a batch committed one by one, and side by side.

A sandbox server gets ``--tables`` tables (``bench.t01`` ...: INT key, INT, VARCHAR(100)) and
``--rounds`` rounds of writes, each round one transaction per table (500 inserts, then 250 updates
of earlier rows). The binlog is kept under ``bench/out/tables/`` (a re-run reuses it). Then, on the
same files, ``sluice run --trigger once --max-rows-per-batch N`` into fresh lakes, so that every
batch holds changes of every table:

  one by one    ``[mirror] commits_at_once = 1``
  side by side  the default (``sluice.lake.mirror.pending.MirrorCadence.commits_at_once``), or
                ``--at-once N``

each with the lake on the local disk and, with ``--s3``, on the project's S3 test server (moto,
on this machine). The figures are ``sluice run``'s own: the steady part (first batch with changes
to the end of the last) and the driver's part of it (DDL, MERGEs, commits). Every mirror is
compared with the server's table (``sluice verify``).

Run from the repository root::

    .venv/bin/python bench/tables.py --s3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decode
from pipeline import steady_seconds

from sluice.sandbox.s3 import S3Sandbox
from sluice.sandbox.server import Sandbox

OUT = decode.OUT / "tables"
INSERTS, UPDATES = 500, 250


def prepare(flavor: str, tables: int, rounds: int) -> tuple[Sandbox, list[str]]:
    """The server with the rounds written (once for these sizes); the binlog files holding them."""
    workdir = OUT / f"{flavor}-{tables}x{rounds}"
    manifest = workdir / "files.json"
    if not manifest.exists() and workdir.exists():
        shutil.rmtree(workdir)
    box = Sandbox.start(flavor, workdir=workdir, settings=decode.SERVER_SETTINGS)  # type: ignore[arg-type]
    if manifest.exists():
        return box, json.loads(manifest.read_text())
    names = [f"t{i:02d}" for i in range(1, tables + 1)]
    box.sql("CREATE DATABASE IF NOT EXISTS bench; "
            + " ".join(f"CREATE TABLE bench.{n} (id INT PRIMARY KEY, k INT, c VARCHAR(100));" for n in names))
    first = decode._rotate(box)
    for r in range(rounds):
        script = []
        for n in names:
            base = r * INSERTS
            values = ",".join(f"({base + i}, {i}, 'row {base + i} of {n}')" for i in range(INSERTS))
            script.append(f"INSERT INTO bench.{n} VALUES {values};")
            script.append(f"UPDATE bench.{n} SET k = k + 1, c = CONCAT(c, ' again') "
                          f"WHERE id % 2 = 0 AND id >= {base} AND id < {base + 2 * UPDATES};")
        box.sql(" ".join(script))
    last = box.binlog_files()[-1]
    decode._rotate(box)
    files = [f for f in box.binlog_files() if first <= f <= last]
    manifest.write_text(json.dumps(files))
    return box, files


def run(box: Sandbox, files: list[str], lake: str, config: Path, batch_rows: int,
        env: dict[str, str] | None, checkpoint: Path | None) -> dict[str, object]:
    """One ``sluice run --trigger once`` over the files into a fresh lake, then ``sluice verify``."""
    command = [*decode.SLUICE, "run", "--source", box.dsn("repl"), "--lake", lake, "--trigger", "once",
               "--tables", r"bench\.t.*", "--from", f"{files[0]}:4", "--max-rows-per-batch", str(batch_rows),
               "--config", str(config)]
    if checkpoint is not None:
        shutil.rmtree(checkpoint, ignore_errors=True)
        command += ["--checkpoint-dir", str(checkpoint)]
    done = decode.timed(command, pin=False, env=env)
    verify = decode.timed([*decode.SLUICE, "verify", "--source", box.dsn("root"), "--lake", lake,
                           "--tables", r"bench\.t.*"], pin=False, keep_stdout=True, env=env)
    driver = re.search(r"\(([0-9.]+)s of it the driver's", done.stderr_tail)
    batches = re.search(r"stopped: (\d+) batches", done.stderr_tail)
    return {"seconds": done.seconds, "error": done.error, "steady": steady_seconds(done.stderr_tail),
            "driver": float(driver.group(1)) if driver else float("nan"),
            "batches": int(batches.group(1)) if batches else None,
            "verified": verify.error is None and " equal the source" in verify.stdout + verify.stderr_tail,
            "tail": done.stderr_tail}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--flavor", choices=("mysql", "mariadb"), default="mysql")
    parser.add_argument("--tables", type=int, default=16, help="tables written (default 16)")
    parser.add_argument("--rounds", type=int, default=40, help="rounds of writes (default 40)")
    parser.add_argument("--batches", type=int, default=10, help="batches the run is cut into (default 10)")
    parser.add_argument("--s3", action="store_true", help="also with the lake on the S3 test server")
    parser.add_argument("--at-once", type=int, help="commits_at_once side by side (default: sluice's)")
    args = parser.parse_args()
    decode.precompile()
    changes = args.tables * args.rounds * (INSERTS + UPDATES)
    box, files = prepare(args.flavor, args.tables, args.rounds)
    s3 = S3Sandbox.start() if args.s3 else None
    results: dict[str, dict[str, object]] = {}
    try:
        for name, at_once in (("one by one", 1), ("side by side", args.at_once)):
            config = OUT / f"{at_once or 'default'}.toml"
            config.write_text(f"[mirror]\ncommits_at_once = {at_once}\n" if at_once else "")
            lake = OUT / "lake"
            shutil.rmtree(lake, ignore_errors=True)
            results[f"{name}, local"] = run(box, files, str(lake), config, changes // args.batches, None, None)
            shutil.rmtree(lake, ignore_errors=True)
            if s3 is not None:
                uri = f"s3://{s3.bucket}/tables-{at_once or 'default'}-{os.getpid()}"
                results[f"{name}, S3"] = run(box, files, uri, config, changes // args.batches,
                                             {**os.environ, **s3.env()}, OUT / "checkpoint")
    finally:
        box.stop()
        if s3 is not None:
            s3.stop()
    print(f"{args.flavor}: {args.tables} tables, {changes:,} changes, --max-rows-per-batch {changes // args.batches}")
    print("| lake, mirrors committed | batches | steady | the driver's part | end to end | verified |")
    print("|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['batches']} | {r['steady']:.1f} s | {r['driver']:.1f} s | {r['seconds']:.1f} s "
              f"| {r['verified']} |" + (f" error: {r['error']}" if r["error"] else ""))
    (decode.OUT / "tables.json").write_text(json.dumps(results, indent=1, default=str))
    return 0 if all(r["verified"] and not r["error"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
