"""``sluice run --metrics-port``: a pipeline on real Spark and a real server serves Prometheus metrics
whose figures match what it committed; the source reports what it reads to the progress loop."""

from __future__ import annotations

import os
import urllib.request
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from sluice.spark.pipeline.metrics import PipelineMetrics
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig

pytestmark = pytest.mark.spark


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode("utf-8")
    return {
        (sample.name, tuple(sorted((k, v) for k, v in sample.labels.items() if k != "pipeline"))): sample.value
        for family in text_string_to_metric_families(text) for sample in family.samples
    }


def _run(config: PipelineConfig) -> tuple[dict[tuple[str, tuple[tuple[str, str], ...]], float], object]:
    pipeline = Pipeline(config)
    metrics = pipeline.metrics = PipelineMetrics(pipeline.app_id)
    port = metrics.serve(0, "127.0.0.1")
    try:
        stats = pipeline.run(handle_signals=False, report_every=0.2)
        assert stats.in_flight is not None, "the source never reported what it reads"
        assert not os.path.exists(pipeline._in_flight), "the in-flight report file outlived the run"
        return scrape(port), stats
    finally:
        metrics.close()


def test_metrics_count_the_committed_changes(spark, mariadb_server, tmp_path) -> None:
    db = f"mx_{uuid.uuid4().hex[:8]}"
    table = f"{db}.items"
    config = PipelineConfig(source=mariadb_server.dsn("repl"), lake=str(tmp_path / "lake"), tables=rf"{db}\..*",
                            trigger="once", snapshot="initial", chunk_rows=10)
    with Connection.open(parse_dsn(mariadb_server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.items (id INT PRIMARY KEY, n INT)")
        conn.execute(f"INSERT INTO {db}.items VALUES " + ", ".join(f"({i}, {i})" for i in range(1, 38)))
        got, _ = _run(config)  # the snapshot: 37 rows in chunks of up to 10 keys
        assert got[("sluice_snapshot_rows", ())] == 37
        assert got[("sluice_snapshot_chunks_done", ())] == got[("sluice_snapshot_chunks", ())] >= 4
        conn.execute(f"INSERT INTO {db}.items VALUES " + ", ".join(f"({i}, {i})" for i in range(38, 48)))
        conn.execute(f"UPDATE {db}.items SET n = n + 1 WHERE id <= 7")
        conn.execute(f"DELETE FROM {db}.items WHERE id > 44")
        conn.execute(f"ALTER TABLE {db}.items ADD COLUMN note VARCHAR(10) DEFAULT 'x'")
        end = server_binlog_status(conn)
    got, stats = _run(config)  # the stream from where the snapshot started
    changes = {dict(labels)["op"]: v for (name, labels), v in got.items()
               if name == "sluice_changes_total" and ("table", table) in labels}
    assert changes == {"insert": 10, "update": 7, "delete": 3}
    assert got[("sluice_ddl_total", ())] == 1
    assert got[("sluice_batches_total", ())] == got[("sluice_batch_duration_seconds_count", ())] == stats.batches >= 1
    positions = {dict(labels)["file"]: v for (name, labels), v in got.items() if name == "sluice_committed_position"}
    assert len(positions) == 1
    ((file, pos),) = positions.items()
    assert (file, pos) < (end.file, end.pos)
    assert got[("sluice_lag_seconds", ())] >= 0
    assert got[("sluice_largest_transaction_bytes", ())] >= 0  # every transaction committed: none in flight
    assert ("sluice_largest_transaction_rows", ()) in got
    assert not any(name == "sluice_errors_total" for name, _ in got)
    # Nothing failed: the retry series exist and stay at zero.
    assert got[("sluice_retries_total", (("kind", "reconnect"),))] == 0
    assert got[("sluice_retries_total", (("kind", "task"),))] == 0


def test_a_port_in_use_is_a_config_error() -> None:
    from sluice.errors import ConfigError

    first = PipelineMetrics("p1")
    port = first.serve(0, "127.0.0.1")
    try:
        with pytest.raises(ConfigError, match=f"--metrics-port {port}"):
            PipelineMetrics("p2").serve(port, "127.0.0.1")
    finally:
        first.close()
