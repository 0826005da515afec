"""The change log's ``seq``: how a batch's ranges are numbered, what a commit records and how the
next writer (a restart, a new checkpoint, the snapshot's writer) reads it back, on real Delta tables
in a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, write_deltalake

from sluice.binlog.position import Checkpoint
from sluice.cdc.records import RowChange
from sluice.cdc.table_read.consistent import ConsistentRead
from sluice.errors import UnsupportedError
from sluice.lake.changelog.rows import changelog_from_rows, changelog_table
from sluice.lake.changelog.schema import CHANGELOG_SCHEMA
from sluice.lake.changelog.sequence import (
    RANGE_STRIDE,
    SEQ_KEY,
    ChangeSequence,
    committed_seq,
    files_high,
    numbered,
    range_first,
)
from sluice.lake.data_files import add_action, write_data_file
from sluice.lake.sink import DeltaLake
from sluice.spark.snapshot.keyless import read_records

pytestmark = pytest.mark.unit


def _changes(first_pos: int, n: int, file: str = "binlog.000001") -> list[RowChange]:
    return [RowChange("insert", "shop", "t", None, {"id": first_pos + i}, ("id",), file, first_pos + i, 0, None,
                      1_700_000_000) for i in range(n)]


def _in_commit_order(lake: DeltaLake) -> list[int]:
    """The change log's ``seq`` values, checked to grow with its versions: every value a version
    adds is above every value before it, and no row repeats one."""
    log = DeltaTable(lake.changelog_path)
    seen: list[int] = []
    for version in range(log.version() + 1):
        now = DeltaTable(lake.changelog_path, version=version).to_pyarrow_table().column("seq").to_pylist()
        assert len(set(now)) == len(now) and None not in now
        new = sorted(set(now) - set(seen))
        assert not seen or not new or new[0] > max(seen), version
        seen += new
    return seen


def test_a_batchs_ranges_never_overlap_and_a_range_past_the_stride_is_refused() -> None:
    assert range_first(100, 0, 5) == 100
    assert range_first(100, 3, RANGE_STRIDE - 1) == 100 + 3 * RANGE_STRIDE
    # the last number of range i is below the first of range i + 1, whatever their sizes
    assert range_first(0, 0, RANGE_STRIDE - 1) + RANGE_STRIDE - 1 < range_first(0, 1, 1)
    with pytest.raises(UnsupportedError, match="at most 4,294,967,295 changes per range"):
        range_first(0, 0, RANGE_STRIDE)


def test_rows_are_numbered_in_their_order_and_a_missing_column_is_added() -> None:
    log = changelog_table(4, list(reversed(_changes(10, 3))))
    assert log.column("seq").null_count == 3  # built, not numbered: the writer numbers at its commit
    assert numbered(log, 7).column("seq").to_pylist() == [7, 8, 9]
    assert numbered(log, 7).schema == CHANGELOG_SCHEMA
    assert numbered(log.drop_columns(["seq"]), 0).column("seq").to_pylist() == [0, 1, 2]
    staged = changelog_from_rows(log.drop_columns(["seq"]).append_column("commit_ts", log.column("ts")), 4, 2**40)
    assert staged.column("seq").to_pylist() == [2**40, 2**40 + 1, 2**40 + 2]


def test_files_high_reads_the_files_statistics(tmp_path: Path) -> None:
    one = write_data_file(numbered(changelog_table(0, _changes(1, 3)), 5), str(tmp_path))
    two = write_data_file(numbered(changelog_table(0, _changes(9, 2)), RANGE_STRIDE), str(tmp_path))
    assert files_high([one["stats"], two["stats"]]) == RANGE_STRIDE + 1
    assert files_high([json.dumps({"numRecords": 0})]) is None


def test_each_commit_records_the_highest_seq_and_every_later_writer_goes_on_after_it(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path, "pipeline")
    assert lake.next_seq() == 0  # no change log yet
    lake.write_batch(0, [], changelog=changelog_table(0, _changes(1, 3)))
    # the tasks' files of batch 1: two ranges, numbered from the batch's first number
    first = lake.next_seq()
    assert first == 3
    files = [write_data_file(changelog_from_rows(changelog_table(1, _changes(10 * (i + 1), 2)).append_column(
        "commit_ts", pa.nulls(2, pa.timestamp("us", tz="UTC"))), 1, range_first(first, i, 2)), lake.changelog_path)
        for i in range(2)]
    lake.write_batch(1, [], changelog_files=[add_action(f) for f in files],
                     position=Checkpoint("binlog.000001", 900, None))
    high = first + RANGE_STRIDE + 1
    assert committed_seq(DeltaTable(lake.changelog_path)) == high
    assert DeltaTable(lake.changelog_path).history(1)[0][SEQ_KEY] == str(high)
    # a restart, and a new Spark checkpoint (another app id), read it from the lake
    again = DeltaLake(tmp_path, "pipeline-2")
    assert again.next_seq() == high + 1
    again.write_batch(0, [], changelog=changelog_table(0, _changes(50, 2)))
    # a maintenance commit records nothing; the number is still found
    DeltaTable(lake.changelog_path).optimize.compact()
    assert DeltaLake(tmp_path, "pipeline-3").next_seq() == high + 3
    assert _in_commit_order(lake) == [0, 1, 2, 3, 4, first + RANGE_STRIDE, high, high + 1, high + 2]


def test_a_replayed_batch_is_numbered_as_before_and_a_skipped_one_takes_nothing(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path, "pipeline")
    lake.write_batch(0, [], changelog=changelog_table(0, _changes(1, 2)))
    assert lake.next_seq() == 2
    assert lake.next_seq() == 2  # asking is not taking: a batch that failed before its commit starts there again
    lake.write_batch(0, [], changelog=changelog_table(0, _changes(1, 2)))  # replayed: already in the lake
    assert lake.next_seq() == 2


def test_the_number_is_found_past_many_commits_without_it_and_in_statistics_alone(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path, "pipeline")
    lake.write_batch(0, [], changelog=changelog_table(0, _changes(1, 4)))
    for i in range(20):  # commits of others that record no seq (empty appends)
        write_deltalake(lake.changelog_path, CHANGELOG_SCHEMA.empty_table(), mode="append",
                        commit_properties=CommitProperties(custom_metadata={"other": str(i)}))
    assert committed_seq(DeltaTable(lake.changelog_path)) == 3
    assert committed_seq(DeltaTable(lake.changelog_path), look_back=5) == 3  # from the files' statistics
    bare = tmp_path / "bare"
    write_deltalake(str(bare), numbered(changelog_table(0, _changes(1, 3)), 40))  # no commit metadata at all
    assert committed_seq(DeltaTable(str(bare))) == 42


def test_a_change_log_from_before_seq_starts_at_zero(tmp_path: Path) -> None:
    old = changelog_table(0, _changes(1, 2)).drop_columns(["seq"])
    write_deltalake(str(tmp_path / "_sluice" / "changes"), old)
    lake = DeltaLake(tmp_path, "pipeline")
    assert committed_seq(DeltaTable(lake.changelog_path)) is None
    assert lake.next_seq() == 0
    lake.write_batch(0, [], changelog=changelog_table(0, _changes(5, 2)))
    assert sorted(DeltaTable(lake.changelog_path).to_pyarrow_table().column("seq").to_pylist(),
                  key=lambda s: -1 if s is None else s) == [None, None, 0, 1]


def test_claimed_numbers_are_skipped_and_another_writers_commits_are_seen() -> None:
    seq = ChangeSequence()
    assert seq.next(None) == 0
    seq.claim(41)  # a batch's staged rows, not committed yet
    assert seq.next(None) == 42
    seq.claim(7)  # never back
    assert seq.next(None) == 42
    assert seq.metadata(None) == {} and seq.metadata(5) == {SEQ_KEY: "5"}


def test_the_snapshots_read_rows_are_numbered_after_the_change_log(tmp_path: Path) -> None:
    lake = DeltaLake(tmp_path, "pipeline")
    lake.write_batch(0, [], changelog=changelog_table(0, _changes(1, 3)))
    read = ConsistentRead("shop", "log", Checkpoint("binlog.000003", 1234, None), [{"x": 1}, {"x": 2}], "scan")
    rows = read_records(read, 0, lake.next_seq())
    assert rows.column("seq").to_pylist() == [3, 4]
    assert read_records(read, 0).column("seq").to_pylist() == [0, 1]
