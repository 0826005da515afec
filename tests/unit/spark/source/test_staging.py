"""The executors' half of the pipeline (``sluice.spark.source.staging``) and the driver's commit of what
they staged, against the driver-only path, no server and no Spark.

A batch's changes cut into ranges at random points are staged range by range, as tasks do; the
folded MERGE sources and the committed change log must give the same lake as the whole batch
written by the driver alone.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake

from sluice.binlog.position import Checkpoint
from sluice.cdc.records import RowChange
from sluice.cdc.schema import SchemaTracker, apply_ddl
from sluice.lake.changelog.rows import changelog_from_rows, staged_rows, to_row_changes
from sluice.lake.changelog.schema import CHANGELOG_SCHEMA
from sluice.lake.data_files import add_action, delta_stats
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.mirror.merge_source import _fold_grouped, fold_sources, merge_source, without_positions
from sluice.lake.sink import DeltaLake
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.source.staging import DESCRIPTOR_SCHEMA, layout_key, part_writer, stage_range
from tests.unit.lake.test_merge_source import (
    CATALOG,
    COMPOSITE,
    WIDE,
    arrow_rows,
    composite_row,
    mirror,
    random_changes,
    schema_of,
    wide_row,
)

pytestmark = pytest.mark.unit


def by_key(table: pa.Table, pk: tuple[str, ...]) -> list[dict[str, Any]]:
    return table.sort_by([(k, "ascending") for k in pk]).to_pylist()


def cuts(rng: random.Random, n: int) -> list[tuple[int, int]]:
    points = sorted(rng.sample(range(1, n), min(n - 1, rng.randrange(1, 5))))
    bounds = [0, *points, n]
    return list(itertools.pairwise(bounds))


@pytest.mark.parametrize("seed", range(6))
def test_folded_range_sources_equal_the_whole_batch(seed: int) -> None:
    rng = random.Random(seed)
    wide = seed % 2 == 0
    sql, pk = (WIDE, ("id",)) if wide else (COMPOSITE, ("a", "n"))
    schema = schema_of(sql)
    columns = mirror_columns_for_schema(schema, "mysql")
    live: dict[Any, dict[str, Any]] = {}

    def new_key(r: random.Random) -> Any:
        return r.randrange(1, 40) if wide else (r.choice(["a", "é"]), r.randrange(-3, 4))

    changes = random_changes(rng, schema.name, pk, wide_row if wide else composite_row, new_key, live, 200, 50)
    rows = arrow_rows(changes)
    whole = merge_source(columns, pk, rows)
    assert whole is not None
    for _ in range(5):
        parts = [merge_source(columns, pk, rows.slice(a, b - a)) for a, b in cuts(rng, rows.num_rows)]
        assert all(p is not None for p in parts)
        folded = fold_sources([p for p in parts if p is not None], pk)
        assert by_key(folded, pk) == by_key(whole, pk)
        # One integer key folds by a numpy sort: the same rows, in the same order, as the group-by.
        assert folded.equals(_fold_grouped([p for p in parts if p is not None], pk))


def tracker_with(*sql: str) -> SchemaTracker:
    catalog, _ = apply_ddl(CATALOG, "CREATE DATABASE db", None)
    for statement in sql:
        catalog, outcome = apply_ddl(catalog, statement, "db")
        assert outcome.understood
    return SchemaTracker(catalog, None, flavor="mysql")


def stage_all(lake: Path, rows: pa.Table, ranges: list[tuple[int, int]], tracker: SchemaTracker,
              batch_id: int, seq_first: int = 0, part_bytes: int = 8 << 20) -> list[dict[str, Any]]:
    """Each range staged as the pipeline's tasks stage them, in parts of about ``part_bytes``,
    numbered from the batch's ``seq_first``."""
    out: list[dict[str, Any]] = []
    for index, (a, b) in enumerate(ranges):
        writer = part_writer(str(lake), batch_id, Checkpoint("binlog.000001", 4 + a), tracker, seq_first=seq_first,
                             range_index=index)
        for batch in stage_range(rows.slice(a, b - a).to_batches(max_chunksize=7), writer, part_bytes=part_bytes):
            assert batch.schema == DESCRIPTOR_SCHEMA
            out.extend(batch.to_pylist())
    return out


