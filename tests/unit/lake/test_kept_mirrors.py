"""The mirrors and pending tables the writer keeps between batches (``DeltaLake`` over
``sluice.lake.kept_table``): each is read whole once, then only its new commits; what another
writer or a compaction commits in between is seen; a table removed and made again at its path is
read afresh after ``forget``; and the lake's rows stay those of a lake written by fresh reads."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable

from sluice.lake.sink import DeltaLake
from tests.unit.lake.test_pending import ALWAYS_LATER, random_batches, state
from tests.unit.lake.test_sink import Log, items, read

pytestmark = pytest.mark.unit


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Whole reads of a Delta table's log, by path: ``DeltaTable(...)`` and ``transaction_version``."""
    counts: Counter[str] = Counter()
    init, lookup = DeltaTable.__init__, DeltaTable.transaction_version

    def counted_init(self: DeltaTable, table_uri: object, *args: object, **kwargs: object) -> None:
        counts[str(table_uri).rstrip("/")] += 1
        init(self, table_uri, *args, **kwargs)  # type: ignore[arg-type]

    def counted_lookup(self: DeltaTable, app_id: str) -> int | None:
        counts[self.table_uri.rstrip("/").removeprefix("file://")] += 1
        return lookup(self, app_id)

    monkeypatch.setattr(DeltaTable, "__init__", counted_init)
    monkeypatch.setattr(DeltaTable, "transaction_version", counted_lookup)
    return counts


def _reads_of(counts: Counter[str], path: str) -> int:
    return sum(n for p, n in counts.items() if p.endswith(path.removeprefix("file://")))


def test_a_mirror_and_its_pending_table_are_read_whole_once(tmp_path: Path, reads: Counter[str]) -> None:
    lake = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)
    batches = random_batches(7, 30)
    for b in range(3):  # the mirror is made, then the pending table, then read once
        lake.write_batch(b, [items(batches[b])])
    mirror = lake.table_path("shop", "items")
    pending = lake.store.pending("shop", "items")
    reads.clear()
    for b, changes in enumerate(batches[3:], start=3):
        assert lake.write_batch(b, [items(changes)]).tables[0].status == "pending"
    assert _reads_of(reads, mirror) == 0 and _reads_of(reads, pending) == 0
    assert _reads_of(reads, lake.changelog_path) == 0
    assert lake.flush_all() > 0
    assert _reads_of(reads, mirror) == 0  # the flush MERGEs through the kept table too
    model = DeltaLake(tmp_path / "model", "p")
    for b, changes in enumerate(batches):
        model.write_batch(b, [items(changes)])
    assert read(mirror) == read(model.table_path("shop", "items"))


def test_what_others_commit_in_between_is_seen(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path / "lake", "p", cadence=ALWAYS_LATER)
    model = DeltaLake(tmp_path / "model", "p")
    batches = random_batches(3, 12)
    mirror = lake.table_path("shop", "items")
    pending = lake.store.pending("shop", "items")
    for b, changes in enumerate(batches):
        model.write_batch(b, [items(changes)])
        if b == 5:  # the same pipeline's batch, committed by another writer (a restart's replay)
            other = DeltaLake(lake.root, "p", cadence=ALWAYS_LATER)
            assert other.write_batch(b, [items(changes)]).tables[0].status == "pending"
            assert lake.write_batch(b, [items(changes)]).tables[0].status == "skipped"
        else:
            lake.write_batch(b, [items(changes)])
        if b in (3, 8):  # maintenance between batches
            DeltaTable(mirror).optimize.compact()
            DeltaTable(pending).optimize.compact()
        assert state(lake) == read(model.table_path("shop", "items"))
    lake.flush_all()
    assert read(mirror) == read(model.table_path("shop", "items"))


def test_a_mirror_made_again_at_its_path_is_read_afresh_after_forget(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path / "lake", "p")
    log = Log()
    for b in range(6):  # the mirror's log reaches version 6
        lake.write_batch(b, [items([log.insert(id=b, name="old", qty=b)])])
    mirror = lake.table_path("shop", "items")
    assert DeltaTable(mirror).version() >= 5
    lake.store.delete_prefix(lake.store.key(mirror))  # a DDL archives it; the table is made again
    lake.forget()
    lake.write_batch(6, [items([log.insert(id=100, name="new", qty=1)])])
    new = {"id": 100, "name": "new", "qty": 1}
    lake.write_batch(7, [items([log.insert(id=101, name="new", qty=2), log.update(new, {**new, "qty": 3})])])
    assert read(mirror) == [{"id": 100, "name": "new", "qty": 3}, {"id": 101, "name": "new", "qty": 2}]
    assert DeltaTable(mirror).version() == 2  # made, filled, MERGEd: a new log
