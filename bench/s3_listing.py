"""What bringing a kept Delta table up to date costs on the S3 test server as its bucket fills up.

A pipeline's driver brings each table it writes up to date once or twice a batch
(``DeltaTable.update_incremental``: a LIST of the table's ``_delta_log/`` after its version, then a
GET per new entry). The test server (moto, in memory) walks every object of the bucket for each
LIST, so its answer takes longer as the lake writes more, as a soak's bucket does. This times
``update_incremental`` on a small table (no new commit, and one new commit) while ``--objects``
objects are put elsewhere in the bucket, median of twenty each.

    .venv/bin/python bench/s3_listing.py --objects 0,2000,5000,10000,20000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from sluice.lake.layout import open_lake
from sluice.sandbox.s3 import S3Sandbox


def _median_ms(step: Callable[[], None], before: Callable[[], None] = lambda: None, n: int = 20) -> float:
    """Milliseconds ``step`` takes, median of ``n`` (``before`` runs ahead of each, untimed)."""
    times = []
    for _ in range(n):
        before()
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", default="0,2000,5000,10000,20000",
                        help="objects in the bucket besides the table, comma-separated, increasing")
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.objects.split(","))
    with S3Sandbox.start() as s3:
        options = s3.storage_options()
        uri = f"s3://{s3.bucket}/t"
        write_deltalake(uri, pa.table({"id": [0]}), storage_options=options)
        dt = DeltaTable(uri, storage_options=options)
        filler = open_lake(f"s3://{s3.bucket}/other", options)
        put = 0
        print(f"{'objects':>8} {'update, nothing new':>20} {'update, one new commit':>23}", flush=True)
        for size in sizes:
            while put < size:
                filler.put(f"f/{put:08d}.parquet", b"x")
                put += 1
            idle = _median_ms(dt.update_incremental)
            new = _median_ms(dt.update_incremental, lambda: write_deltalake(
                uri, pa.table({"id": [1]}), mode="append", storage_options=options))
            print(f"{size:>8,} {idle:>17.1f} ms {new:>20.1f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