def commit_staged(lake: DeltaLake, batch_id: int, staged: list[dict[str, Any]], columns: Any,
                  pk: tuple[str, ...]) -> Any:
    """What the pipeline's driver does with a table's staged ranges: its sources folded, or its
    change-log rows read back when a part has none (a part of deletes only takes the per-row path)."""
    files = [d for d in staged if d["kind"] == "changes"]
    tables = [d for d in staged if d["kind"] == "table"]
    if all(d["path"] for d in tables):
        assert all(d["layout"] == layout_key(columns, pk) for d in tables)
        sources = [pa.ipc.open_file(pa.memory_map(d["path"])).read_all() for d in tables]
        batch = TableBatch("db", tables[0]["table"], columns, pk, (), without_positions(fold_sources(sources, pk)),
                           sum(d["rows"] for d in tables))
    else:
        rows = staged_rows(lake.changelog_path, [f["path"] for f in files])("db", tables[0]["table"])
        batch = TableBatch("db", tables[0]["table"], columns, pk, to_row_changes(columns, rows))
    actions = [add_action(f) for f in files]
    return lake.write_batch(batch_id, [batch], changelog_files=actions)


@pytest.mark.parametrize(("seed", "part_bytes"), [(11, 8 << 20), (12, 8 << 20), (13, 8 << 20), (14, 1), (15, 3000)])
def test_staged_batches_give_the_driver_only_lake(tmp_path: Path, seed: int, part_bytes: int) -> None:
    """A range staged whole or in parts (a part per Arrow batch, or a few) gives the same lake."""
    rng = random.Random(seed)
    schema = schema_of(COMPOSITE)
    columns = mirror_columns_for_schema(schema, "mysql")
    pk = ("a", "n")
    tracker = tracker_with(COMPOSITE)
    live: dict[Any, dict[str, Any]] = {}

    def new_key(r: random.Random) -> Any:
        return (r.choice(["a", "A", "z z"]), r.randrange(-3, 4))

    staged_lake, plain_lake = DeltaLake(tmp_path / "staged", "app"), DeltaLake(tmp_path / "plain", "app")
    for batch_id in range(3):
        rows = arrow_rows(random_changes(rng, "p", pk, composite_row, new_key, live, 90, 10 + batch_id))
        plain_lake.write_batch(batch_id, [TableBatch("db", "p", columns, pk, to_row_changes(columns, rows))])
        ranges = cuts(rng, rows.num_rows)
        staged = stage_all(tmp_path / "staged", rows, ranges, tracker, batch_id, staged_lake.next_seq(), part_bytes)
        files = [d for d in staged if d["kind"] == "changes"]
        assert sum(d["rows"] for d in files) == rows.num_rows
        if part_bytes < 4096:  # parts: more files than ranges, and the range's end on its last only
            assert len(files) > len(ranges)
        assert sum(d["inserts"] + d["updates"] + d["deletes"] for d in staged if d["kind"] == "table") == rows.num_rows
        result = commit_staged(staged_lake, batch_id, staged, columns, pk)
        assert result.changelog_rows == rows.num_rows and not result.changelog_skipped
        assert mirror(tmp_path / "staged", "db", "p", pk) == mirror(tmp_path / "plain", "db", "p", pk)
        # The rows the per-row path reads back from the staged change log are the batch's own.
        back = staged_rows(staged_lake.changelog_path, [f["path"] for f in files])("db", "p")
        assert back.column("after").to_pylist() == rows.column("after").to_pylist()
    order = [("file", "ascending"), ("pos", "ascending"), ("row", "ascending")]
    staged_log = DeltaTable(staged_lake.changelog_path).to_pyarrow_table().sort_by(order)
    plain_log = DeltaTable(plain_lake.changelog_path).to_pyarrow_table().sort_by(order)
    assert staged_log.drop_columns(["seq"]).to_pylist() == plain_log.drop_columns(["seq"]).to_pylist()
    # Both number the rows in binlog order, one number each: the driver's rows one after the other,
    # the tasks' ranges each from its own stride, every batch after the one before.
    plain_seq, staged_seq = plain_log.column("seq").to_pylist(), staged_log.column("seq").to_pylist()
    assert plain_seq == list(range(plain_log.num_rows))
    assert staged_seq == sorted(staged_seq) and len(set(staged_seq)) == len(staged_seq) and None not in staged_seq
    # A replayed batch is skipped whole: its files are not committed twice.
    again = commit_staged(staged_lake, 2, staged, columns, pk)
    assert again.changelog_skipped and again.skipped == ("db.p",)
    assert DeltaTable(staged_lake.changelog_path).to_pyarrow_table().num_rows == staged_log.num_rows


