"""The stream source's planner follows the binlog between batches (``sluice.spark.source.planner``).

A ``latestOffset`` that reached the binlog's end leaves a thread that asks the server where its
binlog ends and reads what a transaction added, before the next ``latestOffset`` asks: a large
transaction committed between two triggers is read while the query waits for its next one. The next
``latestOffset`` ends the thread and plans through that transaction; ``stop`` ends it too.
"""

from __future__ import annotations

import time
import uuid

import pytest

from sluice.binlog.position import precedes
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.spark.source.datasource import BinlogStreamReader
from sluice.spark.source.options import SourceOptions
from sluice.spark.source.planner import offset_checkpoint


@pytest.fixture(params=["mysql", "mariadb"])
def server(request):
    return request.getfixturevalue(f"{request.param}_server")


@pytest.mark.mysql
@pytest.mark.mariadb
def test_a_transaction_committed_between_batches_is_read_before_the_next_asks(server):
    db = f"pf_{uuid.uuid4().hex[:8]}"
    server.sql(f"CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        here = server_binlog_status(conn)
    reader = BinlogStreamReader(SourceOptions(dsn=server.dsn("repl"), tables=rf"{db}\..*",
                                              starting=f"{here.file}:{here.pos}"))
    try:
        start = reader.initialOffset()
        first = reader.latestOffset(start, reader.getDefaultReadLimit())
        planner = reader._planner
        assert planner is not None and planner.at_end
        assert planner.reading, "no thread follows the binlog on from its end"
        server.sql(f"INSERT INTO {db}.t VALUES (1, 1)")
        server.sql(f"INSERT INTO {db}.t VALUES (2, 2), (3, 3)")
        with Connection.open(parse_dsn(server.dsn("root"))) as conn:
            after = server_binlog_status(conn)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with planner._lock:
                read = [p for p in planner.pending if precedes(offset_checkpoint(first), p.end)]
            if len(read) == 2:
                break
            time.sleep(0.05)
        assert [p.rows for p in read] == [1, 2], read  # read by the thread: no latestOffset asked
        assert (read[-1].end.file, read[-1].end.pos) == (after.file, after.pos)
        second = offset_checkpoint(reader.latestOffset(first, reader.getDefaultReadLimit()))
        assert (second.file, second.pos) == (after.file, after.pos)
        assert sum(part.rows for part in reader.partitions(first, second.to_json())) == 3
    finally:
        reader.stop()
        server.sql(f"DROP DATABASE {db}")
    deadline = time.monotonic() + 5
    while planner.reading and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not planner.reading  # stop ended the thread
