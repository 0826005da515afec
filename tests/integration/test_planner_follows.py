"""The stream source's planner follows the binlog between batches (``sluice.spark.source.planner``).

A ``latestOffset`` that reached the binlog's end leaves a thread that asks the server where its
binlog ends and reads what a transaction added, before the next ``latestOffset`` asks: a large
transaction committed between two triggers is read while the query waits for its next one. The next
``latestOffset`` ends the thread and plans through that transaction, without waiting for a look at
the binlog's end that stalled; ``stop`` ends the thread too.
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
from tests.tcp_proxy import TcpProxy, query


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
        thread = planner._thread
        assert thread is not None and thread.is_alive(), "no thread follows the binlog on from its end"
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
    thread = planner._thread
    deadline = time.monotonic() + 5
    while thread is not None and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert thread is None or not thread.is_alive()  # stop ended the thread


@pytest.mark.mysql
@pytest.mark.mariadb
def test_a_stalled_look_at_the_binlogs_end_keeps_no_batch_waiting(server):
    """The following thread's query goes silent (a silent network path, through a proxy): the next
    ``latestOffset`` does not wait for it, and reads the new transaction itself."""
    db = f"pf_{uuid.uuid4().hex[:8]}"
    server.sql(f"CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        here = server_binlog_status(conn)
    with TcpProxy(server.host, server.port) as proxy:
        dsn = proxy.dsn(server.dsn("repl"))
        dsn += ("&" if "?" in dsn else "?") + "read_timeout=600"  # a stall would hold a batch for 10 minutes
        reader = BinlogStreamReader(SourceOptions(dsn=dsn, tables=rf"{db}\..*", starting=f"{here.file}:{here.pos}"))
        try:
            first = reader.latestOffset(reader.initialOffset(), reader.getDefaultReadLimit())
            trap = proxy.trap(query("status"))  # the thread's next look goes silent
            deadline = time.monotonic() + 30
            while not trap.sprung and time.monotonic() < deadline:
                time.sleep(0.05)
            assert trap.sprung == 1
            server.sql(f"INSERT INTO {db}.t VALUES (1, 1)")
            with Connection.open(parse_dsn(server.dsn("root"))) as conn:
                after = server_binlog_status(conn)
            began = time.monotonic()
            second = offset_checkpoint(reader.latestOffset(first, reader.getDefaultReadLimit()))
            assert time.monotonic() - began < 60, "latestOffset waited for the silent query"
            assert (second.file, second.pos) == (after.file, after.pos)
        finally:
            reader.stop()
            server.sql(f"DROP DATABASE {db}")
