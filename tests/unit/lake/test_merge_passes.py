"""A MERGE in passes (``sluice.lake.mirror.passes``) gives the mirror and the change data feed a
MERGE by delta-rs gives: batch after batch of random changes, with a pass limit of one row so that
every batch and every flush of pending rows goes through it, against the same batches MERGEd whole;
a key that several pieces carry ends at its last piece's state; a version taken by another writer
fails the commit and leaves the mirror as it was."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from sluice.errors import LakeBusyError
from sluice.lake.layout import open_lake
from sluice.lake.mirror.merge_source import DELETE_FLAG
from sluice.lake.mirror.own_commit import commit_rewrite, unwritable
from sluice.lake.mirror.passes import merge_in_passes
from sluice.lake.mirror.pending import MirrorCadence
from sluice.lake.mirror.pieces import AFTER_PENDING, KeyIndex, TablePiece
from sluice.lake.sink import DeltaLake
from tests.unit.lake.test_pending import random_batches, state
from tests.unit.lake.test_sink import items, read

pytestmark = pytest.mark.unit

IN_PASSES = MirrorCadence(max_lag=0, pass_rows=1)  # every MERGE of more than one key in passes
LATER_IN_PASSES = MirrorCadence(merge_below=1, bytes_per_change=1, max_lag=3600, max_pending_rows=10**9,
                                pass_rows=1)


def feed(path: Path, version: int) -> Counter[tuple[Any, ...]]:
    """The change data feed of one version of a table, as a multiset of rows."""
    rows = pa.table(DeltaTable(str(path)).load_cdf(starting_version=version, ending_version=version).read_all())
    names = [n for n in rows.column_names if not n.startswith("_commit")]
    return Counter(tuple(r[n] for n in names) for r in rows.select(names).to_pylist())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_merged_in_passes_as_merged_whole(tmp_path: Path, seed: int) -> None:
    whole = DeltaLake(tmp_path / "whole", "p", cadence=MirrorCadence(max_lag=0))
    passes = DeltaLake(tmp_path / "passes", "p", cadence=IN_PASSES)
    for b, changes in enumerate(random_batches(seed, 12)):
        expected = whole.write_batch(b, [items(changes)]).tables[0]
        got = passes.write_batch(b, [items(changes)]).tables[0]
        a, z = whole.table_path("shop", "items"), passes.table_path("shop", "items")
        assert read(z) == read(a)
        assert (got.inserted, got.updated, got.deleted) == (expected.inserted, expected.updated, expected.deleted)
        version = DeltaTable(a).version()
        assert DeltaTable(z).version() == version
        assert feed(Path(z), version) == feed(Path(a), version)
        assert DeltaTable(z).transaction_version("p") == b
    entries = [e for e in (Path(passes.table_path("shop", "items")) / "_delta_log").iterdir()
               if e.name.endswith(".json")]
    assert any(b'"operation":"MERGE"' in e.read_bytes() and b"sluice-" in e.read_bytes() for e in entries)


@pytest.mark.parametrize("seed", [4, 5])
def test_pending_rows_flushed_in_passes(tmp_path: Path, seed: int) -> None:
    whole = DeltaLake(tmp_path / "whole", "p", cadence=MirrorCadence(max_lag=0))
    later = DeltaLake(tmp_path / "later", "p", cadence=LATER_IN_PASSES)
    for b, changes in enumerate(random_batches(seed, 10)):
        whole.write_batch(b, [items(changes)])
        later.write_batch(b, [items(changes)])
        assert state(later) == read(whole.table_path("shop", "items"))
    assert later.flush_all() > 0
    assert read(later.table_path("shop", "items")) == read(whole.table_path("shop", "items"))


def test_a_replayed_batch_is_skipped(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path / "lake", "p", cadence=IN_PASSES)
    batches = random_batches(6, 3)
    for b, changes in enumerate(batches):
        lake.write_batch(b, [items(changes)])
    before = read(lake.table_path("shop", "items"))
    again = DeltaLake(tmp_path / "lake", "p", cadence=IN_PASSES).write_batch(2, [items(batches[2])])
    assert again.tables[0].status == "skipped"
    assert read(lake.table_path("shop", "items")) == before


def source(keys: list[int], qty: int, deleted: frozenset[int] = frozenset()) -> pa.Table:
    return pa.table({"id": pa.array(keys, pa.int64()), "name": [f"n{k}" for k in keys],
                     "qty": pa.array([qty] * len(keys), pa.int64()),
                     DELETE_FLAG: [k in deleted for k in keys]})


def test_the_last_piece_of_a_key_wins(tmp_path: Path) -> None:
    pieces = [TablePiece(source([1, 2, 3], 1), AFTER_PENDING), TablePiece(source([2, 4], 2, frozenset({4})),
                                                                          AFTER_PENDING + 1),
              TablePiece(source([4, 3], 3, frozenset({3})), AFTER_PENDING + 2)]
    index = KeyIndex(pieces, "id")
    assert index.keys.tolist() == [1, 2, 3, 4]
    assert index.repeated.tolist() == [2, 3, 4]
    assert index.deleted.tolist() == [False, False, True, False]
    wins = [index.wins(p, p.read()).tolist() for p in pieces]
    assert wins == [[True, False, False], [True, False], [True, True]]


def test_a_version_taken_meanwhile_fails_the_commit(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path / "lake", "p", cadence=IN_PASSES)
    lake.write_batch(0, [items(random_batches(7, 1)[0])])
    path = lake.table_path("shop", "items")
    dt = DeltaTable(path)
    assert unwritable(dt) is None
    before = read(path)
    write_deltalake(path, DeltaTable(path).to_pyarrow_table().slice(0, 0), mode="append")  # another commit
    with pytest.raises(LakeBusyError, match="another writer"):
        merge_in_passes(dt, path, open_lake(str(tmp_path / "lake")), [TablePiece(source([1, 2], 9), AFTER_PENDING)],
                        "id", app_id="p", batch_id=1, file_rows=10, change_feed=True)
    assert read(path) == before
    assert DeltaTable(path).transaction_version("p") == 0
    with pytest.raises(LakeBusyError):
        commit_rewrite(open_lake(str(tmp_path / "lake")), path, DeltaTable(path).version(), removed=[], added=[],
                       changes=[], app_id="p", batch_id=1, metrics={})
    assert np.all(np.diff([r["id"] for r in read(path)]) > 0)


def test_a_file_whose_rows_are_all_touched_is_replaced_whole(tmp_path: Path) -> None:
    """With no change data feed, a row group whose keys are all touched is dropped unread; the
    upserts are written in two shares of the pieces, each its own files."""
    path = str(tmp_path / "lake" / "mirror")
    first = source(list(range(1, 101)), 0).drop_columns([DELETE_FLAG])
    write_deltalake(path, first)
    write_deltalake(path, source(list(range(101, 201)), 0).drop_columns([DELETE_FLAG]), mode="append")
    pieces = [TablePiece(source(list(range(1, 51)), 1), AFTER_PENDING),
              TablePiece(source(list(range(51, 101)), 2, frozenset({60, 70})), AFTER_PENDING + 1),
              TablePiece(source([150, 250], 3), AFTER_PENDING + 2),
              TablePiece(source([7, 199], 4, frozenset({199})), AFTER_PENDING + 3)]
    metrics = merge_in_passes(DeltaTable(path), path, open_lake(str(tmp_path / "lake")), pieces, "id", app_id="p",
                              batch_id=0, file_rows=1000, change_feed=False)
    expected = {k: 1 if k <= 50 else 2 if k <= 100 else 0 for k in range(1, 201)}
    expected.update({7: 4, 150: 3, 250: 3})
    for gone in (60, 70, 199):
        del expected[gone]
    assert {r["id"]: r["qty"] for r in read(path)} == expected
    assert metrics == {"num_target_rows_inserted": 1, "num_target_rows_updated": 99, "num_target_rows_deleted": 3,
                       "num_target_files_removed": 2, "num_target_files_added": 3}
    assert DeltaTable(path).transaction_version("p") == 0


@pytest.mark.parametrize("spread", [1, 1000])
def test_a_key_index_finds_keys_as_a_binary_search_does(spread: int) -> None:
    """Keys close together are looked up by their offset (``_Dense``), others by a binary search:
    both give every key looked up its place among the keys touched and whether it is one."""
    rng = np.random.default_rng(spread)
    touched = np.unique(rng.integers(-500, 500, size=400) * spread)
    index = KeyIndex([TablePiece(source(touched.tolist(), 1), AFTER_PENDING)], "id")
    assert (index._dense is not None) == (spread == 1)
    asked = np.concatenate([touched, rng.integers(-700 * spread, 700 * spread, size=2000), [2**62, -(2**62)]])
    place, found = index.touched(asked)
    assert found.tolist() == np.isin(asked, touched).tolist()
    assert (index.keys[place[found]] == asked[found]).all()
    assert ((place >= 0) & (place < len(index.keys))).all()


def test_keys_at_the_ends_of_the_64_bit_range_are_found_or_not_as_they_are() -> None:
    top = 2**63 - 1
    for touched in ([top - 2, top - 1, top], [-(2**63), -(2**63) + 1]):
        index = KeyIndex([TablePiece(source(touched, 1), AFTER_PENDING)], "id")
        assert index._dense is not None
        asked = np.array([top, -(2**63), 0, top - 3, -(2**63) + 2, *touched], dtype=np.int64)
        place, found = index.touched(asked)
        assert found.tolist() == [int(k) in touched for k in asked]
        assert (index.keys[place[found]] == asked[found]).all()
