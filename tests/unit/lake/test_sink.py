"""The Delta writer against real Delta tables in a temporary folder (no server, no Spark).

Batches of row changes are merged into mirrors and appended to the change log, then read back with
``deltalake``: inserts / updates / deletes, key changes, minimal images, a replayed batch, a crash
between two tables' commits, mirrors committed side by side, schema evolution, tables without a
primary key, every mapped type, and a hypothesis model that replays random histories in random
batch splits against a plain dict.
"""

from __future__ import annotations

import json
import tempfile
import threading
from datetime import UTC, date, datetime
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest
from deltalake import DeltaTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sluice
from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.events import TableMapEvent
from sluice.binlog.values.json_binary import JsonDecimal, JsonDiff, JsonDiffs
from sluice.cdc.records import RowChange
from sluice.errors import ConfigError, DataLossError, SchemaError
from sluice.lake.changelog.schema import CHANGELOG_SCHEMA
from sluice.lake.mirror import merge as mirror_merge
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.mirror.pending import MirrorCadence
from sluice.lake.sink import DeltaLake
from sluice.lake.types.mirror_columns import MirrorColumn, mirror_columns
from tests.conftest import examples

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"


class Map:
    def __init__(self, types: tuple[int, ...], metas: tuple[int, ...], table: str = "t") -> None:
        self.column_types, self.column_meta, self.schema, self.table = types, metas, "shop", table


def layout(spec: list[tuple[str, int, int]], **infos: dict[str, Any]) -> tuple[MirrorColumn, ...]:
    """Mirror columns from (name, type code, metadata) triples."""
    return mirror_columns(
        Map(tuple(t for _, t, _ in spec), tuple(m for _, _, m in spec)),
        tuple(ColumnInfo(name=n, **infos.get(n, {})) for n, _, _ in spec),
    )


ITEMS = layout([("id", T.LONG, 0), ("name", T.VARCHAR, 200), ("qty", T.LONG, 0)], name={"collation": 255})


class Log:
    """Row changes of one table with increasing binlog positions."""

    def __init__(self, table: str = "items", pk: tuple[str, ...] = ("id",)) -> None:
        self.table, self.pk, self.pos = table, pk, 4

    def _change(self, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None,
                **extra: Any) -> RowChange:
        self.pos += 100
        return RowChange(op, "shop", self.table, before, after, self.pk, "binlog.000001", self.pos, 0,
                         "3d687a2c-b38e-11ed-91ef-3f952e283fc3:1", 1711727631, **extra)

    def insert(self, **after: Any) -> RowChange:
        return self._change("insert", None, after)

    def update(self, before: dict[str, Any], after: dict[str, Any], **extra: Any) -> RowChange:
        return self._change("update", before, after, **extra)

    def delete(self, **before: Any) -> RowChange:
        return self._change("delete", before, None)


def read(path: str | Path, key: str = "id") -> list[dict[str, Any]]:
    # A local pyarrow filesystem: reading through delta-rs' own object store from pyarrow's threads
    # makes the interpreter abort at exit now and then (terminate called without an active exception).
    fs = pafs.SubTreeFileSystem(str(path), pafs.LocalFileSystem())
    rows = DeltaTable(str(path)).to_pyarrow_table(filesystem=fs).to_pylist()
    return sorted(rows, key=lambda r: r[key])


def changelog(lake: DeltaLake) -> list[dict[str, Any]]:
    rows = read(lake.changelog_path, key="pos")
    return sorted(rows, key=lambda r: (r["batch_id"], r["file"], r["pos"], r["row"], r["table"]))


@pytest.fixture
def lake(tmp_path: Path) -> DeltaLake:
    return DeltaLake(tmp_path / "lake", "test-pipeline")


def items(changes: list[RowChange], cols: tuple[MirrorColumn, ...] = ITEMS) -> TableBatch:
    return TableBatch("shop", "items", cols, ("id",), changes)


# -- basic MERGE -------------------------------------------------------------------------------

