"""The S3 proxy in front of the real S3 test server: it records what a lake's writes ask of the store
and holds each request for the latency it is given, as the round-trip bench needs; and what a steady
batch of the pipeline asks of the store about each table's log, counted through it, and a task's
files sent side by side."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.fs import DeltaStorageHandler
from pyarrow import fs as pafs

from sluice.dsn import parse_dsn
from sluice.errors import SluiceError
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.lake.layout import LakeTable, open_lake
from sluice.lake.maintenance.steps import MaintenanceConfig, compact, due_steps, inspect
from sluice.lake.mirror.pending import PendingChanges
from sluice.sandbox.s3 import S3Sandbox
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.source.parts import Uploads
from tests.s3_proxy import Answered, ProxyProcess, S3Proxy, most_in_flight, sequential_round_trips


def test_the_proxy_records_a_delta_write_and_holds_each_request(s3_server: S3Sandbox):
    latency = 0.05
    with S3Proxy(s3_server.port, latency=latency) as proxy:
        options = {**s3_server.storage_options(), "AWS_ENDPOINT_URL": proxy.url}
        uri = f"s3://{s3_server.bucket}/round-trips"
        write_deltalake(uri, pa.table({"id": [1, 2]}), storage_options=options)
        proxy.requests.take()
        started = time.monotonic()
        write_deltalake(uri, pa.table({"id": [3]}), mode="append", storage_options=options)
        elapsed = time.monotonic() - started
        answered = proxy.requests.take()
        assert DeltaTable(uri, storage_options=options).to_pyarrow_table().num_rows == 3
    kinds = {a.kind for a in answered}
    assert "PUT" in kinds  # the data file and the commit
    assert any(a.key.endswith("_delta_log/00000000000000000001.json") for a in answered)
    trips = sequential_round_trips(answered)
    assert 1 <= trips <= len(answered)
    assert all(a.ended - a.started >= latency for a in answered)
    assert all(0 < a.served <= a.ended - a.started - latency for a in answered)  # the store's own time
    assert elapsed >= trips * latency  # the chain's requests waited one after another


def test_a_head_through_the_proxy_keeps_the_objects_size(s3_server, tmp_path):
    """A HEAD's answer has no body but names the object's size, which a reader that sizes its read by
    it (pyarrow's file system over delta-rs' store) needs: the proxy passes it on."""
    with ProxyProcess(s3_server.port, tmp_path / "requests.jsonl") as proxy:
        options = {**s3_server.storage_options(), "AWS_ENDPOINT_URL": proxy.url}
        uri = f"s3://{s3_server.bucket}/heads"
        write_deltalake(uri, pa.table({"id": [1]}), storage_options=options)
        files = pafs.PyFileSystem(DeltaStorageHandler(uri, options))
        with files.open_input_stream("_delta_log/00000000000000000000.json") as f:
            entry = f.read()
        assert b'"commitInfo"' in entry and files.get_file_info("_delta_log/00000000000000000000.json").size == len(
            entry)
        assert "HEAD" in {a.kind for a in proxy.take()}


def test_a_maintenance_look_reads_the_last_checkpoint_in_one_get(s3_server, tmp_path):
    """A maintenance look at a table asks the store for its last checkpoint's version with one GET,
    and a table checkpointed within the interval is not due for another checkpoint (a look that
    could not read the version took it for none, and checkpointed the table at every look)."""
    with ProxyProcess(s3_server.port, tmp_path / "requests.jsonl") as proxy:
        options = {**s3_server.storage_options(), "AWS_ENDPOINT_URL": proxy.url}
        uri = f"s3://{s3_server.bucket}/looks"
        for i in range(3):
            write_deltalake(uri, pa.table({"id": [i]}), mode="append", storage_options=options)
        DeltaTable(uri, storage_options=options).create_checkpoint()  # at version 2
        for i in range(2):
            write_deltalake(uri, pa.table({"id": [i]}), mode="append", storage_options=options)
        dt = DeltaTable(uri, storage_options=options)
        proxy.take()
        config = MaintenanceConfig(checkpoint_interval=3)
        state = inspect(uri, config, options, dt=dt)
        answered = proxy.take()
    assert (state.version, state.checkpoint_version) == (4, 2)
    assert "checkpoint" not in due_steps(state, config, 0.0)
    assert [(a.kind, a.status) for a in answered if "/_last_checkpoint" in a.key] == [("GET", 200)]
    assert sequential_round_trips(answered) == 1


def test_a_compaction_on_an_object_store_packs_its_bins_side_by_side(s3_server, tmp_path):
    """Each bin of a compaction reads its files one after another (three GETs a file); on an object
    store the bins are packed side by side, so the chain of reads is one bin's, not a bin's times the
    bins over the number of CPUs."""
    with ProxyProcess(s3_server.port, tmp_path / "requests.jsonl", latency=0.025) as proxy:
        options = {**s3_server.storage_options(), "AWS_ENDPOINT_URL": proxy.url}
        uri = f"s3://{s3_server.bucket}/compaction"
        for i in range(16):  # about 1.3 kB each: bins of three files below 4 kB
            write_deltalake(uri, pa.table({"id": list(range(i * 100, (i + 1) * 100)), "v": ["x" * 20] * 100}),
                            mode="append", storage_options=options)
        dt = DeltaTable(uri, storage_options=options)
        proxy.take()
        config = MaintenanceConfig(small_file_size=4000, min_small_files=4)
        result = compact(LakeTable(uri, "compaction", "changes"), config, options, dt=dt)
        answered = proxy.take()
        after = DeltaTable(uri, storage_options=s3_server.storage_options())  # past the proxy
    assert result.done and len(after.file_uris()) <= 6
    assert sorted(after.to_pyarrow_table().column("id").to_pylist()) == list(range(1600))
    reads = [a for a in answered if a.kind == "GET" and "/part-" in a.key]
    assert len(reads) >= 3 * 15  # every small file read
    assert sequential_round_trips(reads) <= 14  # one bin's reads (about 9), not the bins' two at a time (27)


def test_a_pending_tables_files_are_read_side_by_side(s3_server, tmp_path):
    """A MERGE of a large mirror reads its pending table whole: its data files side by side (a footer
    and a body each), not four at a time as pyarrow's default does, two round trips per four files."""
    with ProxyProcess(s3_server.port, tmp_path / "requests.jsonl", latency=0.025) as proxy:
        lake = open_lake(f"s3://{s3_server.bucket}/pendingread", {**s3_server.storage_options(),
                                                                  "AWS_ENDPOINT_URL": proxy.url})
        pending = PendingChanges(lake, "db", "t")
        for i in range(16):  # a batch's append each: 16 data files
            pending.append(pa.table({"id": [i, 100 + i], "v": [f"v{i}", "w"]}), ("id",), CommitProperties())
        pending = PendingChanges(lake, "db", "t")
        proxy.take()
        rows = pending.read()
        answered = proxy.take()
    assert rows is not None and rows.column("id").to_pylist()[-2:] == [15, 115]
    reads = [a for a in answered if a.kind == "GET" and "/part-" in a.key]
    assert len({a.key for a in reads}) == 16
    # Footers, then bodies, as many at once as pyarrow's I/O threads (8): about 4 round trips one after
    # another for the 16 files (5 when the pool's threads fall out of step). pyarrow's default has at
    # most 4 under way, a chain of 8.
    assert most_in_flight(reads) == pa.io_thread_count()
    assert sequential_round_trips(reads) < 8


