"""Stream a range of binlog files from a live server with python-mysql-replication, touching every value.

Runs in the benchmark's own virtual environment (``bench/out/venv-pmr``), not in sluice's: it is the
reference the decoding benchmark compares against. Prints one JSON object: rows, values, seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import RotateEvent
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--server-id", type=int, default=4242)
    parser.add_argument("files", nargs="+", help="binlog file names, in order")
    args = parser.parse_args()
    wanted = set(args.files)
    stream = BinLogStreamReader(
        connection_settings={"host": args.host, "port": args.port, "user": args.user, "passwd": args.password},
        server_id=args.server_id,
        log_file=args.files[0],
        log_pos=4,
        resume_stream=True,
        blocking=False,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, RotateEvent],
    )
    rows = values = 0
    started = time.perf_counter()
    try:
        for event in stream:
            if isinstance(event, RotateEvent):
                if event.next_binlog not in wanted:
                    break
                continue
            for row in event.rows:
                rows += 1
                for key in ("values", "before_values", "after_values"):
                    image = row.get(key)
                    if image:
                        for value in image.values():
                            values += 1 if value is not None else 0
    except Exception as exc:  # reported as a failure in the table, not a crash of the benchmark
        seconds = time.perf_counter() - started
        print(json.dumps({"rows": rows, "values": values, "seconds": seconds,
                          "error": f"{type(exc).__name__}: {exc}"[:300]}))
        return 1
    finally:
        stream.close()
    print(json.dumps({"rows": rows, "values": values, "seconds": time.perf_counter() - started}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