def test_insert_update_delete_batches(lake: DeltaLake) -> None:
    log = Log()
    assert lake.committed_batch() is None
    r0 = lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1), log.insert(id=2, name="b", qty=2),
                                     log.insert(id=3, name="c", qty=3)])])
    assert (r0.inserted, r0.updated, r0.deleted, r0.changelog_rows) == (3, 0, 0, 3)
    path = lake.table_path("shop", "items")
    assert path == f"{lake.root}/shop/items"
    r1 = lake.write_batch(1, [items([
        log.update({"id": 1, "name": "a", "qty": 1}, {"id": 1, "name": "a", "qty": 10}),
        log.delete(id=2, name="b", qty=2),
        log.insert(id=4, name="d", qty=4),
        log.update({"id": 4, "name": "d", "qty": 4}, {"id": 4, "name": "d2", "qty": 5}),
        log.delete(id=99, name="never there", qty=0),  # a delete of a key the mirror lacks: no-op
    ])])
    assert (r1.inserted, r1.updated, r1.deleted) == (1, 1, 1)
    assert read(path) == [{"id": 1, "name": "a", "qty": 10}, {"id": 3, "name": "c", "qty": 3},
                          {"id": 4, "name": "d2", "qty": 5}]
    assert lake.committed_batch() == 1
    log_rows = changelog(lake)
    assert len(log_rows) == 8
    assert [r["batch_id"] for r in log_rows] == [0, 0, 0, 1, 1, 1, 1, 1]


def test_insert_update_delete_of_one_key_in_one_batch_deletes_it(lake: DeltaLake) -> None:
    log = Log()
    lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1)])])
    result = lake.write_batch(1, [items([
        log.delete(id=1, name="a", qty=1),
        log.insert(id=1, name="again", qty=2),
        log.update({"id": 1, "name": "again", "qty": 2}, {"id": 1, "name": "again", "qty": 3}),
        log.delete(id=1, name="again", qty=3),
        log.insert(id=2, name="tmp", qty=0),
        log.delete(id=2, name="tmp", qty=0),
    ])])
    assert read(lake.table_path("shop", "items")) == []
    assert (result.inserted, result.updated, result.deleted) == (0, 0, 1)
    assert result.changelog_rows == 6


def test_update_that_changes_the_key_moves_the_row(lake: DeltaLake) -> None:
    log = Log()
    lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1), log.insert(id=2, name="b", qty=2)])])
    lake.write_batch(1, [items([
        log.update({"id": 1, "name": "a", "qty": 1}, {"id": 10, "name": "a", "qty": 1}),  # full images
        log.update({"id": 2}, {"id": 20}),  # minimal images: the other columns come from the mirror
        log.update({"id": 20}, {"qty": 7}),
    ])])
    assert read(lake.table_path("shop", "items")) == [{"id": 10, "name": "a", "qty": 1},
                                                      {"id": 20, "name": "b", "qty": 7}]


def test_minimal_images_patch_only_the_columns_they_carry(lake: DeltaLake) -> None:
    log = Log()
    lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1), log.insert(id=2, name="b", qty=2)])])
    lake.write_batch(1, [items([
        log.update({"id": 1}, {"qty": 11}),
        log.update({"id": 2}, {"name": "B"}),
        log.update({"id": 3}, {"name": "not in the mirror"}),  # upserted with what the image holds
        log.insert(id=4, name="d"),  # a minimal insert: columns left out are NULL
    ])])
    assert read(lake.table_path("shop", "items")) == [
        {"id": 1, "name": "a", "qty": 11}, {"id": 2, "name": "B", "qty": 2},
        {"id": 3, "name": "not in the mirror", "qty": None}, {"id": 4, "name": "d", "qty": None}]


