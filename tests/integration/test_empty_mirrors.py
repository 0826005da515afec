"""Every captured table has its mirror from the moment sluice knows of it, rows or not, and `sluice
verify` compares every captured table (real servers of both
flavors, real Spark, a lake on a path and on S3; one pipeline run per flavor and place serves
every check).

A table empty at the snapshot, one created empty mid-stream, one dropped and created again with
other columns, one renamed while empty: each is a readable Delta table with the table's columns and
no rows. A key-less table has no mirror by design, and verify says so. A mirror removed from the
lake is a difference that names its table, and `sluice verify` exits 1. A DROP and CREATE killed
mid-move on S3 leaves no half-made mirror.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from deltalake.exceptions import DeltaError

from sluice.cdc.schema import Catalog
from sluice.cli import main as sluice_main
from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.layout import open_lake
from sluice.lake.sink import DeltaLake
from sluice.sandbox.s3 import S3Sandbox
from sluice.spark.ddl.apply import MirrorDdl
from sluice.spark.ddl.plan import plan_ddl
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.snapshot.state import SnapshotState
from sluice.spark.verify.check import verify_lake

pytestmark = pytest.mark.spark


def _run(server: Any, lake: str, db: str, **extra: Any) -> Any:
    config = PipelineConfig(source=server.dsn("root"), lake=lake, tables=rf"{db}\..*", trigger="once",
                            snapshot="initial", **extra)
    return Pipeline(config).run(handle_signals=False)


def _mirror(uri: str, options: dict[str, str] | None = None) -> tuple[list[str], int]:
    dt = deltalake.DeltaTable(uri, storage_options=options)
    return dt.schema().to_arrow().names, dt.to_pyarrow_table().num_rows


def _empty_tables_through_ddl(server: Any, lake: str, db: str, options: dict[str, str] | None = None,
                              **extra: Any) -> None:
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.empty (id INT PRIMARY KEY, v VARCHAR(10))")
        conn.execute(f"CREATE TABLE {db}.full (id INT PRIMARY KEY, v INT)")
        conn.execute(f"CREATE TABLE {db}.nokey (a INT)")
        conn.execute(f"INSERT INTO {db}.full VALUES (1, 1), (2, 2)")
        conn.execute(f"INSERT INTO {db}.nokey VALUES (1)")
        _run(server, lake, db, **extra)
        assert _mirror(f"{lake}/{db}/empty", options) == (["id", "v"], 0)  # empty at the snapshot
        assert _mirror(f"{lake}/{db}/full", options) == (["id", "v"], 2)
        assert not deltalake.DeltaTable.is_deltatable(f"{lake}/{db}/nokey", storage_options=options)

        conn.execute(f"CREATE TABLE {db}.born (id BIGINT PRIMARY KEY, w DATE)")
        conn.execute(f"DROP TABLE {db}.full")
        conn.execute(f"CREATE TABLE {db}.full (id INT PRIMARY KEY, x VARCHAR(5), y DECIMAL(6,2))")
        conn.execute(f"RENAME TABLE {db}.empty TO {db}.renamed")
        _run(server, lake, db, **extra)
        assert _mirror(f"{lake}/{db}/born", options) == (["id", "w"], 0)  # created empty mid-stream
        assert _mirror(f"{lake}/{db}/full", options) == (["id", "x", "y"], 0)  # re-created empty
        assert _mirror(f"{lake}/{db}/renamed", options) == (["id", "v"], 0)  # followed its rename
        assert not deltalake.DeltaTable.is_deltatable(f"{lake}/{db}/empty", storage_options=options)

        store = open_lake(lake, options)
        verdicts = {v.table: v for v in verify_lake(parse_dsn(server.dsn("root")), store)}
        assert sorted(verdicts) == ["born", "full", "nokey", "renamed"], verdicts
        assert all(v.ok for v in verdicts.values()), verdicts
        assert not verdicts["nokey"].compared and "no primary key" in (verdicts["nokey"].note or "")
        assert all(verdicts[t].compared for t in ("born", "full", "renamed"))
        conn.execute(f"DROP DATABASE {db}")


@pytest.fixture(params=["path", "s3"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, str] | None, dict[str, Any]]:
    """A lake on a path or on the S3 test server: its URI's root, its storage options (None on a
    path), and the pipeline's settings for it."""
    if request.param == "path":
        return str(tmp_path / "lake"), None, {}
    s3: S3Sandbox = request.getfixturevalue("s3_server")
    options = s3.storage_options()
    return (f"s3://{s3.bucket}/{uuid.uuid4().hex[:8]}", options,
            {"storage": tuple(options.items()), "checkpoint_dir": str(tmp_path / "checkpoint")})


