"""Where the catch-up's driver memory goes: ``bench/catchup.py``'s 4M changes, each process sampled.

On the files ``bench/catchup.py`` keeps (written on first use), this runs the same
``sluice run --trigger once`` twice and samples the RSS of each of its processes every second
(``ps``): the driver's Python, its JVM, the Python workers. The first run has the default
maintenance, the second ``[maintenance] enabled = false``. Then, on copies of the second lake's
change log cut to its first N files, it times one ``optimize.compact`` (the upkeep's compaction:
32 MB target, ZSTD level 1) per N, each in a fresh process, and reports its peak RSS: whether one
compaction's memory grows with the files waiting for it.

Run from the repository root::

    .venv/bin/python bench/catchup_memory.py --flavor mysql
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import catchup
import decode

# The peak is the process's own VmHWM: ru_maxrss would keep the forking parent's peak across exec.
COMPACT = """
import sys, time
from deltalake import DeltaTable
from sluice.lake.data_files import LAKE_WRITER
def hwm():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) // 1024
dt = DeltaTable(sys.argv[1])
before = hwm()
started = time.perf_counter()
m = dt.optimize.compact(target_size=32 << 20, writer_properties=LAKE_WRITER)
print(time.perf_counter() - started, m["numFilesRemoved"], m["numFilesAdded"], before, hwm())
"""


def _tree(root: int) -> list[tuple[int, str, int]]:
    """(pid, command name, RSS in KiB) of ``root`` and every process below it."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,rss=,comm="], capture_output=True, text=True).stdout
    procs = [line.split(None, 3) for line in out.splitlines() if len(line.split(None, 3)) == 4]
    inside = {root}
    grown = True
    while grown:
        grown = False
        for pid, ppid, _, _ in procs:
            if int(ppid) in inside and int(pid) not in inside:
                inside.add(int(pid))
                grown = True
    return [(int(pid), comm, int(rss)) for pid, _, rss, comm in procs if int(pid) in inside]


def sampled(command: list[str]) -> dict[str, object]:
    """Run ``command``; its seconds, the peak RSS (MB) of its driver, its JVM and its largest worker,
    and the last lines it wrote to standard error."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peaks = {"driver": 0, "jvm": 0, "worker": 0}
    last: list[float] = [0.0]  # when the driver's peak was reached, seconds from the start

    def sample() -> None:
        while proc.poll() is None:
            for pid, comm, rss in _tree(proc.pid):
                role = "driver" if pid == proc.pid else "jvm" if comm == "java" else "worker"
                if rss > peaks[role]:
                    peaks[role] = rss
                    if role == "driver":
                        last[0] = time.perf_counter() - started
            time.sleep(1.0)

    thread = threading.Thread(target=sample)
    thread.start()
    stderr = proc.stderr.read().decode(errors="replace")  # type: ignore[union-attr]
    proc.wait()
    thread.join()
    if proc.returncode != 0:
        raise SystemExit(f"sluice run failed: {stderr.strip().splitlines()[-1:]}")
    return {"seconds": time.perf_counter() - started, "driver_peak_at": last[0],
            **{f"{role}_mb": kib / 1024 for role, kib in peaks.items()},
            "stderr_tail": "\n".join(stderr.splitlines()[-5:])}


def compactions(changes: Path, counts: list[int]) -> list[dict[str, object]]:
    """One compaction per count, of a copy of the change log's first ``count`` data files."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    from sluice.lake.data_files import LAKE_WRITER

    files = sorted(DeltaTable(str(changes)).file_uris())
    out: list[dict[str, object]] = []
    for count in sorted({min(c, len(files)) for c in counts}):
        copy = changes.parent / f"changes-first-{count}"
        shutil.rmtree(copy, ignore_errors=True)
        for name in files[:count]:
            write_deltalake(str(copy), pq.read_table(name), mode="append", writer_properties=LAKE_WRITER)
        line = subprocess.run([sys.executable, "-c", COMPACT, str(copy)], capture_output=True, text=True,
                              check=True).stdout.split()
        seconds, removed, added, before, peak = float(line[0]), *map(int, line[1:])
        out.append({"files": count, "seconds": seconds, "removed": removed, "added": added,
                    "rss_before_mb": before, "max_rss_mb": peak})
        shutil.rmtree(copy, ignore_errors=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--flavor", default="mysql", choices=("mysql", "mariadb"))
    parser.add_argument("--files", default="20,40,80", help="change-log files per compaction, comma-separated")
    args = parser.parse_args()
    decode.precompile()
    box, files, changes = catchup.prepare(args.flavor)
    off = catchup.OUT / "maintenance-off.toml"
    off.write_text("[maintenance]\nenabled = false\n")
    try:
        runs = {}
        for name, extra in (("default maintenance", []), ("maintenance off", ["--config", str(off)])):
            lake = catchup.OUT / f"lake-memory-{args.flavor}"
            shutil.rmtree(lake, ignore_errors=True)
            runs[name] = sampled([*decode.SLUICE, "run", "--source", box.dsn("repl"), "--tables",
                                  r"bench\.(sbtest1|w1_.*)", "--trigger", "once", "--lake", str(lake),
                                  "--from", f"{files[0]}:4", *extra])
    finally:
        box.stop()
    print(f"{changes:,} changes, {args.flavor}")
    print("| run | seconds | driver peak | driver peak reached at | JVM peak | largest worker |")
    print("|---|---|---|---|---|---|")
    for name, r in runs.items():
        print(f"| {name} | {r['seconds']:.1f} | {r['driver_mb']:,.0f} MB | {r['driver_peak_at']:.0f} s "
              f"| {r['jvm_mb']:,.0f} MB | {r['worker_mb']:,.0f} MB |")
    print("\n| change-log files copied | files compacted → written | seconds | RSS before | max RSS |")
    print("|---|---|---|---|---|")
    for c in compactions(lake / "_sluice" / "changes", [int(n) for n in args.files.split(",")]):
        print(f"| {c['files']} | {c['removed']} → {c['added']} | {c['seconds']:.1f} "
              f"| {c['rss_before_mb']} MB | {c['max_rss_mb']} MB |")
    shutil.rmtree(lake, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
