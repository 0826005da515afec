"""The replication stream against real servers: start positions, GTIDs, heartbeats, big events, purged logs."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
import uuid

import pytest

from sluice.binlog.constants import EventType
from sluice.binlog.parser import EventParser, ParserConfig
from sluice.dsn import parse_dsn
from sluice.errors import BinlogPurgedError
from sluice.io.connection import Connection
from sluice.io.replication import ReplicationStream, StreamConfig, server_binlog_status


@pytest.fixture
def server(server3):
    """Every test of this suite runs on the three servers (tests/conftest.py)."""
    return server3


def _status(server):
    with Connection.open(parse_dsn(server.dsn("repl"))) as conn:
        return server_binlog_status(conn)


def _events(config: StreamConfig, limit: int = 100_000):
    """Decoded (file, pos, event) triples of a stream, which must end by itself (until_end)."""
    out = []
    with ReplicationStream(config) as stream:
        parser = None
        for raw in stream:
            if parser is None:
                parser = EventParser(ParserConfig(initial_checksum=stream.checksum_algorithm))
            out.append((raw.file, raw.pos, parser.parse(raw.data, file=raw.file, offset=raw.pos)))
            assert len(out) < limit, "stream did not stop at the end"
    return out


def _queries(events):
    return [e.query for _f, _p, e in events if e.header.type_code == EventType.QUERY_EVENT]


def _table(server, columns: str = "id INT PRIMARY KEY, v VARCHAR(50)") -> str:
    name = f"t_{uuid.uuid4().hex[:8]}"
    server.sql(f"CREATE DATABASE IF NOT EXISTS repl_test; CREATE TABLE repl_test.{name} ({columns})")
    return name


def test_stream_from_file_and_position_to_the_end(server):
    name = _table(server)
    start = _status(server)
    server.sql(f"INSERT INTO repl_test.{name} VALUES (1, 'a'); INSERT INTO repl_test.{name} VALUES (2, 'b')")
    end = _status(server)
    events = _events(StreamConfig(parse_dsn(server.dsn("repl")), file=start.file, pos=start.pos, until_end=True))
    real = [(f, p, e) for f, p, e in events if p >= start.pos and e.header.type_code not in (
        EventType.ROTATE_EVENT, EventType.FORMAT_DESCRIPTION_EVENT,
        EventType.HEARTBEAT_LOG_EVENT, EventType.HEARTBEAT_LOG_EVENT_V2)]
    # The first real event starts exactly at the requested position, and offsets chain by size.
    assert real[0][1] == start.pos
    for (f1, p1, e1), (f2, p2, _e2) in itertools.pairwise(real):
        if f1 == f2:
            assert p2 == p1 + e1.header.event_size
    last_file, last_pos, last = real[-1]
    assert (last_file, last_pos + last.header.event_size) == (end.file, end.pos)
    writes = [e for _f, _p, e in real if getattr(e, "kind", None) == "write"]
    assert len(writes) == 2


def test_stream_from_gtid_set_skips_what_was_executed(server):
    name = _table(server)
    server.sql(f"INSERT INTO repl_test.{name} VALUES (1, 'before')")
    executed = _status(server).gtid_executed
    server.sql(f"INSERT INTO repl_test.{name} VALUES (2, 'after')")
    events = _events(StreamConfig(parse_dsn(server.dsn("repl")), gtid=executed, until_end=True))
    gtid_types = (EventType.GTID_LOG_EVENT, EventType.GTID_TAGGED_LOG_EVENT, EventType.GTID_EVENT)
    gtids = [e for _f, _p, e in events if e.header.type_code in gtid_types]
    assert len(gtids) == 1, "only the transaction after the given GTID set must be sent"
    writes = [e for _f, _p, e in events if getattr(e, "kind", None) == "write"]
    assert len(writes) == 1


def test_heartbeat_arrives_while_idle(server):
    start = _status(server)
    config = StreamConfig(parse_dsn(server.dsn("repl")), file=start.file, pos=start.pos, heartbeat_period=0.3)
    seen = []
    with ReplicationStream(config) as stream:
        for raw in stream:
            code = raw.data[4]
            seen.append(code)
            if code in (EventType.HEARTBEAT_LOG_EVENT, EventType.HEARTBEAT_LOG_EVENT_V2):
                break
            assert len(seen) < 50
    assert seen[-1] in (EventType.HEARTBEAT_LOG_EVENT, EventType.HEARTBEAT_LOG_EVENT_V2)


@pytest.mark.slow
def test_event_larger_than_16_mib_arrives_intact(server):
    server.sql("SET GLOBAL max_allowed_packet = 134217728")
    name = _table(server, "id INT PRIMARY KEY, b LONGBLOB")
    start = _status(server)
    size = 17 * 1024 * 1024 + 3
    server.sql(f"INSERT INTO repl_test.{name} VALUES (1, REPEAT('z', {size}))")
    events = _events(StreamConfig(parse_dsn(server.dsn("repl")), file=start.file, pos=start.pos, until_end=True))
    writes = [e for _f, _p, e in events if getattr(e, "kind", None) == "write"]
    assert len(writes) == 1
    assert writes[0].header.event_size > 16 * 1024 * 1024
    ((row_id, blob),) = writes[0].rows
    assert row_id == 1 and blob == b"z" * size


@pytest.mark.mariadb11
def test_large_commit_file_streams_with_the_servers_positions(mariadb11_server):
    """MariaDB 11.8's binlog_large_commit_threshold makes a big transaction's cache the next binlog
    file, its GTID event padded to end at 4,096: from a file or a GTID, every event of the stream is
    where SHOW BINLOG EVENTS puts it, and the rows arrive whole."""
    server = mariadb11_server
    old = server.sql("SELECT @@GLOBAL.binlog_large_commit_threshold, @@GLOBAL.max_allowed_packet").split("\t")
    server.sql("SET GLOBAL binlog_large_commit_threshold = 10485760; SET GLOBAL max_allowed_packet = 67108864")
    try:
        name = _table(server, "id INT PRIMARY KEY, b LONGBLOB")
        start = _status(server)
        bulk = "".join(f"INSERT INTO repl_test.{name} VALUES ({i}, REPEAT('z', 3000000));" for i in range(4))
        server.sql(f"BEGIN; {bulk} COMMIT; INSERT INTO repl_test.{name} VALUES (9, 'after')")
    finally:
        server.sql(f"SET GLOBAL binlog_large_commit_threshold = {old[0]}; SET GLOBAL max_allowed_packet = {old[1]}")
    assert _status(server).file != start.file, "the large transaction did not become a binlog file of its own"
    where = {}
    for file in server.binlog_files():
        for row in server.sql(f"SHOW BINLOG EVENTS IN '{file}'").splitlines():
            _log, pos, kind, *_rest = row.split("\t")
            where[(file, int(pos))] = kind
    for config in (StreamConfig(parse_dsn(server.dsn("repl")), file=start.file, pos=start.pos, until_end=True),
                   StreamConfig(parse_dsn(server.dsn("repl")), gtid=start.gtid_executed, until_end=True)):
        events = [(f, p, e) for f, p, e in _events(config) if not e.header.artificial
                  and e.header.type_code != EventType.HEARTBEAT_LOG_EVENT
                  and not (e.header.type_code == EventType.FORMAT_DESCRIPTION_EVENT and p != 4)]
        assert all((f, p) in where for f, p, _e in events), [(f, p) for f, p, _e in events if (f, p) not in where]
        gtids = [(p, e.header.event_size) for _f, p, e in events if e.header.type_code == EventType.GTID_EVENT]
        assert any(p + size == 4096 for p, size in gtids), gtids
        rows = [row for _f, _p, e in events if getattr(e, "kind", None) == "write" for row in e.rows]
        assert [r[0] for r in rows] == [0, 1, 2, 3, 9]
        assert all(blob == b"z" * 3000000 for _id, blob in rows[:4])


def test_a_purged_start_position_is_binlog_purged_naming_the_file(server):
    old = _status(server).file
    # MariaDB keeps a file until its binlog checkpoint is written and no dump thread reads it: retry.
    deadline = time.monotonic() + 30
    while old in server.sql("SHOW BINARY LOGS"):
        assert time.monotonic() < deadline, "the server did not purge the old binlog"
        server.sql("FLUSH BINARY LOGS")
        server.sql(f"PURGE BINARY LOGS TO '{_status(server).file}'")
        time.sleep(0.2)
    config = StreamConfig(parse_dsn(server.dsn("repl")), file=old, pos=4, until_end=True)
    with pytest.raises(BinlogPurgedError) as info:
        _events(config)
    text = str(info.value)
    assert info.value.file == old and f"{old}:4 is no longer on the server" in text
    assert "sluice snapshot" in text and "--snapshot when-needed" in text


def test_tail_command_prints_decoded_events(server):
    start = _status(server)
    name = _table(server)
    server.sql(f"INSERT INTO repl_test.{name} VALUES (7, 'x')")
    out = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--from", f"{start.file}:{start.pos}",
         "--until-end", "--events"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    types = [line["type"] for line in lines]
    assert types[0] == "ROTATE_EVENT"
    assert "FORMAT_DESCRIPTION_EVENT" in types and "XID_EVENT" in types and "TABLE_MAP_EVENT" in types
    create = [line for line in lines if line["type"] == "QUERY_EVENT" and name in line.get("query", "")]
    assert create and create[0]["file"] == start.file
    assert all({"file", "pos", "size"} <= set(line) for line in lines)
