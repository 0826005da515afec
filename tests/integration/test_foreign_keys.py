"""Foreign-key cascades and the binlog, on real servers: which servers log the child rows, and the
warning ``sluice run`` gives for the captured tables whose cascades are not logged.

MariaDB changes the child rows inside InnoDB and logs the parent's row only; so does MySQL with
``innodb_native_foreign_keys=ON`` (a read-only setting: a server of its own is started). MySQL's
server-layer handling (9.x's default) logs the child rows as row events. The test asserts what the
binlog really holds on each, then what ``silent_cascades`` and the pipeline's warning say of it.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import sluice
from sluice.cdc.foreign_keys import cascades_logged, silent_cascades
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.spark.pipeline import Pipeline, PipelineConfig


@pytest.fixture(params=["mariadb", "mysql", "mysql-innodb-fk"])
def fk_server(request: pytest.FixtureRequest, sandbox_factory: Any) -> Any:
    if request.param == "mysql-innodb-fk":
        server = sandbox_factory("mysql", settings={"innodb_native_foreign_keys": "ON"})
        yield server
        server.stop()
    else:
        yield request.getfixturevalue(f"{request.param}_server")


def test_silent_cascades_name_exactly_the_child_rows_the_binlog_lacks(fk_server, tmp_path) -> None:
    db = f"fk_{uuid.uuid4().hex[:8]}"
    with Connection.open(parse_dsn(fk_server.dsn("root"))) as conn:
        x = conn.execute
        x(f"CREATE DATABASE {db}")
        x(f"CREATE TABLE {db}.par (id INT PRIMARY KEY)")
        x(f"CREATE TABLE {db}.ch (id INT PRIMARY KEY, pid INT, CONSTRAINT fk_ch FOREIGN KEY (pid) "
          f"REFERENCES {db}.par (id) ON DELETE CASCADE)")
        x(f"CREATE TABLE {db}.nul (id INT PRIMARY KEY, pid INT, CONSTRAINT fk_nul FOREIGN KEY (pid) "
          f"REFERENCES {db}.par (id) ON UPDATE SET NULL)")
        x(f"CREATE TABLE {db}.strict (id INT PRIMARY KEY, pid INT, CONSTRAINT fk_strict FOREIGN KEY (pid) "
          f"REFERENCES {db}.par (id) ON DELETE RESTRICT)")
        x(f"INSERT INTO {db}.par VALUES (1), (2), (3)")
        x(f"INSERT INTO {db}.ch VALUES (10, 1)")
        x(f"INSERT INTO {db}.nul VALUES (20, 2)")
        x(f"INSERT INTO {db}.strict VALUES (30, 3)")
        start = server_binlog_status(conn)
        x(f"DELETE FROM {db}.par WHERE id = 1")
        x(f"UPDATE {db}.par SET id = 4 WHERE id = 2")
        logged = cascades_logged(conn)
        found = silent_cascades(conn, lambda d, t: d == db and t != "nul")
    changes = list(sluice.stream_changes(fk_server.dsn("root"), file=start.file, pos=start.pos, until_end=True,
                                         tables=rf"{db}\..*"))
    children = [(c.table, c.op) for c in changes if c.table != "par"]
    assert logged == (fk_server.flavor == "mysql" and "innodb_native_foreign_keys" not in fk_server.settings)
    if logged:
        assert children == [("ch", "delete"), ("nul", "update")], changes
        assert found == []
    else:
        assert children == [], changes
        assert [c.describe() for c in found] == [f"{db}.ch (fk_ch on {db}.par: ON DELETE CASCADE)"]
    lines: list[str] = []
    config = PipelineConfig(source=fk_server.dsn("root"), lake=str(tmp_path / "lake"), tables=rf"{db}\..*")
    Pipeline(config, progress=lines.append)._warn_silent_cascades()
    warned = [line for line in lines if line.startswith("warning:")]
    if logged:
        assert warned == []
    else:
        assert len(warned) == 1 and f"{db}.nul (fk_nul on {db}.par: ON UPDATE SET NULL)" in warned[0], warned
        assert f"{db}.strict" not in warned[0]
    with Connection.open(parse_dsn(fk_server.dsn("root"))) as conn:
        conn.execute(f"DROP DATABASE {db}")
