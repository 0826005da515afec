"""The memory of one MERGE, as sluice run's driver makes it: N keys into a mirror of N rows.

The MERGE source is bench.big's shape (``id INT, k INT, c CHAR(60), pad CHAR(40)`` and the delete
flag, about 115 bytes a row in Arrow), every key updated: what the driver MERGEs after one
``UPDATE bench.big SET k = k + 1`` of every row. Each size runs in a process of its own, which
reports its RSS before the MERGE and its peak during it (``VmHWM``, reset when the MERGE starts).
delta-rs' MERGE runs with DataFusion's memory pool left unbounded or, with ``--spill``, bounded to
that many bytes (``max_spill_size``), to show whether it can MERGE a source larger than the pool.
``--passes`` runs sluice's MERGE in passes (``sluice.lake.mirror.passes``) instead, the source in
pieces of 40,000 rows as a huge batch's part sources come. ``--change-feed`` creates the mirror with
Delta's change feed on, as sluice's mirrors are (both MERGEs then write the change data). The wall
and CPU seconds are the MERGE's alone.

    .venv/bin/python bench/merge_memory.py --rows 200000,400000,800000
    .venv/bin/python bench/merge_memory.py --rows 400000 --spill 67108864
    .venv/bin/python bench/merge_memory.py --rows 2000000 --change-feed --passes
"""

from __future__ import annotations

import argparse
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


def _reset_peak() -> None:
    """Start the peak RSS (VmHWM) over from now: building the source's Python strings peaks above the MERGE."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def _peak_mb() -> int:
    with open("/proc/self/status") as status:
        return int(status.read().split("VmHWM:")[1].split()[0]) // 1024


def _table(n: int, plus: int) -> pa.Table:
    ids = np.arange(1, n + 1, dtype=np.int32)
    return pa.table({"id": ids, "k": (ids + plus).astype(np.int32),
                     "c": pa.array([f"{i:060d}" for i in range(n)]), "pad": pa.array(["x" * 40] * n)})


def _passes(folder: str, source: pa.Table, change_feed: bool) -> None:
    from deltalake import DeltaTable

    from sluice.lake.mirror.passes import merge_in_passes
    from sluice.lake.mirror.pieces import AFTER_PENDING, TablePiece
    from sluice.lake.storage import lake_store

    pieces = [TablePiece(source.slice(at, 40_000), AFTER_PENDING + i)
              for i, at in enumerate(range(0, source.num_rows, 40_000))]
    merge_in_passes(DeltaTable(folder), folder, lake_store(folder.rsplit("/", 1)[0]), pieces, "id",
                    app_id="bench", batch_id=1, file_rows=200_000, change_feed=change_feed)


def one(n: int, spill: int | None, passes: bool = False, change_feed: bool = False) -> None:
    """MERGE N updated keys into a new mirror of N rows; print what it took."""
    from deltalake import DeltaTable, write_deltalake

    root = tempfile.mkdtemp(prefix="sluice-merge-")
    folder = f"{root}/mirror"
    try:
        write_deltalake(folder, _table(n, 0),
                        configuration={"delta.enableChangeDataFeed": "true"} if change_feed else None)
        source = _table(n, 1).append_column("_sluice_delete", pa.array(np.zeros(n, dtype=bool)))
        before = _rss_mb()
        _reset_peak()
        if passes:
            cpu, started = time.process_time(), time.perf_counter()
            _passes(folder, source, change_feed)
            peak = _peak_mb()
            print(f"| {n:,} | {source.nbytes / 1e6:,.0f} MB | passes | {before:,} -> {peak:,} MB "
                  f"| {(peak - before) * 1e6 / n:,.0f} B | {time.perf_counter() - started:.1f}s "
                  f"({time.process_time() - cpu:.1f} CPU s) |", flush=True)
            return
        merger = DeltaTable(folder).merge(source, "target.id = source.id", source_alias="source",
                                          target_alias="target", **({"max_spill_size": spill} if spill else {}))
        merger = merger.when_matched_delete("source._sluice_delete").when_matched_update(
            {"k": "source.k", "c": "source.c", "pad": "source.pad"}, "NOT source._sluice_delete"
        ).when_not_matched_insert({"id": "source.id", "k": "source.k", "c": "source.c", "pad": "source.pad"},
                                  "NOT source._sluice_delete")
        cpu, started = time.process_time(), time.perf_counter()
        try:
            merger.execute()
            outcome = f"{time.perf_counter() - started:.1f}s ({time.process_time() - cpu:.1f} CPU s)"
        except Exception as e:  # the pool too small: delta-rs' hash join cannot spill its source
            outcome = f"failed: {str(e).splitlines()[0][:160]}"
        peak = _peak_mb()
        print(f"| {n:,} | {source.nbytes / 1e6:,.0f} MB | {'unbounded' if spill is None else f'{spill >> 20} MiB'} "
              f"| {before:,} -> {peak:,} MB | {(peak - before) * 1e6 / n:,.0f} B | {outcome} |", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", default="200000,400000,800000", help="comma-separated numbers of keys")
    parser.add_argument("--spill", type=int, help="DataFusion's memory pool for the MERGE, bytes (default: none)")
    parser.add_argument("--passes", action="store_true", help="sluice's MERGE in passes instead of delta-rs'")
    parser.add_argument("--change-feed", action="store_true", help="a mirror with Delta's change feed on")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        one(args.one, args.spill, args.passes, args.change_feed)
        return 0
    print("| keys | source (Arrow) | memory pool | RSS before -> peak | per key | MERGE |")
    print("|---|---|---|---|---|---|")
    for n in args.rows.split(","):
        flags = (["--spill", str(args.spill)] if args.spill else []) + (["--passes"] if args.passes else []) + (
            ["--change-feed"] if args.change_feed else [])
        subprocess.run([sys.executable, __file__, "--one", n, *flags], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
