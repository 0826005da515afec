"""The pipeline on real Spark and real servers: a mixed workload with DDL mirrored into Delta tables."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import deltalake
import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.verify.check import verify_lake
from tests.conftest import kills
from tests.integration.exactly_once import wait_for

pytestmark = pytest.mark.spark


def shop_schema(conn: Connection, db: str) -> None:
    conn.execute(f"CREATE DATABASE {db}")
    conn.execute(f"CREATE TABLE {db}.customers (id INT PRIMARY KEY, name VARCHAR(40), tier ENUM('basic','gold'))")
    conn.execute(
        f"CREATE TABLE {db}.orders (id BIGINT UNSIGNED PRIMARY KEY, customer INT, amount DECIMAL(12,2),"
        " placed DATETIME(3), note JSON)"
    )
    conn.execute(f"CREATE TABLE {db}.events (kind VARCHAR(10), n INT)")  # no primary key


def shop_workload(conn: Connection, db: str, start: int, count: int) -> None:
    for i in range(start, start + count):
        conn.execute("BEGIN")
        conn.execute(f"INSERT INTO {db}.customers (id, name, tier) VALUES ({i}, 'c{i}', 'basic')")
        conn.execute(
            f"INSERT INTO {db}.orders VALUES ({i}, {i}, {i}.25, '2026-01-02 03:04:05.{i % 1000:03d}', "
            f"'{{\"items\": {i % 5}, \"price\": 1.50}}')"
        )
        conn.execute("COMMIT")
        if i % 3 == 0:
            conn.execute(f"UPDATE {db}.customers SET tier = 'gold', name = 'vip{i}' WHERE id = {i}")
        if i % 4 == 0:
            conn.execute(f"DELETE FROM {db}.orders WHERE id = {i}")
        if i % 5 == 0:
            conn.execute(f"INSERT INTO {db}.events VALUES ('tick', {i})")


def mirror_rows(lake: str, db: str, table: str) -> dict[Any, dict[str, Any]]:
    rows = deltalake.DeltaTable(f"{lake}/{db}/{table}").to_pyarrow_table().to_pylist()
    return {r["id"]: r for r in rows}


def source_rows(conn: Connection, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.query(sql).rows]


def test_pipeline_mirrors_a_workload_with_ddl(spark, server, tmp_path):
    db = f"pl_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        start = server_binlog_status(conn)
        shop_schema(conn, db)
        shop_workload(conn, db, 1, 40)
        conn.execute(f"ALTER TABLE {db}.customers ADD COLUMN email VARCHAR(60) AFTER name")
        conn.execute(f"UPDATE {db}.customers SET email = CONCAT(name, '@example.com') WHERE id <= 10")
        shop_workload(conn, db, 41, 20)
        config = PipelineConfig(
            source=server.dsn("repl"), lake=lake, tables=rf"{db}\..*", trigger="once",
            starting_position=f"{start.file}:{start.pos}", max_rows_per_batch=50,
        )
        stats = Pipeline(config).run(handle_signals=False)
        assert stats.batches >= 4
        customers = mirror_rows(lake, db, "customers")
        expected = source_rows(conn, f"SELECT id, name, email, tier FROM {db}.customers ORDER BY id")
        mirrored = sorted(customers.values(), key=lambda r: r["id"])
        assert [(r["id"], r["name"], r["email"], r["tier"]) for r in mirrored] == [
            (int(i), n, e, t) for i, n, e, t in expected
        ]
        orders = mirror_rows(lake, db, "orders")
        expected = source_rows(conn, f"SELECT id, amount, placed, note FROM {db}.orders ORDER BY id")
        assert sorted(orders) == [int(r[0]) for r in expected]
        for i, amount, placed, note in expected:
            row = orders[int(i)]
            assert row["amount"] == Decimal(amount)
            assert row["placed"].isoformat(sep=" ", timespec="milliseconds") == placed
            assert json.loads(row["note"]) == json.loads(note)
        assert stats.unmirrorable == {f"{db}.events"}
        verdicts = verify_lake(parse_dsn(server.dsn("root")), lake, tables=lambda d, _t: d == db)
        assert {v.table for v in verdicts} >= {"customers", "orders"}
        assert all(v.ok for v in verdicts), verdicts
        everything = deltalake.DeltaTable(f"{lake}/_sluice/changes").to_pyarrow_table().to_pylist()
        log = [r for r in everything if r["op"] != "ddl"]
        ddl = [json.loads(r["ddl"])["sql"] for r in everything if r["op"] == "ddl"]
        assert sum("ADD COLUMN email" in sql for sql in ddl) == 1, ddl
        keys = [(r["file"], r["pos"], r["row"]) for r in log]
        assert len(keys) == len(set(keys))
        assert sum(1 for r in log if r["table"] == "events") == 12
        assert sum(1 for r in log if r["table"] == "customers") == 60 + 20 + 10
        # A second run finds nothing new and changes nothing.
        again = Pipeline(config).run(handle_signals=False)
        assert again.rows == 0
        assert len(deltalake.DeltaTable(f"{lake}/_sluice/changes").to_pyarrow_table()) == len(everything)
        conn.execute(f"DROP DATABASE {db}")


FLOATS = ["1.5", "-3.4e38", "0.1", "0"]
DOUBLES = ["1.7976931348623157e308", "5e-324", "-2.5", "0.1", "123456.789"]
BINARIES = ["'ab'", "X'ff00'", "''"]
VARBINARIES = ["X'00'", "''", "'plain'"]
SETS = ["''", "'x'", "'y,zé'", "'x,y,zé'"]
DOCUMENTS = ["""'{"a": [1, "two", null, true], "f": 1.25}'""", "'[]'", """'"text"'""", "'{}'"]


def _many_types_row(rng: random.Random, i: int) -> str:
    """One row of FLOAT, DOUBLE, binary strings, a SET and a JSON document as SQL values (NULLs among them)."""
    def pick(values: list[str]) -> str:
        return "NULL" if rng.random() < 0.1 else rng.choice(values)

    blob = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
    values = [pick(FLOATS), pick(DOUBLES), pick([f"X'{blob.hex()}'"]), pick(BINARIES), pick(VARBINARIES),
              pick(SETS), pick(DOCUMENTS)]
    return f"({i}, {', '.join(values)})"


def test_floats_binary_strings_sets_and_json_documents_reach_the_mirror(spark, server3, tmp_path):
    """A table of these types is MERGEd from the compiled core's typed images (a number's, a
    base64's, a document's text, a SET's members): batch after batch, into rows already mirrored,
    the mirror must equal the server's table."""
    db = f"ty_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    rng = random.Random(11)
    with Connection.open(parse_dsn(server3.dsn("root"))) as conn:
        start = server_binlog_status(conn)
        conn.execute(f"CREATE DATABASE {db} DEFAULT CHARACTER SET utf8mb4")
        conn.execute(f"CREATE TABLE {db}.m (id INT PRIMARY KEY, f FLOAT, g DOUBLE, bl BLOB, bn BINARY(4), "
                     "vb VARBINARY(16), s SET('x','y','zé'), j JSON)")
        for first in range(1, 121, 20):
            rows = ", ".join(_many_types_row(rng, i) for i in range(first, first + 20))
            conn.execute(f"INSERT INTO {db}.m VALUES {rows}")
        for i in range(1, 121, 3):
            conn.execute(f"REPLACE INTO {db}.m VALUES {_many_types_row(rng, i)}")
            if i % 2:
                conn.execute(f"UPDATE {db}.m SET g = -g, s = 'y' WHERE id = {i + 1}")
            if i % 5 == 0:
                conn.execute(f"DELETE FROM {db}.m WHERE id = {i + 2}")
        config = PipelineConfig(
            source=server3.dsn("repl"), lake=lake, tables=rf"{db}\..*", trigger="once",
            starting_position=f"{start.file}:{start.pos}", max_rows_per_batch=60,
        )
        stats = Pipeline(config).run(handle_signals=False)
        assert stats.batches >= 3 and f"{db}.m" not in stats.unmirrorable
        verdicts = verify_lake(parse_dsn(server3.dsn("root")), lake, tables=lambda d, _t: d == db)
        assert [v.table for v in verdicts] == ["m"] and all(v.ok for v in verdicts), verdicts
        conn.execute(f"DROP DATABASE {db}")