def test_ddl_rows_and_tables_without_a_typed_source(tmp_path: Path) -> None:
    tracker = tracker_with("CREATE TABLE k (a INT)", "CREATE TABLE s (a INT PRIMARY KEY, f JSON)")
    changes = [
        RowChange("insert", "db", "k", None, {"a": 1}, (), "binlog.000001", 4, 0, None, 0),
        RowChange("insert", "db", "s", None, {"a": 1, "f": {"x": [1]}}, ("a",), "binlog.000001", 9, 0, None, 0),
    ]
    rows = arrow_rows(changes)
    ddl = rows.slice(0, 1).to_pylist()[0] | {"op": "ddl", "before": None, "after": None, "pos": 2,
                                                "ddl": json.dumps({"sql": "CREATE TABLE k (a INT)"})}
    rows = pa.concat_tables([pa.Table.from_pylist([ddl], schema=rows.schema), rows])
    staged = stage_all(tmp_path, rows, [(0, rows.num_rows)], tracker, 0)
    kinds = {(d["kind"], d["table"]): d for d in staged}
    assert kinds[("ddl", "k")]["first_pos"] == 2 and "CREATE TABLE" in kinds[("ddl", "k")]["ddl"]
    assert kinds[("table", "k")]["path"] is None  # no primary key: change log only
    assert kinds[("table", "s")]["path"] is None  # a JSON document without typed images: per-row only
    assert kinds[("changes", None)]["rows"] == 3


def test_change_log_stats_and_an_older_change_log(tmp_path: Path) -> None:
    rows = arrow_rows([
        RowChange("insert", "db", "t" * 40, None, {"a": 1}, ("a",), "binlog.000001", 4, 0, None, 0),
        RowChange("insert", "db", "t" * 40, None, {"a": 2}, ("a",), "binlog.000003", 77, 1, None, 0),
    ])
    log = changelog_from_rows(rows, 5)
    stats = json.loads(delta_stats(log, log.column_names))
    assert stats["numRecords"] == 2
    assert stats["minValues"]["file"] == "binlog.000001" and stats["maxValues"]["pos"] == 77
    assert stats["minValues"]["batch_id"] == stats["maxValues"]["batch_id"] == 5
    assert "table" not in stats["minValues"]  # longer than a bound may be: left out, not truncated
    assert "ts" not in stats["minValues"]  # a timestamp's bound is not written
    assert "before" not in stats["minValues"] and stats["nullCount"]["before"] == 2
    # A change log written before its ``ddl`` column existed gains it before staged files land.
    lake = DeltaLake(tmp_path, "app")
    old = changelog_from_rows(rows, 0).drop_columns(["ddl"])
    write_deltalake(lake.changelog_path, old)
    staged = stage_all(tmp_path, rows, [(0, 2)], tracker_with("CREATE TABLE " + "t" * 40 + " (a INT PRIMARY KEY)"), 1)
    files = [d for d in staged if d["kind"] == "changes"]
    lake.write_batch(1, [], changelog_files=[add_action(f) for f in files])
    log = DeltaTable(lake.changelog_path).to_pyarrow_table()
    assert set(CHANGELOG_SCHEMA.names) <= set(log.column_names)
    assert pc.sum(pc.equal(log.column("batch_id"), 1)).as_py() == 2