def test_every_captured_table_has_its_mirror_and_verify_names_a_missing_one(spark, server, where, capsys,
                                                                            monkeypatch):
    db = f"em_{uuid.uuid4().hex[:8]}"
    root, options, extra = where
    lake = f"{root}/{db}"
    _empty_tables_through_ddl(server, lake, db, options, **extra)
    store = open_lake(lake, options)
    for name, value in (options or {}).items():  # sluice verify reads the store's options from the environment
        monkeypatch.setenv(name, value)
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:  # the tables again, for verify to find
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.born (id BIGINT PRIMARY KEY, w DATE)")
        conn.execute(f"INSERT INTO {db}.born VALUES (7, '2024-01-02')")
        capsys.readouterr()
        store.delete_prefix(store.key(store.mirror(db, "born")))
        assert (db, "born") not in store.mirrors()
        verdicts = {v.table: v for v in verify_lake(parse_dsn(server.dsn("root")), store)}
        born = verdicts["born"]
        assert (born.ok, born.source_rows, born.missing) == (False, 1, 1), born
        assert "no mirror" in (born.note or "") and born.first_keys == ("id=7 (missing)",)
        code = sluice_main(["verify", "--source", server.dsn("root"), "--lake", lake])
        out = capsys.readouterr().out
        assert code == 1 and f"DIFF {db}.born" in out and "all " not in out, out
        for name in ("full", "renamed"):  # no mirror left at all: still each table named
            store.delete_prefix(store.key(store.mirror(db, name)))
        assert store.mirrors() == []
        code = sluice_main(["verify", "--source", server.dsn("root"), "--lake", lake])
        out = capsys.readouterr().out
        assert code == 1 and f"DIFF {db}.born" in out and "holds no Delta tables" not in out, out
        conn.execute(f"DROP DATABASE {db}")


def test_a_move_cut_short_on_s3_is_finished_before_the_new_mirror(s3_server: S3Sandbox):
    """DROP and CREATE of one name on S3, killed while the old mirror was being removed after its copy
    to the archive (its first commit already gone, so its path reads as no table): the replay
    finishes the move and creates the new mirror on a clean path, not over the old log's leftovers."""
    db = f"mv_{uuid.uuid4().hex[:8]}"
    options = s3_server.storage_options()
    store = open_lake(f"s3://{s3_server.bucket}/{db}", options)
    lake = DeltaLake(store, "sluice-test")
    path = lake.table_path(db, "t")
    for first in (1, 3):
        deltalake.write_deltalake(path, pa.table({"id": [first, first + 1], "v": [7, 8]}), mode="append",
                                  storage_options=lake.options)
    before = Catalog(databases={db: ("utf8mb4", None)}, flavor="mysql")
    steps = plan_ddl(before, f"CREATE TABLE {db}.t (id INT PRIMARY KEY, w VARCHAR(5))", db, lambda *_: True, "mysql")
    assert [s.kind for s in steps] == ["archive", "create"]
    at = ("binlog.000001", 4)
    archive = store.archive(db, "t", at)
    store.put_json(store.DDL_JOURNAL, {"batch": 5, "done": 0, "moving": {"step": 0, "from": path, "to": archive}})
    store.copy_prefix(store.key(path), store.key(archive))
    store.delete(store.key(path) + "/_delta_log/00000000000000000000.json")  # the kill: mid-removal
    with pytest.raises(DeltaError):  # what the path holds now is no table
        deltalake.DeltaTable(path, storage_options=options)
    MirrorDdl(lake, lambda _text: None).apply(5, [(at, s) for s in steps])
    assert _mirror(path, options) == (["id", "w"], 0)
    assert deltalake.DeltaTable(path, storage_options=options).version() == 0
    assert _mirror(archive, options) == (["id", "v"], 4)


@pytest.mark.mariadb
def test_a_dropped_read_whose_mirror_removal_was_cut_short_is_removed_before_the_table_is_read_again(
        spark, mariadb_server, s3_server: S3Sandbox, tmp_path):
    """A table's read dropped by the snapshot (a DDL under it, ``sluice snapshot --tables``), killed
    inside its mirror's removal on S3: the state names the mirror under removal, its first commit is
    gone and later ones are left. The next run removes the rest before it plans the table, and reads
    it into a whole new mirror, not onto the old log's leftovers."""
    db = f"dr_{uuid.uuid4().hex[:8]}"
    options = s3_server.storage_options()
    lake = f"s3://{s3_server.bucket}/{db}"
    extra = {"storage": tuple(options.items()), "checkpoint_dir": str(tmp_path / "checkpoint")}
    store = open_lake(lake, options)
    with Connection.open(parse_dsn(mariadb_server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
        conn.execute(f"INSERT INTO {db}.t VALUES " + ", ".join(f"({i}, {i})" for i in range(10)))
        _run(mariadb_server, lake, db, **extra)
        path = store.mirror(db, "t")
        deltalake.write_deltalake(path, pa.table({"id": pa.array([100], pa.int32()), "v": pa.array([1], pa.int32())}),
                                  mode="append", storage_options=options)  # a later commit of the old log
        old = {k for k in store.keys(store.key(path)) if k.endswith(".parquet")}  # data files: unique names
        state = SnapshotState.load(store)
        state.tables.pop(f"{db}.t")
        state.complete = False
        state.discarding = [store.key(path)]
        state.save(store)
        store.delete(store.key(path) + "/_delta_log/00000000000000000000.json")  # the kill: mid-removal
        conn.execute(f"UPDATE {db}.t SET v = v + 100 WHERE id < 5")
        conn.execute(f"INSERT INTO {db}.t VALUES (50, 50)")
        _run(mariadb_server, lake, db, **extra)
        verdicts = verify_lake(parse_dsn(mariadb_server.dsn("root")), store, tables=lambda d, _t: d == db)
        conn.execute(f"DROP DATABASE {db}")
    assert [(v.table, v.source_rows, v.ok) for v in verdicts] == [("t", 11, True)], verdicts
    assert old and not old & set(store.keys(store.key(path))), "the old log's data files are still there"
    assert SnapshotState.load(store).discarding == []
    history = deltalake.DeltaTable(path, storage_options=options).history()
    assert history[-1]["operation"] == "CREATE TABLE" and history[-1]["version"] == 0
