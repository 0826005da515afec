"""Where a snapshot chunk's Python time goes, column by column: each column builder of
``sluice.spark.snapshot.chunk_arrow`` timed on a whole table's text rows.

On the decoding benchmark's server (``bench/decode.py``'s workloads, generated first if missing),
the table is read as one snapshot chunk, as a task reads it (between its watermarks, the text rows
kept as their payloads, then cut into columns by the compiled core), and each column's builder turns its texts
into the mirror's Arrow column; the best of ``--repeat`` runs per column is printed. A builder that
converts value by value in Python shows here as the column that costs microseconds a row.

Run from the repository root::

    .venv/bin/python bench/snapshot_columns.py --flavor mysql            # bench.wide (W2's table)
    .venv/bin/python bench/snapshot_columns.py --flavor mariadb --table sbtest1
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decode

from sluice.cdc.schema.given import load_schema
from sluice.cdc.snapshot.chunks import Chunk
from sluice.cdc.snapshot.reader import TablePlan, prepare_session, read_chunk_raw
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.spark.lake.table_layout import mirror_columns_for_schema
from sluice.spark.snapshot.chunk_arrow import column_builders
from sluice.spark.snapshot.text_rows import split_rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--flavor", default="mysql", choices=("mysql", "mariadb"))
    parser.add_argument("--table", default="wide", choices=("wide", "sbtest1"))
    parser.add_argument("--repeat", type=int, default=3, help="runs per column (best kept)")
    args = parser.parse_args()
    box, _files = decode.prepare(args.flavor, decode.FULL)
    try:
        given = load_schema(box.dsn("root"), lambda d, t: (d, t) == ("bench", args.table))
        (schema,) = given.catalog.tables("bench")
        columns = mirror_columns_for_schema(schema, given.flavor)
        builders = column_builders(schema, columns, given.flavor)
        with Connection.open(parse_dsn(box.dsn("root"))) as conn:
            prepare_session(conn)
            key = tuple(schema.primary_key)
            whole = Chunk("bench", args.table, 0, key, None, None)  # one chunk: the whole table
            started = time.perf_counter()
            _low, _high, result = read_chunk_raw(conn, TablePlan(schema, key, (whole,), 0), whole)
            read = time.perf_counter() - started
    finally:
        box.stop()
    started = time.perf_counter()
    values = split_rows(result.blocks, len(schema.columns))
    split = time.perf_counter() - started
    rows = len(values[0]) if values else 0
    print(f"{args.flavor} bench.{args.table}: {rows:,} rows; read with its watermarks {read:.3f} s, "
          f"cut into columns {split:.3f} s")
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
