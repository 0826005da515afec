"""The ``binlog`` data source on real Spark (local): archived files and a live stream on both flavors."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status

pytestmark = pytest.mark.spark

DATA = Path(__file__).parent.parent / "data"
GOLDEN = sorted(DATA.glob("*.binlog"))


def _as_record(row: Any) -> dict[str, Any]:
    return {
        "op": row["op"],
        "db": row["db"],
        "table": row["table"],
        "before": None if row["before"] is None else json.loads(row["before"]),
        "after": None if row["after"] is None else json.loads(row["after"]),
        "pk": list(row["pk"]),
        "file": row["file"],
        "pos": row["pos"],
        "row": row["row"],
        "gtid": row["gtid"],
        "ts": int(row["ts"].timestamp()),
        **({"json_diffs": json.loads(row["json_diffs"])} if row["json_diffs"] else {}),
    }


@pytest.mark.parametrize("segment", [None, "1500"], ids=["file-per-task", "small-segments"])
def test_archived_files_give_the_same_changes_as_dump(spark, segment):
    reader = spark.read.format("binlog")
    if segment is not None:
        reader = reader.option("segmentBytes", segment)  # many transaction-aligned segments per file
    rows = reader.load([str(p) for p in GOLDEN]).collect()
    got = sorted((_as_record(r) for r in rows), key=lambda c: (c["file"], c["pos"], c["row"]))
    expected = []
    for path in GOLDEN:
        expected += [json.loads(line) for line in path.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines()]
    expected.sort(key=lambda c: (c["file"], c["pos"], c["row"]))
    assert got == expected


def _stream(spark: Any, server: Any, tmp_path: Path, db: str, start: Any,
            **options: str) -> list[tuple[int, list[dict[str, Any]]]]:
    """Each batch of a stream of ``db``'s tables from ``start`` to the server's end: its partitions
    and its changes."""
    batches: list[tuple[int, list[dict[str, Any]]]] = []

    def collect(df: Any, batch_id: int) -> None:
        batches.append((df.rdd.getNumPartitions(), [_as_record(r) for r in df.collect()]))

    reader = (
        spark.readStream.format("binlog")
        .option("dsn", server.dsn("repl"))
        .option("tables", rf"{db}\..*")
        .option("startingPosition", f"{start.file}:{start.pos}")
        .option("schemaHistory", str(tmp_path / "schema-history.jsonl"))
    )
    for name, value in options.items():
        reader = reader.option(name, value)
    query = (
        reader.load().writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    return batches


def _tail(server: Any, db: str, start: Any) -> list[dict[str, Any]]:
    """``sluice tail`` of ``db``'s tables from ``start`` to the server's end."""
    tail = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--from", f"{start.file}:{start.pos}",
         "--until-end", "--tables", rf"{db}\..*"],
        capture_output=True, timeout=120, check=True,
    )
    return [json.loads(line) for line in tail.stdout.decode().splitlines()]


def _in_order(batches: list[tuple[int, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    return [c for _, batch in batches for c in sorted(batch, key=lambda c: (c["file"], c["pos"], c["row"]))]


def test_stream_in_bounded_batches_equals_tail(spark, server, tmp_path):
    db = f"sp_{uuid.uuid4().hex[:8]}"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        start = server_binlog_status(conn)
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v DECIMAL(10,2), s VARCHAR(20))")
        for i in range(30):
            values = ", ".join(f"({i * 10 + j}, {i}.{j}5, 'r{i}-{j}')" for j in range(10))
            conn.execute(f"INSERT INTO {db}.t VALUES {values}")
        conn.execute(f"UPDATE {db}.t SET v = v * 2 WHERE id % 7 = 0")
        conn.execute(f"ALTER TABLE {db}.t ADD COLUMN extra INT")
        conn.execute(f"UPDATE {db}.t SET extra = id WHERE id < 25")
        conn.execute(f"DELETE FROM {db}.t WHERE id >= 290")
    batches = _stream(spark, server, tmp_path, db, start, maxRowsPerBatch="45", rowsPerPartition="20")
    expected = _tail(server, db, start)
    streamed = _in_order(batches)
    assert streamed == expected
    assert len(expected) == 300 + 43 + 25 + 10
    assert max(len(b) for _, b in batches) <= 45
    # the batch after the ALTER starts with rows that have the new column
    assert any(c["after"] and "extra" in c["after"] for c in streamed)


def test_transactions_of_other_tables_are_read_by_no_task_and_nothing_is_lost(spark, server, tmp_path):
    """Planned by bytes, batches and ranges of nothing captured have no task; the stream still
    equals ``sluice tail`` of the captured table."""
    db, other = f"sp_{uuid.uuid4().hex[:8]}", f"sx_{uuid.uuid4().hex[:8]}"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        start = server_binlog_status(conn)
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE DATABASE {other}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, s VARCHAR(20))")
        conn.execute(f"CREATE TABLE {other}.noise (id INT PRIMARY KEY, pad VARCHAR(200))")
        for i in range(12):
            conn.execute(f"INSERT INTO {db}.t VALUES ({i}, 'r{i}')")
            for j in range(40 if i % 3 == 0 else 2):  # stretches of the other table's changes
                rows = ", ".join(f"({i * 1000 + j * 20 + k}, REPEAT('x', 190))" for k in range(20))
                conn.execute(f"INSERT INTO {other}.noise VALUES {rows}")
            conn.execute(f"UPDATE {db}.t SET s = 'u{i}' WHERE id = {i}")
    batches = _stream(spark, server, tmp_path, db, start, maxBytesPerBatch=str(64 << 10))
    expected = _tail(server, db, start)
    assert _in_order(batches) == expected and len(expected) == 24
    # batches of the other table's changes only (64 KiB each) are read by no task; the batches
    # without rows that have a task are the four DDL statements' (each a batch of its own)
    assert sum(1 for n, rows in batches if not rows and n == 0) >= 5
    assert sum(1 for n, rows in batches if not rows and n) <= 4


def test_an_incident_in_archived_files_stops_the_read_unless_skipped(spark, tmp_path):
    from tests.unit.cdc.test_incidents import INCIDENT, fde

    path = tmp_path / "binlog.000001"
    path.write_bytes(b"\xfebin" + fde() + INCIDENT)
    with pytest.raises(Exception, match="incident"):
        spark.read.format("binlog").load(str(path)).collect()
    assert spark.read.format("binlog").option("skipIncidents", "true").load(str(path)).collect() == []
