"""A mirror's pending changes (``sluice.lake.mirror.pending``): batches appended instead of MERGEd
give, through ``read_mirror`` and after a flush, the rows a MERGE of every batch gives; a replayed
batch, a kill between a MERGE and the emptying, and minimal images keep that true."""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sluice.errors import ConfigError
from sluice.lake.layout import open_lake
from sluice.lake.mirror import commits
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.mirror.pending import MirrorCadence, PendingChanges, mirror_bytes, read_mirror
from sluice.lake.sink import DeltaLake
from tests.unit.lake.test_sink import ITEMS, Log, items, read

pytestmark = pytest.mark.unit

ALWAYS_LATER = MirrorCadence(merge_below=1, bytes_per_change=1, max_lag=3600, max_pending_rows=10**9)


def state(lake: DeltaLake) -> list[dict[str, Any]]:
    return sorted(read_mirror(lake.store, "shop", "items").to_pylist(), key=lambda r: r["id"])


def pending_rows(lake: DeltaLake) -> int:
    return PendingChanges(lake.store, "shop", "items").rows


def random_batches(seed: int, n: int) -> list[list[Any]]:
    """Batches of inserts, updates and deletes at random keys, consistent with one table."""
    rng = random.Random(seed)
    log, rows, batches = Log(), {}, []
    for b in range(n):
        changes = []
        for _ in range(30 if b == 0 else rng.randint(1, 12)):
            key = rng.randint(1, 40)
            if key in rows and rng.random() < 0.3:
                changes.append(log.delete(**rows.pop(key)))
            elif key in rows:
                after = {"id": key, "name": f"n{rng.randint(0, 9)}", "qty": rng.randint(0, 99)}
                changes.append(log.update(rows[key], after))
                rows[key] = after
            else:
                rows[key] = {"id": key, "name": f"i{b}", "qty": b}
                changes.append(log.insert(**rows[key]))
        batches.append(changes)
    return batches


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pending_batches_read_as_merged_ones(tmp_path: Path, seed: int) -> None:
    now = DeltaLake(tmp_path / "now", "p")
    later = DeltaLake(tmp_path / "later", "p", cadence=ALWAYS_LATER)
    for b, changes in enumerate(random_batches(seed, 12)):
        now.write_batch(b, [items(changes)])
        result = later.write_batch(b, [items(changes)])
        assert result.tables[0].status == ("written" if b == 0 else "pending")  # the first fills an empty mirror
        assert state(later) == read(now.table_path("shop", "items"))
    assert pending_rows(later) > 0
    assert read(later.table_path("shop", "items")) != read(now.table_path("shop", "items"))
    assert later.flush_all() > 0
    assert pending_rows(later) == 0
    assert read(later.table_path("shop", "items")) == read(now.table_path("shop", "items"))


def test_a_clean_stop_merges_the_pending_tables_side_by_side(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # Each table's MERGE waits at a barrier for the other two: MERGEd one by one, none would pass it.
    lake = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)
    logs = [Log(name) for name in "abc"]
    for b in range(2):
        lake.write_batch(b, [TableBatch("shop", log.table, ITEMS, ("id",), [log.insert(id=b, name="x", qty=b)])
                             for log in logs])
    barrier, real_merge = threading.Barrier(3, timeout=10), commits.merge_into

    def meet(*args: Any) -> Any:
        barrier.wait()
        return real_merge(*args)

    def waiting() -> list[int]:
        return [PendingChanges(lake.store, "shop", log.table).rows for log in logs]

    assert waiting() == [1, 1, 1]  # the second batch's row of each table
    monkeypatch.setattr(commits, "merge_into", meet)
    assert lake.flush_all() == 3
    assert [read(lake.table_path("shop", log.table)) for log in logs] == [
        [{"id": 0, "name": "x", "qty": 0}, {"id": 1, "name": "x", "qty": 1}]] * 3
    assert waiting() == [0, 0, 0]


