"""Spark's start on this machine: a bare ``local[*]`` session and its first job, with the driver's
class archive (``sluice/spark/runtime/jvm_archive.py``) and without it, and with ``sluice run``'s client
compiler (``-XX:TieredStopAtLevel=1``) and without it, alternating, each in a process of its own.

    .venv/bin/python bench/spark_start.py --rounds 3

The archive must exist (``./run setup`` makes it). Each line is one child process: the time from
its start to the session being up, then the first job (``spark.range(10).collect()``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_CHILD = """
import json, sys, time
t0 = time.monotonic()
from sluice.spark.runtime.session import spark_session
conf = {"spark.driver.extraJavaOptions": sys.argv[1]} if sys.argv[1] else {}
spark = spark_session(conf=conf)
t1 = time.monotonic()
spark.range(10).collect()
print(json.dumps({"session": t1 - t0, "first_job": time.monotonic() - t1}))
"""

VARIANTS = {
    "archive, C2": ({}, ""),
    "no archive, C2": ({"SLUICE_NO_CLASS_ARCHIVE": "1"}, ""),
    "archive, C1 only": ({}, "-XX:TieredStopAtLevel=1"),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[tuple[float, float]]] = {label: [] for label in VARIANTS}
    for _ in range(args.rounds):
        for label, (env, java) in VARIANTS.items():
            done = subprocess.run([sys.executable, "-c", _CHILD, java], env={**os.environ, **env},
                                  capture_output=True, text=True, check=True)
            got = json.loads(done.stdout.strip().splitlines()[-1])
            times[label].append((got["session"], got["first_job"]))
            print(f"{label:18} session {got['session']:5.2f} s, first job {got['first_job']:5.2f} s", flush=True)
    print("\n| variant | session up | first job |\n|---|---|---|")
    for label, runs in times.items():
        sessions, jobs = [s for s, _ in runs], [j for _, j in runs]
        print(f"| {label} | {min(sessions):.1f} to {max(sessions):.1f} s | {min(jobs):.1f} to {max(jobs):.1f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