def test_the_change_log_descriptor_carries_the_tasks_retries(tmp_path: Path) -> None:
    from prometheus_client import generate_latest

    from sluice.spark.pipeline.metrics import PipelineMetrics
    from sluice.spark.pipeline.staged_batch import StagedBatch

    tracker = tracker_with("CREATE TABLE s (a INT PRIMARY KEY)")
    rows = arrow_rows([RowChange("insert", "db", "s", None, {"a": i}, ("a",), "binlog.000001", 4 + i, 0, None, 0)
                       for i in range(3)])
    staged: list[dict[str, Any]] = []
    for a, b, reconnects in ((0, 2, 2), (2, 3, 0)):
        writer = part_writer(str(tmp_path), 0, Checkpoint("binlog.000001", 4 + a), tracker)
        for batch in stage_range(rows.slice(a, b - a).to_batches(), writer, reconnects=lambda n=reconnects: n):
            staged.extend(batch.to_pylist())
    files = [d for d in staged if d["kind"] == "changes"]
    assert [(d["reconnects"], d["attempt"]) for d in files] == [(2, 0), (0, 0)]  # attempt 0 outside a Spark task
    batch = StagedBatch(pa.Table.from_pylist([*staged, {**files[1], "attempt": 3}], schema=DESCRIPTOR_SCHEMA))
    assert batch.retries() == (2, 3)
    metrics = PipelineMetrics("p")
    metrics.retried(*batch.retries())
    metrics.retried(1, 0)
    text = generate_latest(metrics.registry).decode()
    assert 'sluice_retries_total{kind="reconnect",pipeline="p"} 3.0' in text
    assert 'sluice_retries_total{kind="task",pipeline="p"} 3.0' in text


@pytest.mark.parametrize("seed", [21, 22])
def test_a_batch_appended_to_an_empty_mirror_gives_what_its_merge_gives(tmp_path: Path, seed: int) -> None:
    """Into a mirror without rows the driver appends the batch's upserts instead of a MERGE; into
    one holding a row the batch does not touch, the MERGE runs. Past that row, the two agree."""
    rng = random.Random(seed)
    schema = schema_of(WIDE)
    columns = mirror_columns_for_schema(schema, "mysql")
    pk = ("id",)
    live: dict[Any, dict[str, Any]] = {}
    rows = arrow_rows(random_changes(rng, schema.name, pk, wide_row, lambda r: r.randrange(1, 60), live, 300, 5))
    source = merge_source(columns, pk, rows)
    assert source is not None and pc.any(source.column("_sluice_delete")).as_py()
    empty, seeded = DeltaLake(tmp_path / "empty", "app"), DeltaLake(tmp_path / "seeded", "app")
    other = merge_source(columns, pk, arrow_rows(random_changes(
        random.Random(0), schema.name, pk, wide_row, lambda r: 1000, {}, 1, 1)))
    assert other is not None
    seeded.write_batch(0, [TableBatch("db", schema.name, columns, pk, (), other, 1)], changelog_files=[])
    for lake, batch_id in ((empty, 0), (seeded, 1)):
        result = lake.write_batch(batch_id, [TableBatch("db", schema.name, columns, pk, (), source, rows.num_rows)],
                                  changelog_files=[])
        assert result.inserted == len(live)
    appended = mirror(tmp_path / "empty", "db", schema.name, pk)
    merged = [r for r in mirror(tmp_path / "seeded", "db", schema.name, pk) if r["id"] != 1000]
    assert appended == merged and len(appended) == len(live)
    appended_table, merged_table = (DeltaTable(str(tmp_path / lake_name / "db" / schema.name))
                                    for lake_name in ("empty", "seeded"))
    assert appended_table.schema() == merged_table.schema()
    assert [appended_table.history(1)[0]["operation"], merged_table.history(1)[0]["operation"]] == ["WRITE", "MERGE"]
