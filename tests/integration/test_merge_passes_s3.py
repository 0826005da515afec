"""A MERGE in passes on a lake in S3 (the real S3 API server): the mirror and its change feed as a
MERGE by delta-rs on a local lake leaves them, batch after batch and through a flush of pending rows;
its own commit is a conditional write, so a version another writer took fails it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from sluice.errors import LakeBusyError
from sluice.lake.layout import open_lake
from sluice.lake.mirror.passes import merge_in_passes
from sluice.lake.mirror.pending import MirrorCadence, read_mirror
from sluice.lake.mirror.pieces import AFTER_PENDING, TablePiece
from sluice.lake.sink import DeltaLake
from sluice.sandbox.s3 import S3Sandbox
from tests.unit.lake.test_merge_passes import IN_PASSES, LATER_IN_PASSES, feed, source
from tests.unit.lake.test_pending import random_batches
from tests.unit.lake.test_sink import items, read


def _rows(uri: str, options: dict[str, str]) -> list[dict]:
    return sorted(DeltaTable(uri, storage_options=options).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def _feed(uri: str, options: dict[str, str], version: int) -> object:
    rows = pa.table(DeltaTable(uri, storage_options=options).load_cdf(starting_version=version,
                                                                      ending_version=version).read_all())
    names = [n for n in rows.column_names if not n.startswith("_commit")]
    return sorted(tuple(str(v) for v in r.values()) for r in rows.select(names).to_pylist())


def test_passes_on_s3_as_a_merge_on_a_local_lake(s3_server: S3Sandbox, tmp_path: Path):
    options = s3_server.storage_options()
    root = f"s3://{s3_server.bucket}/passes-{uuid.uuid4().hex[:8]}"
    remote = DeltaLake(open_lake(root, options), "p", cadence=IN_PASSES)
    local = DeltaLake(tmp_path / "whole", "p", cadence=MirrorCadence(max_lag=0))
    for b, changes in enumerate(random_batches(11, 8)):
        local.write_batch(b, [items(changes)])
        remote.write_batch(b, [items(changes)])
        uri, here = remote.table_path("shop", "items"), local.table_path("shop", "items")
        assert _rows(uri, options) == read(here)
        version = DeltaTable(here).version()
        expected = sorted(tuple(str(v) for v in r) for r in feed(Path(here), version).elements())
        assert _feed(uri, options, version) == expected
    later = DeltaLake(open_lake(f"{root}-later", options), "p", cadence=LATER_IN_PASSES)
    for b, changes in enumerate(random_batches(12, 6)):
        later.write_batch(b, [items(changes)])
    expected = sorted(read_mirror(later.store, "shop", "items").to_pylist(), key=lambda r: r["id"])
    assert later.flush_all() > 0
    assert _rows(later.table_path("shop", "items"), options) == expected


def test_a_version_taken_on_s3_fails_the_commit(s3_server: S3Sandbox):
    options = s3_server.storage_options()
    root = f"s3://{s3_server.bucket}/taken-{uuid.uuid4().hex[:8]}"
    lake = DeltaLake(open_lake(root, options), "p", cadence=IN_PASSES)
    lake.write_batch(0, [items(random_batches(13, 1)[0])])
    uri = lake.table_path("shop", "items")
    dt = DeltaTable(uri, storage_options=options)
    before = _rows(uri, options)
    write_deltalake(uri, dt.to_pyarrow_table().slice(0, 0), mode="append", storage_options=options)
    with pytest.raises(LakeBusyError, match="another writer"):
        merge_in_passes(dt, uri, lake.store, [TablePiece(source([1, 2], 9), AFTER_PENDING)], "id", app_id="p",
                        batch_id=1, file_rows=10, change_feed=True)
    assert _rows(uri, options) == before
