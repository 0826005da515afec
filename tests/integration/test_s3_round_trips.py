"""The S3 proxy in front of the real S3 test server: it records what a lake's writes ask of the store
and holds each request for the latency it is given, as the round-trip bench needs."""

from __future__ import annotations

import time

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from sluice.sandbox.s3 import S3Sandbox
from tests.s3_proxy import S3Proxy, sequential_round_trips


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
    assert elapsed >= trips * latency  # the chain's requests waited one after another
