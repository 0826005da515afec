"""Where a snapshot chunk's time goes, column by column: each column builder of
``sluice.spark.snapshot.chunk_arrow`` timed on a table's text rows.

On the decoding benchmark's server (``bench/decode.py``'s workloads, generated first if missing),
or with ``--snapshot-rows N`` on ``bench/snapshot.py``'s server and its N-row ``sbtest1``, the
table (its first ``--chunk-rows`` keys, if given) is read as one snapshot chunk, as a task reads it
(between its watermarks, the text rows kept as their payloads, then cut into columns by the
compiled core); the chunk's Arrow table and its Parquet data file are made as an appending task
makes them, and each column's builder turns its texts into the mirror's Arrow column: the best of
``--repeat`` runs of each is printed. A builder that converts value by value in
Python shows here as the column that costs microseconds a row.

Run from the repository root::

    .venv/bin/python bench/snapshot_columns.py --flavor mysql            # bench.wide (W2's table)
    .venv/bin/python bench/snapshot_columns.py --flavor mariadb --table sbtest1
    .venv/bin/python bench/snapshot_columns.py --snapshot-rows 5000000 --chunk-rows 250000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decode
import snapshot

from sluice.cdc.schema.given import load_schema
from sluice.cdc.table_read.chunks import Chunk
from sluice.cdc.table_read.reader import TablePlan, prepare_session, read_chunk_raw
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.data_files import write_data_file
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.snapshot.chunk_arrow import chunk_table, column_builders
from sluice.spark.snapshot.text_rows import split_rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--flavor", default="mysql", choices=("mysql", "mariadb"))
    parser.add_argument("--table", default="wide", choices=("wide", "sbtest1"))
    parser.add_argument("--repeat", type=int, default=3, help="runs per column (best kept)")
    parser.add_argument("--snapshot-rows", type=int, help="bench/snapshot.py's server and its sbtest1 of N rows")
    parser.add_argument("--chunk-rows", type=int, help="read the first N keys (integer keys from 1), not the table")
    args = parser.parse_args()
    if args.snapshot_rows:
        args.table = "sbtest1"
        box = snapshot.prepare(args.flavor, args.snapshot_rows)
    else:
        box, _files = decode.prepare(args.flavor, decode.FULL)
    try:
        given = load_schema(box.dsn("root"), lambda d, t: (d, t) == ("bench", args.table))
        (schema,) = given.catalog.tables("bench")
        columns = mirror_columns_for_schema(schema, given.flavor)
        builders = column_builders(schema, columns, given.flavor)
        with Connection.open(parse_dsn(box.dsn("root"))) as conn:
            prepare_session(conn)
            key = tuple(schema.primary_key)
            upper = None if args.chunk_rows is None else (args.chunk_rows + 1,)
            whole = Chunk("bench", args.table, 0, key, None if upper is None else (1,), upper)
            started, cpu = time.perf_counter(), time.process_time()
            _low, _high, result = read_chunk_raw(conn, TablePlan(schema, key, (whole,), 0), whole)
            read, read_cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        box.stop()
    started = time.perf_counter()
    values = split_rows(result.blocks, len(schema.columns))
    split = time.perf_counter() - started
    rows = len(values[0]) if values else 0
    import pyarrow.parquet  # noqa: F401  imported once per worker process, not per chunk

    built = written = float("inf")
    for _ in range(max(1, args.repeat)):
        started = time.perf_counter()
        table = chunk_table(columns, builders, values)
        built = min(built, time.perf_counter() - started)
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            write_data_file(table, folder)
            written = min(written, time.perf_counter() - started)
    print(f"{args.flavor} bench.{args.table}: {rows:,} rows; read with its watermarks {read:.3f} s "
          f"({read_cpu:.3f} s of this process's CPU), cut into columns {split:.3f} s, the chunk's Arrow table "
          f"{built:.3f} s, its Parquet data file {written:.3f} s")
    print("| column | type | builder (best of runs) | per row |")
    print("|---|---|---|---|")
    total = 0.0
    for column, build, texts in zip(schema.columns, builders, values, strict=True):
        best = float("inf")
        for _ in range(max(1, args.repeat)):
            started = time.perf_counter()
            build(texts)
            best = min(best, time.perf_counter() - started)
        total += best
        print(f"| {column.name} | {column.sql_type()} | {best:.3f} s | {best / max(rows, 1) * 1e6:.2f} µs |")
    print(f"| all | | {total:.3f} s | {total / max(rows, 1) * 1e6:.2f} µs |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