@pytest.mark.parametrize(
    ("key_type", "meta", "info", "k1", "k2", "k3", "expect_k1", "expect_k2"),
    [
        (T.LONGLONG, 0, {"unsigned": True}, 2**64 - 1, 5, 2**63, Decimal(2**64 - 1), Decimal(5)),
        (T.VARCHAR, 40, {}, "it's", "b", "c\\d", "it's", "b"),
        (T.VARCHAR, 40, {"collation": 63}, b"\x00'", b"b", b"", b"\x00'", b"b"),
        (T.DATETIME2, 6, {}, "2024-01-01 00:00:00.000001", "2024-01-02 00:00:00.000000", "1999-01-01 00:00:00.5",
         datetime(2024, 1, 1, 0, 0, 0, 1), datetime(2024, 1, 2)),
        (T.TIMESTAMP2, 3, {}, "2024-01-01T00:00:00.001Z", "2024-01-02T00:00:00.000Z", "1999-01-01T00:00:00.500Z",
         datetime(2024, 1, 1, 0, 0, 0, 1000, tzinfo=UTC), datetime(2024, 1, 2, tzinfo=UTC)),
        (T.DATE, 0, {}, "2024-01-01", "2024-01-02", "1999-12-31", date(2024, 1, 1), date(2024, 1, 2)),
        (T.NEWDECIMAL, 10 << 8 | 2, {}, Decimal("1.50"), Decimal("-2.00"), Decimal("3.25"), Decimal("1.50"),
         Decimal("-2.00")),
    ],
    ids=["bigint-unsigned", "varchar", "varbinary", "datetime", "timestamp", "date", "decimal"],
)
def test_key_moves_with_minimal_images_for_every_key_type(lake: DeltaLake, key_type: int, meta: int,
                                                           info: dict[str, Any], k1: Any, k2: Any, k3: Any,
                                                           expect_k1: Any, expect_k2: Any) -> None:
    cols = mirror_columns(Map((key_type, T.LONG, T.LONGLONG), (meta, 0, 0)),
                          (ColumnInfo("k", **info), ColumnInfo("v"), ColumnInfo("big", unsigned=True)))
    log = Log("keys", ("k",))

    def batch(changes: list[RowChange]) -> list[TableBatch]:
        return [TableBatch("shop", "keys", cols, ("k",), changes)]

    lake.write_batch(0, batch([log.insert(k=k1, v=1, big=2**64 - 1), log.insert(k=k3, v=3, big=2**63)]))
    # k1 -> k2, then k3 -> k1: both rows move, their other columns come from the mirror
    lake.write_batch(1, batch([log.update({"k": k1}, {"k": k2}), log.update({"k": k3}, {"k": k1})]))
    rows = {r["k"]: (r["v"], r["big"]) for r in read(lake.table_path("shop", "keys"), key="v")}
    assert rows == {expect_k2: (1, Decimal(2**64 - 1)), expect_k1: (3, Decimal(2**63))}


def test_composite_primary_key(lake: DeltaLake) -> None:
    cols = layout([("a", T.LONG, 0), ("b", T.VARCHAR, 40), ("v", T.LONG, 0)])
    log = Log("pairs", ("a", "b"))

    def batch(changes: list[RowChange]) -> list[TableBatch]:
        return [TableBatch("shop", "pairs", cols, ("a", "b"), changes)]

    lake.write_batch(0, batch([log.insert(a=1, b="x", v=1), log.insert(a=1, b="y", v=2), log.insert(a=2, b="x", v=3)]))
    lake.write_batch(1, batch([log.update({"a": 1, "b": "y"}, {"b": "z"}), log.delete(a=2, b="x", v=3),
                               log.update({"a": 1, "b": "x", "v": 1}, {"a": 1, "b": "x", "v": 9})]))
    rows = sorted(read(lake.table_path("shop", "pairs"), key="a"), key=lambda r: (r["a"], r["b"]))
    assert rows == [{"a": 1, "b": "x", "v": 9}, {"a": 1, "b": "z", "v": 2}]


# -- exactly once ------------------------------------------------------------------------------

def test_replayed_batch_is_skipped(lake: DeltaLake) -> None:
    log = Log()
    b0 = [items([log.insert(id=1, name="a", qty=1)])]
    b1 = [items([log.update({"id": 1, "name": "a", "qty": 1}, {"id": 1, "name": "a", "qty": 2}),
                 log.insert(id=2, name="b", qty=1)])]
    lake.write_batch(0, b0)
    lake.write_batch(1, b1)
    path = lake.table_path("shop", "items")
    version = DeltaTable(path).version()
    again = lake.write_batch(1, b1)
    assert again.skipped == ("shop.items",) and again.changelog_skipped and again.changelog_rows == 0
    older = lake.write_batch(0, b0)  # an older batch is skipped as well
    assert older.skipped == ("shop.items",) and older.changelog_skipped
    assert DeltaTable(path).version() == version
    assert read(path) == [{"id": 1, "name": "a", "qty": 2}, {"id": 2, "name": "b", "qty": 1}]
    assert len(changelog(lake)) == 3
    assert lake.committed_batch() == 1
    # another pipeline (another app id) has its own record
    assert DeltaLake(lake.root, "other").committed_batch() is None