def _committed_since(lake: str, since: float) -> bool:
    """Whether the change log of ``lake`` has a commit written at ``since`` or later."""
    for commit in (Path(lake) / "_sluice" / "changes" / "_delta_log").glob("*.json"):
        with contextlib.suppress(FileNotFoundError):  # an old commit file cleaned up meanwhile
            if commit.stat().st_mtime >= since:
                return True
    return False


KILLS = kills(3)  # the chaos suite kills during DDL too, on both flavors (SLUICE_TEST_KILLS for more)


@pytest.mark.slow
@pytest.mark.mysql
def test_kill_9_of_the_driver_loses_and_repeats_nothing(mysql_server, tmp_path):
    """kill -9 of `sluice run` at random moments while the workload runs, each once the run has
    committed a batch of its own (so past Spark's start, however long that takes); the end state is
    exact and the change log is what `sluice tail` reads. MariaDB's driver is killed by the chaos suite."""
    server = mysql_server
    db = f"pk_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        start = server_binlog_status(conn)
        shop_schema(conn, db)
    done = threading.Event()
    failure: list[BaseException] = []

    def workload() -> None:
        try:
            with Connection.open(parse_dsn(server.dsn("root"))) as conn:
                n = 1
                while not done.is_set():
                    shop_workload(conn, db, n, 10)
                    n += 10
                    time.sleep(0.2)
        except BaseException as exc:
            failure.append(exc)

    writer = threading.Thread(target=workload, daemon=True)
    writer.start()
    args = [
        sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("repl"), "--lake", lake,
        "--tables", rf"{db}\..*", "--from", f"{start.file}:{start.pos}", "--max-rows-per-batch", "200",
    ]
    rng = random.Random(11)
    try:
        for _ in range(KILLS):
            since = time.time()
            proc = subprocess.Popen([*args, "--trigger", "1s"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)
            wait_for(lambda since=since: _committed_since(lake, since), proc, 300, every=0.1)
            time.sleep(rng.uniform(0.0, 3.0))  # then a random moment of the batches that follow
            if proc.poll() is not None:
                pytest.fail(f"sluice run exited by itself: {proc.communicate()[1][-3000:]}")
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate()
    finally:
        done.set()
        writer.join(60)
    assert not failure, failure
    final = subprocess.run([*args, "--trigger", "once"], capture_output=True, timeout=600)
    assert final.returncode == 0, final.stderr.decode()[-3000:]
    tail = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--from", f"{start.file}:{start.pos}",
         "--until-end", "--tables", rf"{db}\..*"],
        capture_output=True, timeout=300, check=False,
    )
    assert tail.returncode == 0, tail.stderr.decode()[-3000:]
    expected = [json.loads(line) for line in tail.stdout.decode().splitlines()]
    log = [r for r in deltalake.DeltaTable(f"{lake}/_sluice/changes").to_pyarrow_table().to_pylist()
           if r["op"] != "ddl"]
    keys = sorted((r["file"], r["pos"], r["row"]) for r in log)
    assert len(keys) == len(set(keys)), "a change is in the change log twice"
    assert keys == sorted((c["file"], c["pos"], c["row"]) for c in expected), "the change log lost changes"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        customers = source_rows(conn, f"SELECT id, name, tier FROM {db}.customers ORDER BY id")
        orders = source_rows(conn, f"SELECT id, amount FROM {db}.orders ORDER BY id")
        conn.execute(f"DROP DATABASE {db}")
    mirrored = sorted(mirror_rows(lake, db, "customers").values(), key=lambda r: r["id"])
    assert [(r["id"], r["name"], r["tier"]) for r in mirrored] == [(int(i), n, t) for i, n, t in customers]
    mirrored_orders = mirror_rows(lake, db, "orders")
    assert sorted((k, r["amount"]) for k, r in mirrored_orders.items()) == [(int(i), Decimal(a)) for i, a in orders]


