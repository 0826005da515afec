"""What a commit costs as a Delta table's log grows, with delta-rs' cleanup at every commit and without.

For each store (a local folder, and the project's S3 test server) a change-log table gets ``--entries``
log entries past a checkpoint (copies of one small commit, written straight into ``_delta_log``),
then ten commits of no files are timed (``DeltaTable`` then ``create_write_transaction``), once with
``delta.enableExpiredLogCleanup`` left at Delta's default (true) and once set to false; a new table
is timed beside them.

    .venv/bin/python bench/log_commits.py --entries 20000 --s3-entries 4000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time

from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from sluice.lake.changelog.schema import CHANGELOG_SCHEMA
from sluice.lake.layout import open_lake
from sluice.lake.maintenance.steps import COMMIT_LOG_CLEANUP
from sluice.sandbox.s3 import S3Sandbox

BODY = b'{"commitInfo":{"timestamp":1795857294519,"operation":"WRITE","operationParameters":{"mode":"Append"}}}\n'


def seconds_per_commit(uri: str, options: dict[str, str] | None, entries: int, cleanup: bool) -> float:
    write_deltalake(uri, CHANGELOG_SCHEMA.empty_table(), storage_options=options)
    store = open_lake(uri, options or {})
    for version in range(1, entries + 1):
        store.put(f"_delta_log/{version:020d}.json", BODY)
    dt = DeltaTable(uri, storage_options=options)
    dt.create_checkpoint()
    if not cleanup:
        dt.alter.set_table_properties({COMMIT_LOG_CLEANUP: "false"})
    times = []
    for i in range(10):
        began = time.perf_counter()
        DeltaTable(uri, storage_options=options).create_write_transaction(
            [], "append", CHANGELOG_SCHEMA, commit_properties=CommitProperties(app_transactions=[Transaction("a", i)]))
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--entries", type=int, default=20_000, help="log entries on the local table")
    parser.add_argument("--s3-entries", type=int, default=4_000, help="log entries on the S3 table")
    args = parser.parse_args()
    print("| store | log entries | cleanup at every commit | without it | a new table |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as root:
        runs = [seconds_per_commit(f"{root}/{name}", None, n, c)
                for name, n, c in (("on", args.entries, True), ("off", args.entries, False), ("new", 0, True))]
        print(f"| local disk | {args.entries:,} | {runs[0]:.3f} s | {runs[1]:.3f} s | {runs[2]:.3f} s |")
    s3 = S3Sandbox.start()
    try:
        base, options = f"s3://{s3.bucket}", s3.storage_options()
        runs = [seconds_per_commit(f"{base}/{name}", options, n, c)
                for name, n, c in (("on", args.s3_entries, True), ("off", args.s3_entries, False), ("new", 0, True))]
        print(f"| S3 test server | {args.s3_entries:,} | {runs[0]:.3f} s | {runs[1]:.3f} s | {runs[2]:.3f} s |")
    finally:
        s3.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
