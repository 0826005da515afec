"""``sluice demo``: a throwaway server, a shop workload, and the pipeline mirroring it into Delta on Spark.

Starts a sandbox server (MariaDB by default, with its default ``binlog_row_metadata=NO_LOG``, so
column names come from sluice's schema tracking), creates a small schema (customers, orders,
order items with DECIMAL, DATETIME, JSON, ENUM), and runs inserts, updates, deletes and a
mid-stream ALTER TABLE in many transactions while ``sluice run``'s pipeline streams them on Spark
``local[*]`` into a lake directory. Then ``verify`` compares every mirrored table with the server,
a summary says what happened and how to read the tables, and the server is stopped.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

HELP = """\
Run sluice end to end on this machine with nothing of your own: start a throwaway server, write
a shop workload to it (with a mid-stream ALTER TABLE) while the pipeline mirrors it on Spark into
Delta tables under --lake, check the mirror against the server (sluice verify), print a summary
and stop the server. The lake stays for you to read.
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
    """Add ``sluice demo`` and its options to the command subparsers."""
    parser = sub.add_parser(
        "demo",
        help="run the pipeline end to end against a throwaway server",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--flavor", choices=("mariadb", "mysql", "mariadb11"), default="mariadb",
                        help="server to start: the system's MariaDB, MySQL 9.x or MariaDB 11.8 (default mariadb)")
    parser.add_argument("--orders", type=int, default=300, help="number of orders the workload places (default 300)")
    parser.add_argument(
        "--lake", default="sluice-demo-lake", help="directory for the Delta tables (default ./sluice-demo-lake; "
        "a lake of an earlier demo there is replaced)"
    )
    parser.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
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
    """``sluice demo``: start a sandbox, stream a shop workload into a lake, verify it, stop the server."""
    from sluice.dsn import parse_dsn
    from sluice.io.connection import Connection
    from sluice.io.replication import server_binlog_status
    from sluice.sandbox.server import Sandbox
    from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
    from sluice.spark.verify.check import verify_lake

    lake = _fresh_lake(args.lake)
    _say(f"starting a throwaway {args.flavor} server ...")
    started = time.perf_counter()
    with Sandbox.start(args.flavor) as server:
        _say(f"{args.flavor} {server.version} at {server.dsn('repl')}")
        root = parse_dsn(server.dsn("root"))
        with Connection.open(root) as conn:
            start = server_binlog_status(conn)
        config = PipelineConfig(
            source=server.dsn("repl"), lake=str(lake), tables=r"shop\..*", trigger="1s",
            starting_position=f"{start.file}:{start.pos}", master=args.master,
        )
        pipeline = Pipeline(config, progress=_say)
        _say("starting Spark and the pipeline (the first start takes a few seconds) ...")
        try:
            query = pipeline.start()
            while query.isActive and query.lastProgress is None:  # the first (empty) batch: Spark is up
                time.sleep(0.2)
            _stream_workload(root, args.orders, pipeline, query)
        finally:
            pipeline.close()  # the lake's writer lease
        ok = _report(verify_lake(parse_dsn(server.dsn("root")), lake), pipeline.stats, lake)
    _say(f"server stopped; whole demo {time.perf_counter() - started:.0f}s")
    return 0 if ok else 1


def _say(text: str) -> None:
    print(f"sluice demo: {text}", file=sys.stderr, flush=True)


def _fresh_lake(path: str) -> Any:
    """``--lake`` made empty: a folder with something else in it than a sluice lake is refused."""
    import shutil
    from pathlib import Path

    from sluice.errors import ConfigError
    from sluice.lake.layout import open_lake

    lake = Path(path).resolve()
    if lake.exists() and any(lake.iterdir()):
        if not open_lake(str(lake)).holds_pipeline():
            raise ConfigError(f"{lake} exists and is not a sluice lake: choose another --lake")
        shutil.rmtree(lake)
    return lake


def _stream_workload(root: Any, orders: int, pipeline: Any, query: Any) -> None:
    """Write the workload in a thread while the query runs, with a progress line every 3 s; then let
    the query take everything and stop it. A failure of either side is raised here."""
    from sluice.io.connection import Connection

    failure: list[BaseException] = []
    done = threading.Event()

    def write() -> None:
        try:
            with Connection.open(root) as c:
                for batch in workload(orders):
                    for statement in filter(None, (s.strip() for s in batch.split(";"))):
                        c.execute(statement)
                    time.sleep(0.02)
        except BaseException as exc:  # reported by the main thread
            failure.append(exc)
        finally:
            done.set()

    writer = threading.Thread(target=write, name="demo-workload", daemon=True)
    writer.start()
    _say(f"writing {orders} orders in many small transactions, with an ALTER TABLE half-way ...")
    last = time.monotonic()
    while not done.wait(0.5):
        if not query.isActive:
            break
        if time.monotonic() - last > 3:
            last = time.monotonic()
            _say(pipeline.stats.line())
    if failure:
        raise failure[0]
    if query.isActive:
        query.processAllAvailable()
        query.stop()
    if pipeline.error is not None:
        raise pipeline.error


def _report(verdicts: Any, stats: Any, lake: Any) -> bool:
    """One line per verified table, the run's figures, and how to read the lake; whether all are equal."""
    seconds = time.monotonic() - stats.started
    for v in verdicts:
        status = "equal" if v.ok else f"DIFFERENT ({v.missing} missing, {v.extra} extra, {v.different} different)"
        _say(f"  verify {v.db}.{v.table}: {v.source_rows} rows on the server, {v.mirror_rows} in the lake: {status}")
    ok = all(v.ok for v in verdicts)
    latency = stats.latency(0.5) or 0.0
    _say(
        f"{stats.rows} changes ({stats.ops['insert']} inserts, {stats.ops['update']} updates, "
        f"{stats.ops['delete']} deletes) "
        f"in {stats.batches} batches, {stats.rows / max(seconds, 1e-9):,.0f} changes/s, "
        f"median commit-to-visible {latency:.1f}s; verify: "
        + ("all tables equal" if ok else "DIFFERENCES FOUND")
    )
    _say(f"the Delta tables are in {lake}: shop/customers, shop/orders, shop/order_items and _sluice/changes")
    _say(f"read one with: python -c \"import deltalake; print(deltalake.DeltaTable('{lake}/shop/orders')"
         ".to_pandas())\"")
    _say(f"  or duckdb: SELECT * FROM delta_scan('{lake}/shop/orders');  polars: pl.read_delta(...)")
    return ok