def test_the_kept_change_log_sees_what_others_commit(lake: DeltaLake) -> None:
    """The change log is read once and then kept up to date: a batch another writer of the same
    pipeline committed, and a compaction between batches, are seen as a fresh read would see them."""
    log = Log()
    batches = [[items([log.insert(id=i, name="a", qty=i)])] for i in range(4)]
    lake.write_batch(0, batches[0])
    assert lake.committed_batch() == 0
    DeltaLake(lake.root, "test-pipeline").write_batch(1, batches[1])
    assert lake.committed_batch() == 1
    assert lake.write_batch(1, batches[1]).changelog_skipped
    DeltaTable(lake.changelog_path).optimize.compact()
    lake.write_batch(2, batches[2])
    lake.write_batch(3, batches[3])
    assert lake.committed_batch() == 3
    assert [r["batch_id"] for r in changelog(lake)] == [0, 1, 2, 3]


def test_crash_between_two_tables_then_replay(lake: DeltaLake, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = Log("a"), Log("b")

    def batch() -> list[TableBatch]:
        return [TableBatch("shop", "a", ITEMS, ("id",), [a.insert(id=1, name="x", qty=1)]),
                TableBatch("shop", "b", ITEMS, ("id",), [b.insert(id=7, name="y", qty=2)])]

    lake.write_batch(0, [TableBatch("shop", "b", ITEMS, ("id",), [b.insert(id=6, name="old", qty=0)])])
    the_batch = batch()
    real_execute = mirror_merge.TablePlan.execute

    def crash_on_b(self: Any, batch_id: int, txn: Any) -> Any:
        if self.tb.table == "b":
            raise RuntimeError("process killed")
        return real_execute(self, batch_id, txn)

    monkeypatch.setattr(mirror_merge.TablePlan, "execute", crash_on_b)
    with pytest.raises(RuntimeError, match="process killed"):
        lake.write_batch(1, the_batch)
    monkeypatch.undo()
    assert read(lake.table_path("shop", "a")) == [{"id": 1, "name": "x", "qty": 1}]
    assert read(lake.table_path("shop", "b")) == [{"id": 6, "name": "old", "qty": 0}]
    assert lake.committed_batch() == 0

    replay = lake.write_batch(1, the_batch)
    assert replay.skipped == ("shop.a",)
    assert [(t.table, t.status, t.inserted) for t in replay.tables] == [("a", "skipped", 0), ("b", "written", 1)]
    assert read(lake.table_path("shop", "a")) == [{"id": 1, "name": "x", "qty": 1}]
    assert read(lake.table_path("shop", "b")) == [{"id": 6, "name": "old", "qty": 0}, {"id": 7, "name": "y", "qty": 2}]
    assert [(r["table"], r["batch_id"]) for r in changelog(lake)] == [("b", 0), ("a", 1), ("b", 1)]
    assert lake.committed_batch() == 1


def test_the_mirrors_of_a_batch_are_committed_side_by_side(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Each table's commit waits at a barrier for the other two: committed one by one, none would pass it.
    logs = [Log(name) for name in "abc"]
    real_execute = mirror_merge.TablePlan.execute
    barrier = threading.Barrier(3, timeout=10)

    def meet(self: Any, batch_id: int, txn: Any) -> Any:
        barrier.wait()
        return real_execute(self, batch_id, txn)

    monkeypatch.setattr(mirror_merge.TablePlan, "execute", meet)
    lake = DeltaLake(tmp_path / "lake", "p")
    lake.write_batch(0, [TableBatch("shop", log.table, ITEMS, ("id",), [log.insert(id=1, name=log.table, qty=1)])
                         for log in logs])
    assert [read(lake.table_path("shop", log.table)) for log in logs] == [
        [{"id": 1, "name": name, "qty": 1}] for name in "abc"]
    assert lake.committed_batch() == 0

    barrier = threading.Barrier(3, timeout=0.5)
    one_by_one = DeltaLake(tmp_path / "one", "p", cadence=MirrorCadence(commits_at_once=1))
    with pytest.raises(threading.BrokenBarrierError):
        one_by_one.write_batch(0, [TableBatch("shop", log.table, ITEMS, ("id",), [log.insert(id=2, name="x", qty=1)])
                                   for log in logs])


def test_a_failed_commit_beside_others_then_replay(lake: DeltaLake, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first table fails while the second commits beside it: the first failure is raised, the change
    # log does not record the batch, and the replay writes only the table that failed.
    a, b = Log("a"), Log("b")
    the_batch = [TableBatch("shop", "a", ITEMS, ("id",), [a.insert(id=1, name="x", qty=1)]),
                 TableBatch("shop", "b", ITEMS, ("id",), [b.insert(id=7, name="y", qty=2)])]
    real_execute = mirror_merge.TablePlan.execute
    b_done = threading.Event()

    def fail_a(self: Any, batch_id: int, txn: Any) -> Any:
        if self.tb.table == "a":
            assert b_done.wait(10)
            raise RuntimeError("process killed")
        result = real_execute(self, batch_id, txn)
        b_done.set()
        return result

    monkeypatch.setattr(mirror_merge.TablePlan, "execute", fail_a)
    with pytest.raises(RuntimeError, match="process killed"):
        lake.write_batch(0, the_batch)
    monkeypatch.undo()
    assert lake.committed_batch() is None
    assert read(lake.table_path("shop", "b")) == [{"id": 7, "name": "y", "qty": 2}]

    replay = lake.write_batch(0, the_batch)
    assert [(t.table, t.status) for t in replay.tables] == [("a", "written"), ("b", "skipped")]
    assert read(lake.table_path("shop", "a")) == [{"id": 1, "name": "x", "qty": 1}]
    assert [(r["table"], r["batch_id"]) for r in changelog(lake)] == [("a", 0), ("b", 0)]
    assert lake.committed_batch() == 0


def test_empty_batch_is_recorded(lake: DeltaLake) -> None:
    result = lake.write_batch(0, [])
    assert result.changelog_rows == 0 and not result.changelog_skipped
    assert lake.committed_batch() == 0
    assert lake.write_batch(0, []).changelog_skipped


# -- schema ------------------------------------------------------------------------------------

def test_schema_evolution_add_and_drop_column(lake: DeltaLake) -> None:
    log = Log()
    lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1)])])
    wider = layout([("id", T.LONG, 0), ("name", T.VARCHAR, 200), ("qty", T.LONG, 0), ("note", T.VARCHAR, 40)])
    lake.write_batch(1, [items([log.insert(id=2, name="b", qty=2, note="new column")], wider)])
    path = lake.table_path("shop", "items")
    assert read(path) == [{"id": 1, "name": "a", "qty": 1, "note": None},
                          {"id": 2, "name": "b", "qty": 2, "note": "new column"}]
    # qty dropped: it stays in the table, is no longer written; new rows have NULL there
    narrower = layout([("id", T.LONG, 0), ("name", T.VARCHAR, 200), ("note", T.VARCHAR, 40)])
    lake.write_batch(2, [items([
        log.insert(id=3, name="c", note="after drop"),
        log.update({"id": 1, "name": "a", "qty": 1, "note": None}, {"id": 1, "name": "A", "note": "x"}),
    ], narrower)])
    assert [f.name for f in DeltaTable(path).schema().fields] == ["id", "name", "qty", "note"]
    assert read(path) == [{"id": 1, "name": "A", "qty": 1, "note": "x"},
                          {"id": 2, "name": "b", "qty": 2, "note": "new column"},
                          {"id": 3, "name": "c", "qty": None, "note": "after drop"}]


