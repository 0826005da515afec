"""What ``sluice run`` checks of its source before it starts, on real servers.

Foreign-key cascades and the binlog: which servers log the child rows, and the warning ``sluice
run`` gives for the captured tables whose cascades are not logged.

MariaDB changes the child rows inside InnoDB and logs the parent's row only; so does MySQL with
``innodb_native_foreign_keys=ON`` (a read-only setting: a server of its own is started). MySQL's
server-layer handling (9.x's default) logs the child rows as row events. The test asserts what the
binlog really holds on each, then what ``silent_cascades`` and the pipeline's warning say of it.

MariaDB's transaction-precise system-versioned tables, whose changes the server logs as statements:
refused before the run, naming the exclusion that lets the run go on; with it, the run mirrors the
other tables, a system-versioned one by timestamp among them, while the excluded one is written.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import sluice
from sluice.cdc.source_checks import cascades_logged, silent_cascades
from sluice.dsn import parse_dsn
from sluice.errors import ConfigError
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.pipeline.source_tables import check_source
from sluice.spark.verify.check import verify_lake


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
    check_source(config.source, config.tables, config.exclude_tables, lines.append)
    warned = [line for line in lines if line.startswith("warning:")]
    if logged:
        assert warned == []
    else:
        assert len(warned) == 1 and f"{db}.nul (fk_nul on {db}.par: ON UPDATE SET NULL)" in warned[0], warned
        assert f"{db}.strict" not in warned[0]
    with Connection.open(parse_dsn(fk_server.dsn("root"))) as conn:
        conn.execute(f"DROP DATABASE {db}")


@pytest.mark.spark
def test_transaction_precise_tables_are_refused_before_the_run(spark, mariadb_server, tmp_path) -> None:
    db = f"sv_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    with Connection.open(parse_dsn(mariadb_server.dsn("root"))) as conn:
        x = conn.execute
        x(f"CREATE DATABASE {db}")
        x(f"CREATE TABLE {db}.v (id INT PRIMARY KEY, a INT, s BIGINT UNSIGNED GENERATED ALWAYS AS ROW START, "
          "e BIGINT UNSIGNED GENERATED ALWAYS AS ROW END, PERIOD FOR SYSTEM_TIME (s, e)) WITH SYSTEM VERSIONING")
        x(f"CREATE TABLE {db}.w (id INT PRIMARY KEY, a INT) WITH SYSTEM VERSIONING")
        x(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, a INT)")
        x(f"INSERT INTO {db}.v (id, a) VALUES (1, 1)")
        x(f"INSERT INTO {db}.w VALUES (1, 1)")
        x(f"INSERT INTO {db}.t VALUES (1, 1)")
        start = server_binlog_status(conn)
        x(f"UPDATE {db}.v SET a = 2")
        end = server_binlog_status(conn)
        # What the refusal rests on: the server logged the UPDATE of the transaction-precise table as
        # its statement, with no row event.
        events = sluice.stream_events(mariadb_server.dsn("root"), file=start.file, pos=start.pos, until_end=True)
        logged = [type(e).__name__ for f, p, e in events if (f, p) < (end.file, end.pos)]
        assert "QueryEvent" in logged and not any("Rows" in name for name in logged), logged
        config = PipelineConfig(source=mariadb_server.dsn("root"), lake=lake, tables=rf"{db}\..*", trigger="once")
        with pytest.raises(ConfigError, match=rf"transaction-precise system-versioned tables \({db}\.v\)") as refused:
            Pipeline(config).run(handle_signals=False)
        exclude = str(refused.value).rsplit("--exclude-tables ", 1)[1].strip("'")
        config = PipelineConfig(source=mariadb_server.dsn("root"), lake=lake, tables=rf"{db}\..*",
                                exclude_tables=exclude, trigger="once", snapshot="only")
        Pipeline(config).run(handle_signals=False)
        x(f"UPDATE {db}.v SET a = 3")
        x(f"UPDATE {db}.w SET a = 2")
        x(f"DELETE FROM {db}.v")
        x(f"INSERT INTO {db}.t VALUES (2, 2)")
        x(f"INSERT INTO {db}.w VALUES (2, 2)")
        Pipeline(PipelineConfig(source=mariadb_server.dsn("root"), lake=lake, tables=rf"{db}\..*",
                                exclude_tables=exclude, trigger="once")).run(handle_signals=False)
        verdicts = verify_lake(parse_dsn(mariadb_server.dsn("root")), lake, tables=lambda d, t: d == db)
        assert [(v.table, v.ok) for v in verdicts] == [("t", True), ("w", True)], verdicts
        x(f"DROP DATABASE {db}")