class _CountingPipeline(Pipeline):
    """The pipeline, with the requests the store answered during each micro-batch kept."""

    proxy: ProxyProcess
    counted: list[list[Answered]]

    def _batch(self, df: Any, batch_id: int) -> None:
        self.proxy.take()  # between batches: not this batch's
        super()._batch(df, batch_id)
        self.counted.append(self.proxy.take())


@pytest.mark.spark
@pytest.mark.mysql
def test_a_steady_batch_reads_back_no_log_but_its_own_commits(spark, mysql_server, s3_server, tmp_path):
    """The pipeline holds the lake's lease, so after its first batches it reads no table's log state
    before a batch: each table moves by the pipeline's own commits. What a steady batch asks of the
    store about a table's log is then what its commits make delta-rs ask: per commit a LIST before it
    (the conflict check) and one after it (the new version read back), plus for the change log, whose
    commit delta-rs does not apply to the table object, one more to load that version. Before, every
    batch looked at each table's ``_last_checkpoint`` and listed its log again several times."""
    db = f"rt_{uuid.uuid4().hex[:8]}"
    with Connection.open(parse_dsn(mysql_server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT)")
        for i in range(1, 21):
            conn.execute(f"INSERT INTO {db}.t VALUES ({i}, {i})")
        # the stream from here: its first batch makes the mirror, which maintenance then looks at once
        # (and has its commits leave the log's cleanup to the checkpoints)
        start = server_binlog_status(conn)
        for i in range(1, 101):
            conn.execute(f"UPDATE {db}.t SET v = v + 1 WHERE id = {i % 20 + 1}")
        with ProxyProcess(s3_server.port, tmp_path / "requests.jsonl") as proxy:
            options = {**s3_server.storage_options(), "AWS_ENDPOINT_URL": proxy.url}
            lake = f"s3://{s3_server.bucket}/{db}"
            config = PipelineConfig(
                source=mysql_server.dsn("repl"), lake=lake, tables=rf"{db}\..*", trigger="once",
                starting_position=f"{start.file}:{start.pos}", max_rows_per_batch=10,
                storage=tuple(options.items()), checkpoint_dir=str(tmp_path / "checkpoint"),
                maintenance=MaintenanceConfig(look_interval=3600.0),  # its looks after the first: none here
            )
            pipeline = _CountingPipeline(config)
            pipeline.proxy, pipeline.counted = proxy, []
            assert pipeline.run(handle_signals=False).rows == 100
        direct = s3_server.storage_options()  # the proxy is gone
        mirror = {r["id"]: r["v"] for r in DeltaTable(f"{lake}/{db}/t", storage_options=direct).to_pyarrow_table()
                  .to_pylist()}
        expected: list[Any] = conn.query(f"SELECT id, v FROM {db}.t").rows
        assert mirror == {int(i): int(v) for i, v in expected}
        conn.execute(f"DROP DATABASE {db}")
    steady = [answered for answered in pipeline.counted[3:] if answered]  # the first looks and settings done
    assert len(steady) >= 4, f"only {len(steady)} steady batches: the test needs more"

    def count(kind: str, part: str) -> int:
        return sum(1 for answered in steady for a in answered if a.kind == kind and part in a.key)

    n = len(steady)
    assert count("GET", "/_last_checkpoint") == 0  # no table's log state looked up afresh
    assert count("LIST", f"/{db}/{db}/t/_delta_log/") <= 2 * n  # the mirror's MERGE: before and after it
    assert count("LIST", f"/{db}/_sluice/changes/_delta_log/") <= 3 * n  # and the change log's version loaded
    commits = sum(1 for answered in steady for a in answered if a.kind == "PUT" and "/_delta_log/0" in a.key)
    assert commits == 2 * n  # each batch: the mirror's MERGE and the change log's commit
    # each commit's entry read back twice by delta-rs, the change log's twice more as its version is
    # loaded, and never again; the fence's look for a commit after this writer's is the one that finds nothing
    assert count("GET", "/_delta_log/0") <= 2 * 2 * n + 2 * n + n
    assert sum(1 for answered in steady for a in answered if a.status == 404 and "/_delta_log/0" in a.key) == n


def test_a_tasks_files_go_to_the_store_side_by_side(s3_server, tmp_path):
    """A task's files (a part's change-log file, its tables' MERGE sources) are PUT side by side:
    one round trip for all of them, every one in the store once ``done`` returns; a PUT that fails
    is raised there."""
    with ProxyProcess(s3_server.port, tmp_path / "requests.jsonl", latency=0.2) as proxy:
        store = open_lake(f"s3://{s3_server.bucket}/uploads", {**s3_server.storage_options(),
                                                               "AWS_ENDPOINT_URL": proxy.url})
        uploads = Uploads(store)
        for i in range(3):
            uploads.write_file(store.join(f"f{i}"), f"file {i}".encode())
        uploads.done()
        answered = proxy.take()
        assert sorted(store.get(f"f{i}") for i in range(3)) == [b"file 0", b"file 1", b"file 2"]
        assert [a.kind for a in answered] == ["PUT"] * 3 and sequential_round_trips(answered) == 1
        gone = open_lake("s3://no-such-bucket/uploads", {**s3_server.storage_options(),
                                                          "AWS_ENDPOINT_URL": proxy.url})
        failing = Uploads(gone)
        failing.write_file(gone.join("f"), b"x")
        with pytest.raises(SluiceError):
            failing.done()