def test_type_change_delta_cannot_take_is_a_schema_error(lake: DeltaLake) -> None:
    log = Log()
    lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1)])])
    path = lake.table_path("shop", "items")
    version = DeltaTable(path).version()
    bigger = layout([("id", T.LONG, 0), ("name", T.VARCHAR, 200), ("qty", T.LONGLONG, 0)])
    other = TableBatch("shop", "other", ITEMS, ("id",), [Log("other").insert(id=1, name="z", qty=0)])
    with pytest.raises(SchemaError) as err:
        lake.write_batch(1, [other, items([log.insert(id=2, name="b", qty=2**40)], bigger)])
    message = str(err.value)
    assert "'qty' of shop.items" in message and "bigint" in message and "Re-snapshot" in message
    # checked before any commit: nothing of the batch was written
    assert DeltaTable(path).version() == version
    assert not DeltaTable.is_deltatable(lake.table_path("shop", "other"))
    assert lake.committed_batch() == 0


def test_table_without_primary_key_goes_to_the_change_log_only(lake: DeltaLake) -> None:
    log = Log("events", pk=())
    result = lake.write_batch(0, [TableBatch("shop", "events", ITEMS, (), [
        log.insert(id=1, name="a", qty=1), log.insert(id=1, name="a", qty=1), log.delete(id=1, name="a", qty=1)])])
    assert result.unmirrorable == ("shop.events",)
    assert result.changelog_rows == 3
    assert not Path(lake.table_path("shop", "events")).exists()
    assert [r["op"] for r in changelog(lake)] == ["insert", "insert", "delete"]
    assert changelog(lake)[0]["pk"] == []


