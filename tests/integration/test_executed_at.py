"""``cdc.executed_at`` on real servers: the executed GTIDs at a binlog position, read from its file.

A new server's first binlog starts with an empty PREVIOUS_GTIDS (MySQL) or GTID_LIST (MariaDB).
At its first event, before any GTID, the set is the empty set when the server has GTIDs, not
unknown: the Spark source's first offset and the bootstrap it records in the schema history at a
``--from FILE:POS`` there (``tracker_at``, the source's planner path) carry it. A MySQL server with
``gtid_mode`` OFF writes the same empty PREVIOUS_GTIDS, and there no set is known. Reading forward
from an exact boundary (``since``) gives what reading from the file's start gives.
"""

from __future__ import annotations

import pytest

from sluice.binlog.position import Checkpoint
from sluice.cdc.capture_start import tracker_at
from sluice.cdc.executed_at import executed_at
from sluice.cdc.follow import FollowConfig
from sluice.cdc.schema import SchemaHistory
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_files, server_binlog_status
from tests.conftest import TWO_FLAVORS

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_the_first_bootstrap_at_a_new_servers_first_file_records_the_empty_set(flavor, sandbox_factory, tmp_path):
    server = sandbox_factory(flavor)
    server.sql("RESET MASTER" if server.is_mariadb else "RESET BINARY LOGS AND GTIDS")  # a new server's binlog
    server.sql("CREATE DATABASE g")  # its first GTID, after the position
    config = parse_dsn(server.dsn("root"))
    with Connection.open(config) as conn:
        first = Checkpoint(server_binlog_files(conn)[0][0], 4)
    start = executed_at(FollowConfig(config, retries=2), first)
    assert start.gtid_set == "", start
    history = SchemaHistory.open(tmp_path / "history.jsonl")
    with Connection.open(config) as conn:
        tracker_at(conn, start, history)
    bootstrap = [e for e in SchemaHistory.open(tmp_path / "history.jsonl").entries if e.kind == "bootstrap"]
    assert [(e.file, e.pos) for e in bootstrap] == [(first.file, 4)]
    assert bootstrap[0].at is not None and bootstrap[0].at.gtid_set == ""


@pytest.mark.mysql
def test_a_mysql_server_without_gtids_has_no_set(sandbox_factory):
    server = sandbox_factory("mysql", settings={"gtid-mode": "OFF", "enforce-gtid-consistency": "OFF"})
    config = parse_dsn(server.dsn("root"))
    server.sql("CREATE DATABASE g; CREATE TABLE g.t (id INT PRIMARY KEY); INSERT INTO g.t VALUES (1)")
    with Connection.open(config) as conn:
        first = Checkpoint(server_binlog_files(conn)[0][0], 4)
        end = server_binlog_status(conn)
    assert executed_at(FollowConfig(config, retries=2), first).gtid_set is None
    assert executed_at(FollowConfig(config, retries=2), Checkpoint(end.file, end.pos)).gtid_set is None


@pytest.mark.parametrize("flavor", TWO_FLAVORS)
def test_reading_forward_from_an_exact_boundary_gives_what_the_files_start_gives(flavor, sandbox_factory):
    server = sandbox_factory(flavor)
    config = parse_dsn(server.dsn("root"))
    server.sql("CREATE DATABASE g; CREATE TABLE g.t (id INT PRIMARY KEY)")
    with Connection.open(config) as conn:
        middle = server_binlog_status(conn)
    server.sql(";".join(f"INSERT INTO g.t VALUES ({i})" for i in range(1, 6)))
    with Connection.open(config) as conn:
        end = server_binlog_status(conn)
    follow_config = FollowConfig(config, retries=2)
    known = executed_at(follow_config, Checkpoint(middle.file, middle.pos))
    whole = executed_at(follow_config, Checkpoint(end.file, end.pos))
    forward = executed_at(follow_config, Checkpoint(end.file, end.pos), since=known)
    assert whole.gtid_set and forward.gtid_set == whole.gtid_set
    assert known.gtid_set != whole.gtid_set  # five transactions lie between