def test_the_cadence_merges_once_pending_changes_pay_for_the_rewrite(tmp_path: Path) -> None:
    cadence = MirrorCadence(merge_below=1, bytes_per_change=40, max_lag=3600)
    lake = DeltaLake(tmp_path / "lake", "p", cadence=cadence)
    log = Log()
    lake.write_batch(0, [items([log.insert(id=i, name="x", qty=i) for i in range(50)])])
    mirror = mirror_bytes(lake.table(lake.table_path("shop", "items")))
    statuses = []
    for b in range(1, 500):
        i = b % 50
        result = lake.write_batch(b, [items([log.update({"id": i, "name": "x", "qty": i}, {"id": i, "name": "x",
                                                                                           "qty": i})])])
        statuses.append(result.tables[0].status)
        if result.tables[0].status == "written":
            break
    # one change per batch: the MERGE comes once the pending changes times 40 bytes reach the mirror's size
    assert statuses[-1] == "written" and len(statuses) == -(-mirror // 40)
    assert set(statuses[:-1]) == {"pending"}
    assert pending_rows(lake) == 0


def test_a_replayed_batch_is_not_pending_twice(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)
    log = Log()
    lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1)])])
    batch = [items([log.update({"id": 1, "name": "a", "qty": 1}, {"id": 1, "name": "b", "qty": 2})])]
    assert lake.write_batch(1, batch).tables[0].status == "pending"
    again = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)  # a restart
    assert again.write_batch(1, batch).tables[0].status == "skipped"
    assert pending_rows(again) == 1
    assert state(again) == [{"id": 1, "name": "b", "qty": 2}]


def test_a_kill_between_the_merge_and_the_emptying_changes_nothing(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    lake = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)
    log = Log()
    lake.write_batch(0, [items([log.insert(id=i, name="a", qty=i) for i in range(5)])])
    lake.write_batch(1, [items([log.update({"id": 1, "name": "a", "qty": 1}, {"id": 1, "name": "b", "qty": 1}),
                                log.delete(id=2, name="a", qty=2)])])
    monkeypatch.setattr(PendingChanges, "clear", lambda self, txn: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        lake.flush_all()
    monkeypatch.undo()
    assert pending_rows(lake) == 2  # MERGEd, not emptied
    again = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)
    again.write_batch(2, [items([log.insert(id=2, name="again", qty=9)])])
    again.flush_all()
    assert read(again.table_path("shop", "items")) == [
        {"id": 0, "name": "a", "qty": 0}, {"id": 1, "name": "b", "qty": 1}, {"id": 2, "name": "again", "qty": 9},
        {"id": 3, "name": "a", "qty": 3}, {"id": 4, "name": "a", "qty": 4},
    ]


@pytest.mark.parametrize("then", ["batch", "flush"])
def test_a_kill_between_a_batchs_merge_and_the_emptying_undoes_nothing(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       then: str) -> None:
    """A batch's MERGE takes the pending rows with its own changes; killed before the pending table
    is emptied, the replayed batch finds the mirror done. The rows left pending are older than that
    MERGE: they are dropped, not MERGEd again over the batch's newer changes (by the next batch's
    MERGE or by a clean stop's)."""
    cadence = MirrorCadence(merge_below=1, bytes_per_change=1, max_lag=3600, max_pending_rows=3)
    lake = DeltaLake(tmp_path / "lake", "p", cadence=cadence)
    log = Log()
    lake.write_batch(0, [items([log.insert(id=i, name="a", qty=i) for i in range(5)])])
    lake.write_batch(1, [items([log.update({"id": 1, "name": "a", "qty": 1}, {"id": 1, "name": "a", "qty": 10})])])
    assert pending_rows(lake) == 1
    batch = [items([log.update({"id": 1, "name": "a", "qty": 10}, {"id": 1, "name": "a", "qty": 20}),
                    log.update({"id": 3, "name": "a", "qty": 3}, {"id": 3, "name": "a", "qty": 30})])]
    monkeypatch.setattr(PendingChanges, "clear", lambda self, txn: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        lake.write_batch(2, batch)  # 1 + 2 rows: MERGEd, then killed before the emptying
    monkeypatch.undo()
    assert pending_rows(lake) == 1
    again = DeltaLake(tmp_path / "lake", "p", cadence=cadence)  # a restart
    assert again.write_batch(2, batch).tables[0].status == "skipped"
    if then == "batch":
        again.write_batch(3, [items([log.insert(id=7, name="x", qty=7)])])
    again.flush_all()
    expected = {0: 0, 1: 20, 2: 2, 3: 30, 4: 4, **({7: 7} if then == "batch" else {})}
    assert {r["id"]: r["qty"] for r in read(again.table_path("shop", "items"))} == expected
    assert pending_rows(again) == 0


def test_a_fold_that_reads_the_mirror_merges_the_pending_rows_first(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)
    log = Log()
    lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1)])])
    assert lake.write_batch(1, [items([log.update({"id": 1, "name": "a", "qty": 1},
                                                  {"id": 1, "name": "b", "qty": 5})])]).tables[0].status == "pending"
    # a minimal image that moves the key: the other columns come from the mirror, pending included
    lake.write_batch(2, [items([log.update({"id": 1}, {"id": 7})])])
    assert state(lake) == [{"id": 7, "name": "b", "qty": 5}]
    lake.flush_all()
    assert read(lake.table_path("shop", "items")) == [{"id": 7, "name": "b", "qty": 5}]


