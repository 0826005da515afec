"""A lake on object storage: the pipeline into ``s3://`` on a real S3 API server (``moto_server``),
DML between schema changes of every kind that moves or removes a mirror, and a store that ignores
conditional writes refused at start."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import deltalake
import pytest

from sluice.dsn import parse_dsn
from sluice.errors import ConfigError
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.lake.layout import open_lake
from sluice.sandbox.s3 import S3Sandbox
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from tests.conftest import binlog_row_metadata
from tests.s3_proxy import S3Proxy

pytestmark = pytest.mark.spark


def _mirror(uri: str, options: dict[str, str]) -> list[dict[str, Any]]:
    return deltalake.DeltaTable(uri, storage_options=options).to_pyarrow_table().to_pylist()


def _rows(conn: Connection, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.query(sql).rows]


# Two of the four (flavor, metadata) pairs: what the metadata changes is where column names come
# from, which the local suites cover on all four; here it is the lake's storage that is tested.
@pytest.mark.parametrize("flavor, metadata", [
    pytest.param("mariadb", "FULL", marks=pytest.mark.mariadb, id="mariadb-FULL"),
    pytest.param("mysql", "default", marks=pytest.mark.mysql, id="mysql-default"),
])
def test_the_pipeline_mirrors_into_s3_through_every_schema_change(spark, flavor, metadata, s3_server, tmp_path,
                                                                 request):
    server = request.getfixturevalue(f"{flavor}_server")
    with binlog_row_metadata(server, metadata):
        _through_every_schema_change(server, s3_server, tmp_path)


def _through_every_schema_change(server: Any, s3_server: S3Sandbox, tmp_path: Any) -> None:
    db = f"s3_{uuid.uuid4().hex[:8]}"
    lake = f"s3://{s3_server.bucket}/{db}"
    options = s3_server.storage_options()
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        start = server_binlog_status(conn)
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.a (id INT PRIMARY KEY, v VARCHAR(20), amount DECIMAL(8,2))")
        conn.execute(f"CREATE TABLE {db}.gone (id INT PRIMARY KEY, v INT)")
        conn.execute(f"CREATE TABLE {db}.moved (id INT PRIMARY KEY, v INT)")
        conn.execute(f"CREATE TABLE {db}.emptied (id INT PRIMARY KEY, v INT)")
        for i in range(1, 31):
            conn.execute(f"INSERT INTO {db}.a VALUES ({i}, 'v{i}', {i}.50)")
            conn.execute(f"INSERT INTO {db}.gone VALUES ({i}, {i})")
            conn.execute(f"INSERT INTO {db}.moved VALUES ({i}, {i})")
            conn.execute(f"INSERT INTO {db}.emptied VALUES ({i}, {i})")
        conn.execute(f"UPDATE {db}.a SET v = CONCAT(v, '!') WHERE id % 3 = 0")
        conn.execute(f"DELETE FROM {db}.a WHERE id % 7 = 0")
        conn.execute(f"ALTER TABLE {db}.a ADD COLUMN note VARCHAR(30) DEFAULT 'new' AFTER v")
        conn.execute(f"UPDATE {db}.a SET note = 'changed' WHERE id < 5")
        conn.execute(f"DROP TABLE {db}.gone")
        conn.execute(f"RENAME TABLE {db}.moved TO {db}.arrived")
        conn.execute(f"UPDATE {db}.arrived SET v = v * 10 WHERE id <= 10")
        conn.execute(f"TRUNCATE TABLE {db}.emptied")
        conn.execute(f"INSERT INTO {db}.emptied VALUES (100, 100)")
        conn.execute(f"ALTER TABLE {db}.a MODIFY amount DECIMAL(12,3)")
        conn.execute(f"INSERT INTO {db}.a (id, v, note, amount) VALUES (500, 'late', 'x', 1.125)")
        config = PipelineConfig(
            source=server.dsn("repl"), lake=lake, tables=rf"{db}\..*", trigger="once",
            starting_position=f"{start.file}:{start.pos}", max_rows_per_batch=40,
            storage=tuple(options.items()), checkpoint_dir=str(tmp_path / "checkpoint"),
        )
        stats = Pipeline(config).run(handle_signals=False)
        assert stats.batches >= 5

        a = {r["id"]: r for r in _mirror(f"{lake}/{db}/a", options)}
        expected = _rows(conn, f"SELECT id, v, note, amount FROM {db}.a ORDER BY id")
        assert sorted(a) == [int(r[0]) for r in expected]
        for i, v, note, amount in expected:
            assert (a[int(i)]["v"], a[int(i)]["note"], a[int(i)]["amount"]) == (v, note, Decimal(amount))
        arrived = {r["id"]: r["v"] for r in _mirror(f"{lake}/{db}/arrived", options)}
        assert arrived == {int(i): int(v) for i, v in _rows(conn, f"SELECT id, v FROM {db}.arrived")}
        assert [r["id"] for r in _mirror(f"{lake}/{db}/emptied", options)] == [100]
        store = open_lake(lake, options)
        assert not deltalake.DeltaTable.is_deltatable(f"{lake}/{db}/gone", storage_options=options)
        assert not deltalake.DeltaTable.is_deltatable(f"{lake}/{db}/moved", storage_options=options)
        archived = {k.split("/")[3] for k in store.keys(f"_sluice/archive/{db}")}
        (gone,) = [name for name in archived if name.startswith("gone@")]
        assert len(_mirror(f"{lake}/_sluice/archive/{db}/{gone}", options)) == 30  # the rows it had when dropped

        log = _mirror(f"{lake}/_sluice/changes", options)
        changes = [r for r in log if r["op"] != "ddl"]
        keys = [(r["file"], r["pos"], r["row"]) for r in changes]
        assert len(keys) == len(set(keys)), "a change is in the change log twice"
        assert sum(r["table"] == "a" for r in changes) == 30 + 10 + 4 + 4 + 1
        assert not list(store.keys("_sluice/staging")), "a batch's staged files were left behind"
        assert store.get_json("_sluice/pipeline.json")["id"].startswith("sluice-")
        assert b"ADD COLUMN note" in store.get("_sluice/schema-history.jsonl")
        # A second run finds nothing new and writes nothing twice.
        again = Pipeline(config).run(handle_signals=False)
        assert again.rows == 0
        assert len(_mirror(f"{lake}/_sluice/changes", options)) == len(log)
        conn.execute(f"DROP DATABASE {db}")


@pytest.fixture
def careless_store(s3_server: S3Sandbox) -> Iterator[str]:
    with S3Proxy(s3_server.port, strip_conditions=True) as proxy:
        yield proxy.url


def test_a_store_that_ignores_conditional_writes_is_refused_at_start(s3_server, careless_store):
    options = {**s3_server.storage_options(), "AWS_ENDPOINT_URL": careless_store}
    config = PipelineConfig(source="mysql://repl@127.0.0.1:1/", lake=f"s3://{s3_server.bucket}/careless",
                            storage=tuple(options.items()))
    with pytest.raises(ConfigError, match="ignores conditional writes") as caught:
        Pipeline(config)
    assert options["AWS_SECRET_ACCESS_KEY"] not in str(caught.value)
    # The same store behind no proxy keeps its conditions: the pipeline starts there.
    honest = PipelineConfig(source="mysql://repl@127.0.0.1:1/", lake=f"s3://{s3_server.bucket}/honest",
                            storage=tuple(s3_server.storage_options().items()))
    assert Pipeline(honest).app_id.startswith("sluice-")
    assert json.loads(open_lake(honest.lake, dict(honest.storage)).get("_sluice/pipeline.json"))["id"]


@pytest.mark.mysql
def test_a_lost_checkpoint_goes_on_from_the_lake_with_nothing_lost_or_twice(spark, mysql_server, s3_server, tmp_path):
    db = f"cp_{uuid.uuid4().hex[:8]}"
    lake = f"s3://{s3_server.bucket}/{db}"
    options = s3_server.storage_options()
    checkpoint = tmp_path / "checkpoint"
    with Connection.open(parse_dsn(mysql_server.dsn("root"))) as conn:
        start = server_binlog_status(conn)
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
        for i in range(1, 41):
            conn.execute(f"INSERT INTO {db}.t VALUES ({i}, {i})")
        config = PipelineConfig(
            source=mysql_server.dsn("repl"), lake=lake, tables=rf"{db}\..*", trigger="once",
            starting_position=f"{start.file}:{start.pos}", max_rows_per_batch=15,
            storage=tuple(options.items()), checkpoint_dir=str(checkpoint),
        )
        first = Pipeline(config)
        assert first.run(handle_signals=False).rows == 40
        for i in range(41, 61):
            conn.execute(f"INSERT INTO {db}.t VALUES ({i}, {i})")
        conn.execute(f"UPDATE {db}.t SET v = -v WHERE id % 2 = 0")
        conn.execute(f"DELETE FROM {db}.t WHERE id % 5 = 0")
        shutil.rmtree(checkpoint)  # lost: the next run has only the lake to go by
        second = Pipeline(config)
        assert second.resume_at is not None
        assert second.pipeline_id == first.pipeline_id and second.app_id != first.app_id
        assert second.run(handle_signals=False).rows == 20 + 30 + 12
        log = [r for r in _mirror(f"{lake}/_sluice/changes", options) if r["op"] != "ddl"]
        keys = [(r["file"], r["pos"], r["row"]) for r in log]
        assert len(keys) == len(set(keys)) == 40 + 20 + 30 + 12
        mirror = {r["id"]: r["v"] for r in _mirror(f"{lake}/{db}/t", options)}
        assert mirror == {int(i): int(v) for i, v in _rows(conn, f"SELECT id, v FROM {db}.t")}
        conn.execute(f"DROP DATABASE {db}")
