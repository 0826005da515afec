"""What Delta's Change Data Feed costs a mirror's MERGE: the same batches into a table with the
property on and into one without, alternating, on local disk.

    .venv/bin/python bench/change_feed.py --rows 200000 --batch 1000 --batches 10

Each batch updates ``--batch`` random keys of a ``--rows`` table through delta-rs' MERGE (upsert on
the primary key, as a mirror's MERGE does: the batch's key range in the predicate); the figures are
the median seconds of a MERGE and the bytes each writes (data files, plus ``_change_data`` files with
the feed on). It measures delta-rs' MERGE with and without the property, not the rest of a batch.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from sluice.lake.maintenance.change_feed import mirror_configuration


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*.parquet"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--batches", type=int, default=10)
    args = parser.parse_args()
    rng = random.Random(7)
    seconds: dict[bool, list[float]] = {False: [], True: []}
    written: dict[bool, list[int]] = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="sluice-bench-cdf-") as tmp:
        tables = {}
        for feed in (False, True):
            path = Path(tmp) / ("feed" if feed else "plain")
            ids = pa.array(range(args.rows), pa.int64())
            texts = pa.array([f"row {i}" for i in range(args.rows)])
            write_deltalake(str(path), pa.table({"id": ids, "v": ids, "s": texts}),
                            configuration=mirror_configuration(feed))
            tables[feed] = path
        for n in range(args.batches):
            keys = sorted(rng.sample(range(args.rows), args.batch))
            source = pa.table({"id": pa.array(keys, pa.int64()), "v": pa.array([-k - n for k in keys], pa.int64()),
                               "s": pa.array([f"batch {n}"] * len(keys))})
            for feed in ((False, True) if n % 2 == 0 else (True, False)):
                path = tables[feed]
                before = _size(path)
                started = time.perf_counter()
                (DeltaTable(str(path)).merge(source, f"target.id = source.id AND target.id >= {keys[0]} AND "
                                             f"target.id <= {keys[-1]}", source_alias="source", target_alias="target")
                 .when_matched_update_all().when_not_matched_insert_all().execute())
                seconds[feed].append(time.perf_counter() - started)
                written[feed].append(_size(path) - before)
    out = {
        "rows": args.rows, "batch": args.batch, "batches": args.batches,
        "merge_s_without": round(statistics.median(seconds[False]), 4),
        "merge_s_with": round(statistics.median(seconds[True]), 4),
        "bytes_without": int(statistics.median(written[False])),
        "bytes_with": int(statistics.median(written[True])),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