def test_partial_json_updates_are_replayed_on_the_mirrors_document(lake: DeltaLake) -> None:
    cols = layout([("id", T.LONG, 0), ("doc", T.JSON, 4), ("n", T.LONG, 0)])
    log = Log("docs")
    doc = {"a": 1, "arr": [1, JsonDecimal("2.50")]}
    lake.write_batch(0, [TableBatch("shop", "docs", cols, ("id",), [log.insert(id=1, doc=doc, n=1),
                                                                     log.insert(id=2, doc=doc, n=2)])])
    diffs = JsonDiffs([JsonDiff("replace", "$.a", 2), JsonDiff("insert", "$.b", "x")])
    in_batch = [
        log.update({"id": 1}, {"n": 10}, json_diffs={"doc": diffs}),  # the mirror's document
        log.update({"id": 1}, {}, json_diffs={"doc": JsonDiffs([JsonDiff("remove", "$.arr[0]")])}),  # pending
        log.update({"id": 2}, {"id": 3}),  # the key moves; the document comes from the mirror's row 2
        log.update({"id": 3}, {}, json_diffs={"doc": diffs}),
    ]
    lake.write_batch(1, [TableBatch("shop", "docs", cols, ("id",), in_batch)])
    rows = read(lake.table_path("shop", "docs"))
    assert [(r["id"], r["doc"], r["n"]) for r in rows] == [
        (1, '{"a":2,"b":"x","arr":[2.50]}', 10),
        (3, '{"a":2,"b":"x","arr":[1,2.50]}', 2),
    ]
    misfit = log.update({"id": 1}, {}, json_diffs={"doc": JsonDiffs([JsonDiff("replace", "$.nope", 1)])})
    with pytest.raises(DataLossError, match="does not fit the document"):
        lake.write_batch(2, [TableBatch("shop", "docs", cols, ("id",), [misfit])])
    unknown = log.update({"id": 9}, {}, json_diffs={"doc": diffs})
    with pytest.raises(DataLossError, match="does not hold the row"):
        lake.write_batch(2, [TableBatch("shop", "docs", cols, ("id",), [unknown])])
    assert lake.committed_batch() == 1


def test_bad_calls(lake: DeltaLake, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        DeltaLake(tmp_path, "")
    with pytest.raises(ConfigError, match="batch id"):
        lake.write_batch(-1, [])
    with pytest.raises(ConfigError, match="twice"):
        lake.write_batch(0, [items([]), items([])])
    with pytest.raises(SchemaError):
        lake.table_path("_sluice", "changes")
    with pytest.raises(SchemaError, match="primary key column 'nope'"):
        lake.write_batch(0, [TableBatch("shop", "items", ITEMS, ("nope",), [Log().insert(id=1)])])


# -- types -------------------------------------------------------------------------------------

def test_golden_matrix_round_trips_through_the_mirror(lake: DeltaLake) -> None:
    path = DATA / "mysql-matrix.binlog"
    tmap = next(ev for _f, _p, ev in sluice.read_events(path) if isinstance(ev, TableMapEvent))
    cols = mirror_columns(tmap, tmap.columns)
    changes = list(sluice.read_changes(path))
    result = lake.write_batch(0, [TableBatch("golden", "matrix", cols, ("id",), changes)])
    # three inserts, two updates and a delete, folded: rows 1 and 2 (updated) remain
    assert (result.inserted, result.changelog_rows) == (2, len(changes))
    rows = read(lake.table_path("golden", "matrix"))
    assert [r["id"] for r in rows] == [1, 2]
    one, two = rows
    assert one["ts"] == datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=UTC)
    assert (one["en"], one["b12"]) == ("bb", 5)
    assert two["d65"] == "-99999999999999999999999999999999999.999999999999999999999999999999"
    assert (two["biu"], two["tm"], two["st"], two["vc"]) == (Decimal(0), "-00:00:00.50", ["y"], "ünï")
    # the change log holds the JSON-lines record of every change, verbatim
    expected = [json.loads(line) for line in (DATA / "mysql-matrix.jsonl").read_text(encoding="utf-8").splitlines()]
    logged = changelog(lake)
    assert len(logged) == len(expected)
    for row, record in zip(logged, expected, strict=True):
        assert (row["op"], row["db"], row["table"], row["pos"], row["row"], row["gtid"]) == (
            record["op"], record["db"], record["table"], record["pos"], record["row"], record["gtid"])
        assert row["pk"] == record["pk"] and row["file"] == record["file"]
        assert row["ts"] == datetime.fromtimestamp(record["ts"], UTC)
        assert (json.loads(row["after"]) if row["after"] else None) == record["after"]
        assert (json.loads(row["before"]) if row["before"] else None) == record["before"]


