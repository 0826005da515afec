"""The memory of one delta-rs MERGE, as sluice run's driver makes it: N keys into a mirror of N rows.

The MERGE source is bench.big's shape (``id INT, k INT, c CHAR(60), pad CHAR(40)`` and the delete
flag, about 115 bytes a row in Arrow), every key updated: what the driver MERGEs after one
``UPDATE bench.big SET k = k + 1`` of every row. Each size runs in a process of its own, which
reports its RSS before the MERGE and its peak (``ru_maxrss``), with DataFusion's memory pool left
unbounded and, with ``--spill``, bounded to that many bytes (``max_spill_size``), to show whether
delta-rs can MERGE a source larger than the pool.

    .venv/bin/python bench/merge_memory.py --rows 200000,400000,800000
    .venv/bin/python bench/merge_memory.py --rows 400000 --spill 67108864
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa


def _rss_mb() -> int:
    with open("/proc/self/status") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) // 1024


def _table(n: int, plus: int) -> pa.Table:
    ids = np.arange(1, n + 1, dtype=np.int32)
    return pa.table({"id": ids, "k": (ids + plus).astype(np.int32),
                     "c": pa.array([f"{i:060d}" for i in range(n)]), "pad": pa.array(["x" * 40] * n)})


def one(n: int, spill: int | None) -> None:
    """MERGE N updated keys into a new mirror of N rows; print what it took."""
    from deltalake import DeltaTable, write_deltalake

    folder = tempfile.mkdtemp(prefix="sluice-merge-")
    try:
        write_deltalake(folder, _table(n, 0))
        source = _table(n, 1).append_column("_sluice_delete", pa.array(np.zeros(n, dtype=bool)))
        before = _rss_mb()
        merger = DeltaTable(folder).merge(source, "target.id = source.id", source_alias="source",
                                          target_alias="target", **({"max_spill_size": spill} if spill else {}))
        merger = merger.when_matched_delete("source._sluice_delete").when_matched_update(
            {"k": "source.k", "c": "source.c", "pad": "source.pad"}, "NOT source._sluice_delete"
        ).when_not_matched_insert({"id": "source.id", "k": "source.k", "c": "source.c", "pad": "source.pad"},
                                  "NOT source._sluice_delete")
        started = time.perf_counter()
        try:
            merger.execute()
            outcome = f"{time.perf_counter() - started:.1f}s"
        except Exception as e:  # the pool too small: delta-rs' hash join cannot spill its source
            outcome = f"failed: {str(e).splitlines()[0][:160]}"
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(f"| {n:,} | {source.nbytes / 1e6:,.0f} MB | {'unbounded' if spill is None else f'{spill >> 20} MiB'} "
              f"| {before:,} -> {peak:,} MB | {(peak - before) * 1e6 / n:,.0f} B | {outcome} |", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", default="200000,400000,800000", help="comma-separated numbers of keys")
    parser.add_argument("--spill", type=int, help="DataFusion's memory pool for the MERGE, bytes (default: none)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        one(args.one, args.spill)
        return 0
    print("| keys | source (Arrow) | memory pool | RSS before -> peak | per key | MERGE |")
    print("|---|---|---|---|---|---|")
    for n in args.rows.split(","):
        spill = ["--spill", str(args.spill)] if args.spill else []
        subprocess.run([sys.executable, __file__, "--one", n, *spill], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
