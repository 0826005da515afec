"""``sluice demo``: a throwaway server, a small shop workload, and its changes streamed live.

Starts a sandbox server (MariaDB by default) with the binlog on, creates a small schema
(customers, orders, order items with DECIMAL, DATETIME, JSON, ENUM), runs inserts, updates,
deletes and a mid-stream ALTER TABLE in many transactions while ``sluice`` follows the binlog as a
replica and prints every row change as a JSON line; then prints a summary and stops the server.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

HELP = """\
Run sluice end to end on this machine with nothing of your own: start a throwaway server,
write a small workload to it and print every committed row change as it streams by.
"""

SCHEMA = """
CREATE DATABASE shop;
CREATE TABLE shop.customers (
  id INT PRIMARY KEY AUTO_INCREMENT,
  name VARCHAR(100) NOT NULL,
  tier ENUM('basic','silver','gold') NOT NULL DEFAULT 'basic',
  created DATETIME(3) NOT NULL
);
CREATE TABLE shop.orders (
  id BIGINT PRIMARY KEY AUTO_INCREMENT,
  customer_id INT NOT NULL,
  amount DECIMAL(10,2) NOT NULL,
  status ENUM('new','paid','shipped','cancelled') NOT NULL,
  details JSON,
  placed DATETIME NOT NULL
);
CREATE TABLE shop.order_items (
  order_id BIGINT NOT NULL,
  line INT NOT NULL,
  sku CHAR(8) NOT NULL,
  qty SMALLINT UNSIGNED NOT NULL,
  price DECIMAL(8,2) NOT NULL,
  PRIMARY KEY (order_id, line)
);
"""


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "demo",
        help="run sluice end to end against a throwaway server",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--flavor", choices=("mariadb", "mysql"), default="mariadb", help="server to start")
    parser.add_argument("--orders", type=int, default=40, help="number of orders the workload places")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    parser.set_defaults(handler=run)


def workload(orders: int) -> list[str]:
    """SQL batches, each one or more transactions, in the order they run."""
    batches = [SCHEMA]
    customers = ["Ada", "Grace", "Linus", "Barbara", "Edsger"]
    batches.append(
        "BEGIN;"
        + "".join(
            f"INSERT INTO shop.customers (name, tier, created) VALUES "
            f"('{n}', '{('basic', 'silver', 'gold')[i % 3]}', '2026-11-0{i + 1} 10:00:00.{i}25');"
            for i, n in enumerate(customers)
        )
        + "COMMIT;"
    )
    for o in range(1, orders + 1):
        cust = o % len(customers) + 1
        lines = "".join(
            f"INSERT INTO shop.order_items VALUES ({o}, {line}, 'S{o:04d}{line:03d}', "
            f"{line + 1}, {line * 3 + 0.99});"
            for line in range(1, 1 + o % 3 + 1)
        )
        batches.append(
            "BEGIN;"
            f"INSERT INTO shop.orders (customer_id, amount, status, details, placed) VALUES "
            f"({cust}, {o * 7.25:.2f}, 'new', '{{\"channel\": \"web\", \"coupon\": {o % 2 == 0!s}}}',"
            f" '2026-11-21 09:{o % 60:02d}:00');".replace("True", "true").replace("False", "false")
            + lines
            + "COMMIT;"
        )
        if o % 4 == 0:
            batches.append(f"UPDATE shop.orders SET status='paid' WHERE id={o - 1};")
        if o % 10 == 0:
            batches.append(f"BEGIN; DELETE FROM shop.order_items WHERE order_id={o - 5}; "
                           f"UPDATE shop.orders SET status='cancelled' WHERE id={o - 5}; COMMIT;")
        if o == orders // 2:
            batches.append("ALTER TABLE shop.customers ADD COLUMN email VARCHAR(200) NULL;")
            batches.append("UPDATE shop.customers SET email=CONCAT(LOWER(name), '@example.com'), tier='gold' "
                           "WHERE id <= 2;")
    return batches


def run(args: argparse.Namespace) -> int:
    from sluice.binlog.parser import EventParser, ParserConfig
    from sluice.cdc.jsonl import change_line
    from sluice.cdc.records import RowChangeBuilder
    from sluice.dsn import parse_dsn
    from sluice.io.connection import Connection
    from sluice.io.replication import ReplicationStream, StreamConfig, server_binlog_status
    from sluice.sandbox.server import Sandbox

    err = sys.stderr
    print(f"sluice demo: starting a throwaway {args.flavor} server ...", file=err)
    started = time.perf_counter()
    with Sandbox.start(args.flavor, settings={"binlog_row_metadata": "FULL"}) as server:
        print(f"sluice demo: {args.flavor} {server.version} at {server.dsn('repl')}", file=err)
        dsn = parse_dsn(server.dsn("repl"))
        with Connection.open(dsn) as conn:
            start = server_binlog_status(conn)
        done = threading.Event()
        end: list[Any] = []
        failure: list[BaseException] = []

        def write() -> None:
            try:
                for batch in workload(args.orders):
                    server.sql(batch)
                with Connection.open(dsn) as c:
                    end.append(server_binlog_status(c))
            except BaseException as exc:  # reported by the main thread
                failure.append(exc)
            finally:
                done.set()

        writer = threading.Thread(target=write, name="demo-workload", daemon=True)
        config = StreamConfig(connection=dsn, file=start.file, pos=start.pos, heartbeat_period=0.5)
        counts: dict[str, int] = {"insert": 0, "update": 0, "delete": 0}
        n_events = 0
        builder = RowChangeBuilder()
        writer.start()
        stream_started = time.perf_counter()
        with ReplicationStream(config) as stream:
            parser: EventParser | None = None
            for raw in stream:
                if parser is None:
                    parser = EventParser(ParserConfig(initial_checksum=stream.checksum_algorithm))
                event = parser.parse(raw.data, file=raw.file, offset=raw.pos)
                n_events += 1
                for change in builder.feed(event, raw.file, raw.pos):
                    counts[change.op] += 1
                    if not args.quiet:
                        print(change_line(change), flush=True)
                if failure:
                    raise failure[0]
                if done.is_set() and end and (stream.file, stream.next_pos) >= (end[0].file, end[0].pos):
                    break
        seconds = time.perf_counter() - stream_started
        total = sum(counts.values())
        print(
            f"sluice demo: {total} row changes ({counts['insert']} inserts, {counts['update']} updates, "
            f"{counts['delete']} deletes) from {n_events} binlog events in {seconds:.1f}s; "
            f"whole demo {time.perf_counter() - started:.1f}s. Server stopped.",
            file=err,
        )
    return 0
