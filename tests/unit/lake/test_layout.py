"""The lake's layout (``sluice.lake.layout``): where each part of a lake lives, which names cannot be
a mirror, and the one listing of the lake's Delta tables."""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from sluice.errors import SchemaError
from sluice.lake.layout import Lake, open_lake

pytestmark = pytest.mark.unit


def _table(path: Path) -> None:
    write_deltalake(str(path), pa.table({"id": [1]}))


def test_every_part_has_its_place_under_the_root():
    lake = open_lake("s3://bucket/lake", {"aws_region": "x"})
    assert isinstance(lake, Lake) and lake.options == {"aws_region": "x"}
    assert lake.mirror("shop", "orders") == "s3://bucket/lake/shop/orders"
    assert lake.changes == "s3://bucket/lake/_sluice/changes"
    assert lake.pending("shop", "orders") == "s3://bucket/lake/_sluice/pending/shop/orders"
    assert lake.staging(7) == "s3://bucket/lake/_sluice/staging/7"
    assert lake.archive("shop", "orders", ("binlog.000002", 4)) == \
        "s3://bucket/lake/_sluice/archive/shop/orders@binlog.000002-4"
    assert lake.key(lake.pending("shop", "orders")) == "_sluice/pending/shop/orders"
    assert open_lake(lake) is lake
    assert pickle.loads(pickle.dumps(lake)) == lake  # executors rebuild it


@pytest.mark.parametrize(("db", "table"), [("_sluice", "t"), ("shop", "a/b"), ("..", "t"), ("shop", ""),
                                          ("shop", "t__history")])
def test_a_name_that_cannot_be_a_mirror_is_refused(db, table):
    with pytest.raises(SchemaError, match="exclude"):
        open_lake("/lake").mirror(db, table)


def test_the_tables_are_the_mirrors_the_change_log_the_archive_and_the_pending_tables(tmp_path):
    lake = open_lake(tmp_path)
    for uri in (lake.mirror("shop", "orders"), lake.mirror("shop", "items"), lake.changes,
                lake.archive("shop", "old", ("binlog.000001", 4)), lake.pending("shop", "items")):
        _table(Path(uri))
    (tmp_path / "shop" / "not_a_table").mkdir()
    Path(lake.staging(3)).mkdir(parents=True)
    found = [(t.name, t.kind) for t in lake.tables()]
    assert found == [("shop.items", "mirror"), ("shop.orders", "mirror"), ("_sluice.changes", "changes"),
                     ("_sluice.archive/shop/old@binlog.000001-4", "archive"), ("_sluice.pending/shop/items", "pending")]
    assert lake.mirrors() == [("shop", "items"), ("shop", "orders")]
    assert lake.pending_tables() == [("shop", "items")]
    assert not lake.holds_pipeline()


def test_a_history_lives_beside_its_mirror_and_is_listed_as_a_history_not_a_mirror(tmp_path):
    lake = open_lake(tmp_path)
    assert lake.history("shop", "t") == lake.mirror("shop", "t") + "__history"
    for uri in (lake.mirror("shop", "t"), lake.history("shop", "t"), lake.history("shop", "gone")):
        _table(Path(uri))
    assert lake.mirrors() == [("shop", "t")]
    assert lake.histories() == [("shop", "gone"), ("shop", "t")]
    assert [(t.name, t.kind) for t in lake.tables()] == [
        ("shop.t", "mirror"), ("shop.gone__history", "history"), ("shop.t__history", "history")]


def test_a_lake_not_yet_written_has_no_tables_and_is_not_made(tmp_path):
    lake = open_lake(tmp_path / "missing")
    assert lake.tables() == [] and lake.mirrors() == [] and lake.pending_tables() == []
    assert not (tmp_path / "missing").exists()
