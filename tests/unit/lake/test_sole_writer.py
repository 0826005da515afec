"""A sole writer's kept tables (``DeltaLake.sole_writer``, ``sluice.lake.kept_table``) against real
Delta tables: after the first read, a batch reads no table's log (each table moves by the writer's
own commits), yet a commit another handle made is never built over: the change log's is found
before the batch's fence, a mirror's makes the batch's commit fail, and nothing lands twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from sluice.errors import LakeBusyError
from sluice.lake.kept_table import KeptTable
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.sink import DeltaLake
from tests.unit.lake.test_sink import ITEMS, Log, changelog, items, read

pytestmark = pytest.mark.unit


@pytest.fixture
def refreshes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The table URIs whose log was read for new commits (``update_incremental``)."""
    calls: list[str] = []
    original = DeltaTable.update_incremental

    def counted(self: DeltaTable) -> None:
        calls.append(self.table_uri)
        original(self)

    monkeypatch.setattr(DeltaTable, "update_incremental", counted)
    return calls


def _sole(tmp_path: Path) -> DeltaLake:
    lake = DeltaLake(tmp_path / "lake", "test-pipeline")
    lake.sole_writer()
    return lake


def test_a_sole_writers_batches_read_no_log_after_the_first(tmp_path: Path, refreshes: list[str]) -> None:
    lake, log = _sole(tmp_path), Log()
    lake.write_batch(0, [items([log.insert(id=i, name="a", qty=i) for i in range(3)])])
    lake.write_batch(1, [items([log.update({"id": 0, "name": "a", "qty": 0}, {"id": 0, "name": "b", "qty": 9})])])
    refreshes.clear()
    for batch in range(2, 6):
        assert lake.committed_batch() == batch - 1
        lake.write_batch(batch, [items([log.insert(id=10 + batch, name="n", qty=batch)])])
    assert refreshes == []
    assert lake.committed_batch() == 5
    assert [r["id"] for r in read(lake.table_path("shop", "items"))] == [0, 1, 2, 12, 13, 14, 15]
    assert [r["batch_id"] for r in changelog(lake)] == [0, 0, 0, 1, 2, 3, 4, 5]


def _events(log: Log, n: int) -> TableBatch:
    """A batch of a table without a primary key: it goes to the change log only."""
    return TableBatch("shop", "events", ITEMS, (), [log.insert(id=n, name="e", qty=n)])


def test_a_change_log_commit_of_another_handle_is_found_before_the_fence(tmp_path: Path) -> None:
    lake, log, events = _sole(tmp_path), Log(), Log("events", ())
    lake.write_batch(0, [_events(events, 0)])
    lake.write_batch(1, [_events(events, 1)])
    DeltaLake(lake.root, "test-pipeline").write_batch(2, [_events(events, 2)])
    seen: list[int] = []

    def fence(table: Any) -> None:
        seen.append(table.version())

    # the batch the other handle committed is found, and skipped
    assert lake.write_batch(2, [_events(events, 2)], fence=fence).changelog_skipped
    DeltaLake(lake.root, "another-pipeline").write_batch(0, [_events(events, 3)])
    newest = DeltaTable(lake.changelog_path).version()
    lake.write_batch(3, [_events(events, 4), items([log.insert(id=4, name="a", qty=4)])], fence=fence)
    # the fence ran on the change log as this writer left it, beside the look for a newer commit, and
    # again on the change log as it stood once that look found one
    assert seen[-1] == newest and newest - 1 in seen
    assert [r["batch_id"] for r in changelog(lake)] == [0, 0, 1, 2, 3, 3]
    assert lake.committed_batch() == 3


def test_a_mirror_commit_of_another_handle_fails_the_batch_not_the_lake(tmp_path: Path) -> None:
    lake, log = _sole(tmp_path), Log()
    lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1)])])
    lake.write_batch(1, [items([log.insert(id=2, name="a", qty=2)])])  # the mirror is kept from here on
    DeltaLake(lake.root, "another-pipeline").write_batch(0, [items([log.insert(id=3, name="b", qty=3)])])
    change = items([log.update({"id": 1, "name": "a", "qty": 1}, {"id": 1, "name": "z", "qty": 1})])
    with pytest.raises(LakeBusyError):  # its mirror moved on under it: the MERGE lands nowhere
        lake.write_batch(2, [change])
    assert [r["batch_id"] for r in changelog(lake)] == [0, 0, 1]  # its own two batches and the other's
    assert {r["id"]: r["name"] for r in read(lake.table_path("shop", "items"))} == {1: "a", 2: "a", 3: "b"}
    lake.stale(lake.table_path("shop", "items"))  # told (as maintenance tells it): the batch commits
    lake.write_batch(2, [change])
    assert {r["id"]: r["name"] for r in read(lake.table_path("shop", "items"))} == {1: "z", 2: "a", 3: "b"}
    assert [r["batch_id"] for r in changelog(lake)] == [0, 0, 1, 2]


def test_a_commit_that_leaves_the_object_behind_is_loaded_in_the_background(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    kept = KeptTable(path, None, sole=True)
    assert kept.current() is None
    write_deltalake(path, pa.table({"id": [1]}))
    dt = kept.current()
    assert dt is not None and dt.version() == 0
    for batch in (1, 2):
        before = dt.version()
        dt.create_write_transaction([], "append", dt.schema(),
                                    commit_properties=CommitProperties(app_transactions=[Transaction("app", batch)]))
        assert dt.version() == before  # delta-rs leaves the object where it was
        kept.committed(before, "app", batch)
        assert kept.current() is dt and dt.version() == before + 1
        assert kept.transaction_version("app") == batch == DeltaTable(path).transaction_version("app")