@pytest.mark.mariadb
def test_a_failing_batch_ends_sluice_run_with_its_error_in_one_line(mariadb_server, tmp_path):
    """A batch that fails (here: a mirror whose column another writer changed to another type)
    ends the run with exit code 1 and sluice's own error, without Spark's or py4j's tracebacks.
    The error's way out is the driver's, whatever the server: one flavor runs it."""
    server = mariadb_server
    import deltalake
    import pyarrow as pa

    db = f"pf_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
        conn.execute(f"INSERT INTO {db}.t VALUES (1, 1)")
        args = [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("root"), "--lake", lake,
                "--tables", rf"{db}\..*", "--trigger", "once"]
        first = subprocess.run(args, capture_output=True, text=True, timeout=600)
        assert first.returncode == 0, first.stderr
        deltalake.write_deltalake(f"{lake}/{db}/t", pa.table({"id": pa.array([1], pa.int32()), "v": ["one"]}),
                                  mode="overwrite", schema_mode="overwrite")
        conn.execute(f"INSERT INTO {db}.t VALUES (2, 2)")
        failed = subprocess.run(args, capture_output=True, text=True, timeout=600)
        conn.execute(f"DROP DATABASE {db}")
    assert failed.returncode == 1, failed.stderr
    lines = [line for line in failed.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith(f"sluice: error: column 'v' of {db}.t is now int"), failed.stderr
    assert all(line.startswith("sluice") for line in lines), failed.stderr


@pytest.mark.mariadb
def test_a_lake_of_the_layout_before_the_app_marker_is_continued_in_place(spark, mariadb_server, tmp_path):
    """A lake whose checkpoint an earlier version wrote (no ``sluice-app.json``: its batches carry the
    pipeline id as their app id) goes on under that app id, exactly once, and is not snapshotted again."""
    from sluice.spark.pipeline.lake_state import APP_MARKER

    server = mariadb_server
    db = f"up_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
        conn.execute(f"INSERT INTO {db}.t VALUES " + ", ".join(f"({i}, {i})" for i in range(1, 21)))
        config = PipelineConfig(source=server.dsn("repl"), lake=lake, tables=rf"{db}\..*", trigger="once",
                                snapshot="initial")
        first = Pipeline(config)
        first.run(handle_signals=False)
        for i in range(21, 31):
            conn.execute(f"INSERT INTO {db}.t VALUES ({i}, {i})")
        assert first.run(handle_signals=False).rows == 10
        marker = tmp_path / "lake" / "_sluice" / "checkpoint" / APP_MARKER
        assert json.loads(marker.read_text())["app_id"] == first.pipeline_id
        marker.unlink()  # the checkpoint as the earlier layout left it
        conn.execute(f"UPDATE {db}.t SET v = -v WHERE id > 25")
        again = Pipeline(config)
        assert again.app_id == first.pipeline_id and again.resume_at is None
        stats = again.run(handle_signals=False)
        assert stats.rows == 5
        log = [r for r in deltalake.DeltaTable(f"{lake}/_sluice/changes").to_pyarrow_table().to_pylist()
               if r["op"] != "ddl"]
        keys = [(r["file"], r["pos"], r["row"]) for r in log]
        assert len(keys) == len(set(keys)) == 15
        assert {r["id"]: r["v"] for r in mirror_rows(lake, db, "t").values()} == {
            int(i): int(v) for i, v in source_rows(conn, f"SELECT id, v FROM {db}.t")}
        conn.execute(f"DROP DATABASE {db}")