def test_pending_tables_live_under_the_lake_layout(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)
    log = Log()
    lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1)])])
    lake.write_batch(1, [items([log.insert(id=2, name="b", qty=2)])])
    assert os.path.isdir(os.path.join(open_lake(tmp_path / "lake").pending("shop", "items"), "_delta_log"))
    assert state(DeltaLake(open_lake(str(tmp_path / "lake")), "other")) == [
        {"id": 1, "name": "a", "qty": 1}, {"id": 2, "name": "b", "qty": 2}]


@pytest.mark.parametrize("bad", [{"bytes_per_change": 0}, {"max_lag": -1}, {"merge_below": 1.5},
                                 {"max_lag": float("inf")}, {"commits_at_once": 0}])
def test_a_bad_cadence_is_a_config_error(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="mirror"):
        MirrorCadence(**bad)


def test_the_oldest_pending_change_is_when_its_batch_was_appended(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)
    log = Log()
    lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1)])])
    before = time.time()
    lake.write_batch(1, [items([log.insert(id=2, name="b", qty=2)])])
    lake.write_batch(2, [items([log.insert(id=3, name="c", qty=3)])])
    oldest = PendingChanges(lake.store, "shop", "items").oldest
    assert oldest is not None and before - 0.001 <= oldest <= time.time()
    cadence = MirrorCadence(merge_below=1, bytes_per_change=1, max_lag=60)
    assert not cadence.due(10**9, 2, oldest, oldest + 59)
    assert cadence.due(10**9, 2, oldest, oldest + 60)  # max_lag
    assert cadence.due(10**9, 10**9, oldest, oldest)  # the changes pay for the rewrite
    assert cadence.due(100, 1, None, 0) is False and MirrorCadence(merge_below=101).due(100, 1, None, 0)
    assert MirrorCadence(max_lag=0).due(10**9, 1, None, 0)  # every batch


def test_a_minimal_image_that_patches_a_row_comes_after_the_pending_rows(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)
    log = Log()
    lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1), log.insert(id=2, name="b", qty=2)])])
    assert lake.write_batch(1, [items([log.update({"id": 1, "name": "a", "qty": 1}, {"id": 1, "name": "A", "qty": 1}),
                                       log.insert(id=3, name="c", qty=3)])]).tables[0].status == "pending"
    # a minimal image carries the key and the changed column only: its MERGE patches the mirror's row
    assert lake.write_batch(2, [items([log.update({"id": 1}, {"qty": 11})])]).tables[0].status == "written"
    expected = [{"id": 1, "name": "A", "qty": 11}, {"id": 2, "name": "b", "qty": 2}, {"id": 3, "name": "c", "qty": 3}]
    assert state(lake) == expected
    assert pending_rows(lake) == 0
    assert read(lake.table_path("shop", "items")) == expected


def test_the_writer_knows_how_long_each_mirror_has_waited(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)
    log = Log()
    first = lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1)])])
    assert first.waiting == {} and lake.waiting == {}  # the first batch fills the empty mirror
    before = time.time()
    second = lake.write_batch(1, [items([log.insert(id=2, name="b", qty=2)])])
    third = lake.write_batch(2, [items([log.insert(id=3, name="c", qty=3)])])
    assert set(second.waiting) == {"shop.items"} and before <= second.waiting["shop.items"] <= time.time()
    assert third.waiting == second.waiting  # the oldest pending change is still batch 1's
    assert lake.flush_all() == 2 and lake.waiting == {}
    now = DeltaLake(tmp_path / "now", "p")  # MERGEd every batch: nothing ever waits
    assert now.write_batch(0, [items([log.insert(id=9, name="z", qty=9)])]).waiting == {}
    assert now.write_batch(1, [items([log.insert(id=10, name="y", qty=1)])]).waiting == {}