def test_every_mapped_type_round_trips(lake: DeltaLake) -> None:
    cols = layout(
        [("id", T.LONGLONG, 0), ("u64", T.LONGLONG, 0), ("d65", T.NEWDECIMAL, 65 << 8 | 30),
         ("d38", T.NEWDECIMAL, 38 << 8 | 4), ("dt", T.DATE, 0), ("dtm", T.DATETIME2, 6), ("ts", T.TIMESTAMP2, 6),
         ("tm", T.TIME2, 0), ("yr", T.YEAR, 0), ("f", T.FLOAT, 4), ("st", T.STRING, T.SET << 8 | 1),
         ("js", T.JSON, 4), ("vec", T.VECTOR, 4), ("b64", T.BIT, 8), ("bin", T.BLOB, 2),
         ("u8", T.TINY, 0), ("i64", T.LONGLONG, 0)],
        u64={"unsigned": True}, st={"set_values": ("a", "b", "c")}, bin={"collation": 63}, u8={"unsigned": True},
    )
    log = Log("types")
    d65 = Decimal("-12345678901234567890123456789012345.123456789012345678901234567890")
    rows = [
        dict(id=1, u64=2**64 - 1, d65=d65, d38=Decimal("-" + "9" * 34 + ".9999"), dt="0000-00-00",
             dtm="9999-12-31 23:59:59.999999", ts="2038-01-19T03:14:07.999999Z", tm="-838:59:59", yr=2155,
             f=3.25, st=("a", "c"), js={"price": JsonDecimal("10.50"), "n": [1, JsonDecimal("-0.001")]},
             vec=(1.5, -0.25, 3.0), b64=2**64 - 1, bin=b"\x00\xff", u8=255, i64=-(2**63)),
        dict(id=2, u64=0, d65=Decimal("0E-30"), d38=Decimal("0.0000"), dt="2024-02-00",
             dtm="0000-00-00 00:00:00.000000", ts="0000-00-00 00:00:00.000000", tm="00:00:00", yr=0,
             f=-1.5, st=(), js=[], vec=(), b64=0, bin=b"", u8=0, i64=2**63 - 1),
        dict(id=3),
    ]
    lake.write_batch(0, [TableBatch("shop", "types", cols, ("id",), [log.insert(**r) for r in rows])])
    got = read(lake.table_path("shop", "types"))
    assert got[0] == dict(
        id=1, u64=Decimal(2**64 - 1), d65=format(d65, "f"), d38=Decimal("-" + "9" * 34 + ".9999"), dt=None,
        dtm=datetime(9999, 12, 31, 23, 59, 59, 999999), ts=datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=UTC),
        tm="-838:59:59", yr=2155, f=3.25, st=["a", "c"], js='{"price":10.50,"n":[1,-0.001]}',
        vec=[1.5, -0.25, 3.0], b64=Decimal(2**64 - 1), bin=b"\x00\xff", u8=255, i64=-(2**63))
    assert got[1] == dict(
        id=2, u64=Decimal(0), d65="0.000000000000000000000000000000", d38=Decimal("0.0000"), dt=None, dtm=None,
        ts=None, tm="00:00:00", yr=0, f=-1.5, st=[], js="[]", vec=[], b64=Decimal(0), bin=b"", u8=0, i64=2**63 - 1)
    assert got[2] == {k: (3 if k == "id" else None) for k in got[2]}
    # the change log keeps the verbatim values the mirror cannot hold
    after = json.loads(changelog(lake)[1]["after"])
    assert (after["dt"], after["dtm"], after["ts"]) == ("2024-02-00", "0000-00-00 00:00:00.000000",
                                                          "0000-00-00 00:00:00.000000")
    first = changelog(lake)[0]["after"]
    assert '"js":{"price":10.50,"n":[1,-0.001]}' in first and '"u64":18446744073709551615' in first
    assert DeltaTable(lake.changelog_path).schema().to_arrow().names == CHANGELOG_SCHEMA.names
    # a date primary key: zero dates cannot be keys of the mirror
    keyed = layout([("d", T.DATE, 0), ("v", T.LONG, 0)])
    with pytest.raises(SchemaError, match="zero date"):
        lake.write_batch(1, [TableBatch("shop", "days", keyed, ("d",), [Log("days", ("d",)).insert(d="0000-00-00")])])
    lake.write_batch(1, [TableBatch("shop", "days", keyed, ("d",), [Log("days", ("d",)).insert(d="2024-01-31", v=1)])])
    assert read(lake.table_path("shop", "days"), key="d") == [{"d": date(2024, 1, 31), "v": 1}]


