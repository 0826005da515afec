"""A/B of ``sluice dump`` between this checkout and another build of sluice, alternating, one core.

This machine's speed drifts by a third over minutes, so a change is timed against the build
before it in turns: A, B, A, B ... on each file, the whole process each time, best of the rounds.
The other build is a source tree with its extension built in place, e.g. for commit REV::

    git worktree add ../sluice-before REV
    (cd ../sluice-before && ../sluice/.venv/bin/python setup.py -q build_ext --inplace)
    .venv/bin/python bench/ab.py ../sluice-before                    # JSON lines, the four W files
    .venv/bin/python bench/ab.py ../sluice-before --format none --rounds 5

The files default to the W1 and W2 binlogs of ``bench/decode.py``'s full run (run that first).
Both sides run with this checkout's interpreter and its dependencies; only ``sluice`` differs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FULL = ROOT / "bench" / "out" / "full"
CORE = "0"


def default_files() -> list[Path]:
    import json

    out = []
    for flavor in ("mysql", "mariadb"):
        spec = FULL / flavor / "workloads.json"
        if spec.exists():
            for names in json.loads(spec.read_text()).values():
                out += [FULL / flavor / "binlog" / name for name in names]
    return out


def run_once(src: Path, path: Path, extra: list[str]) -> float:
    """Seconds of one ``sluice dump`` of ``path`` with the sluice of ``src``, pinned to one core."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    started = time.perf_counter()
    subprocess.run(["taskset", "-c", CORE, sys.executable, "-c", "import sys; from sluice.cli import main; "
                    "sys.exit(main())", "dump", *extra, str(path)], env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("other", type=Path, help="the other sluice source tree (its src/ holds the built package)")
    parser.add_argument("files", nargs="*", type=Path, help="binlog files (default: bench/decode.py's W1 and W2)")
    parser.add_argument("--rounds", type=int, default=3, help="turns per side and file (default 3)")
    parser.add_argument("--format", default="jsonl", choices=("jsonl", "none"), help="sluice dump --format")
    args = parser.parse_args()
    files = args.files or default_files()
    if not files:
        raise SystemExit("no files: run bench/decode.py first, or name binlog files")
    sides = {"this": ROOT / "src", "other": args.other.resolve() / "src"}
    if not (sides["other"] / "sluice").is_dir():
        raise SystemExit(f"{sides['other']} holds no sluice package")
    extra = [] if args.format == "jsonl" else ["--format", "none"]
    print("| file | this (best) | other (best) | other / this | this, every round | other, every round |")
    print("|---|---|---|---|---|---|")
    for path in files:
        times: dict[str, list[float]] = {"this": [], "other": []}
        for _ in range(args.rounds):
            for side, src in sides.items():
                times[side].append(run_once(src, path, extra))
        this, other = min(times["this"]), min(times["other"])
        print(f"| {path.parent.parent.name}/{path.name} | {this:.2f} s | {other:.2f} s | {other / this:.2f}x | "
              f"{' '.join(f'{t:.2f}' for t in times['this'])} | {' '.join(f'{t:.2f}' for t in times['other'])} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