def test_special_column_names(lake: DeltaLake) -> None:
    cols = layout([("Order Id", T.LONG, 0), ("a`b", T.VARCHAR, 40), ("Ünï.x", T.LONG, 0)])
    log = Log("odd", ("Order Id",))
    batch = [log.insert(**{"Order Id": 1, "a`b": "x", "Ünï.x": 1}), log.insert(**{"Order Id": 2, "a`b": "y"})]
    lake.write_batch(0, [TableBatch("shop", "odd", cols, ("Order Id",), batch)])
    change = log.update({"Order Id": 2}, {"Order Id": 3, "Ünï.x": 5})
    lake.write_batch(1, [TableBatch("shop", "odd", cols, ("Order Id",), [change])])
    assert read(lake.table_path("shop", "odd"), key="Order Id") == [
        {"Order Id": 1, "a`b": "x", "Ünï.x": 1}, {"Order Id": 3, "a`b": "y", "Ünï.x": 5}]


# -- model -------------------------------------------------------------------------------------

KEYS = range(8)
NAMES = st.sampled_from([None, "", "a", "b", "é", "abc"])
QTYS = st.sampled_from([None, 0, 1, 2, -3, 2**31 - 1])


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_histories_in_random_batches_match_a_dict_model(data: st.DataObject) -> None:
    model: dict[int, dict[str, Any]] = {}
    log = Log()
    changes: list[RowChange] = []
    for _ in range(data.draw(st.integers(1, 40), label="changes")):
        free = [k for k in KEYS if k not in model]
        ops = (["insert"] if free else []) + (["update", "update", "delete"] if model else [])
        op = data.draw(st.sampled_from(ops))
        minimal = data.draw(st.booleans(), label="minimal image")
        if op == "insert":
            row = {"id": data.draw(st.sampled_from(free)), "name": data.draw(NAMES), "qty": data.draw(QTYS)}
            model[row["id"]] = row
            # a minimal insert leaves out the columns that keep their default (NULL)
            after = {k: v for k, v in row.items() if v is not None or k == "id"} if minimal else dict(row)
            changes.append(log.insert(**after))
        elif op == "update":
            old = model.pop(data.draw(st.sampled_from(sorted(model))))
            new = dict(old)
            if data.draw(st.booleans(), label="name"):
                new["name"] = data.draw(NAMES)
            if data.draw(st.booleans(), label="qty"):
                new["qty"] = data.draw(QTYS)
            free = [k for k in KEYS if k not in model]
            if data.draw(st.booleans(), label="move"):
                new["id"] = data.draw(st.sampled_from(free))
            model[new["id"]] = new
            if minimal:
                before = {"id": old["id"]}
                after = {k: v for k, v in new.items() if v != old[k]}
            else:
                before, after = dict(old), dict(new)
            changes.append(log.update(before, after))
        else:
            row = model.pop(data.draw(st.sampled_from(sorted(model))))
            changes.append(log.delete(**({"id": row["id"]} if minimal else row)))
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(changes) - 1)), min_size=1, max_size=5), label="cuts"))
    bounds = [0, *cuts, len(changes)]
    with tempfile.TemporaryDirectory() as root:
        lake = DeltaLake(root, "model")
        for batch_id, (lo, hi) in enumerate(pairwise(bounds)):
            batch = [items(changes[lo:hi])]
            lake.write_batch(batch_id, batch)
            if data.draw(st.booleans(), label="replay"):
                assert lake.write_batch(batch_id, batch).changelog_skipped
        path = lake.table_path("shop", "items")
        mirror = read(path) if DeltaTable.is_deltatable(path) else []
        assert mirror == sorted(model.values(), key=lambda r: r["id"])
        assert len(changelog(lake)) == len(changes)
