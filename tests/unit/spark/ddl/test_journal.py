"""The DDL journal (``LAKE/_sluice/ddl.json``): a DDL batch interrupted at any step finishes on replay
with each step done once, on a lake in a temporary folder (delta-rs only, no Spark).

A batch of one step of each kind (archive, move, truncate, rewrite, reread), two of them the moves
of ``RENAME TABLE a TO a_old, b TO a`` (a replay that ran a done step again would move the new
``a`` away as well), is applied with a crash at each step in turn: before the step starts (the
journal holds the steps before it), and after the step's effect but before the journal records it
(the step must see on replay that it is done). A new ``MirrorDdl`` then replays the batch, as the
pipeline does after a restart. Each step's effect (a move of a mirror's folder, a Delta commit)
must have happened exactly once over both runs, and the lake must end as an uninterrupted run
leaves it."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from sluice.cdc.schema import Catalog, apply_ddl
from sluice.lake.layout import Lake
from sluice.lake.sink import DeltaLake
from sluice.spark.ddl.apply import MirrorDdl
from sluice.spark.ddl.plan import MirrorStep, plan_ddl

pytestmark = pytest.mark.unit

BATCH = 7
FILE = "binlog.000003"


class Crash(Exception):
    """The process dies here."""


def _rewrite_step() -> MirrorStep:
    catalog = Catalog(databases={"shop": ("utf8mb4", None)}, flavor="mysql")
    catalog, outcome = apply_ddl(catalog, "CREATE TABLE d (id INT PRIMARY KEY, qty INT)", "shop")
    assert outcome.understood
    (step,) = plan_ddl(catalog, "ALTER TABLE d ADD COLUMN note VARCHAR(10) DEFAULT 'x'", "shop",
                       lambda _db, _t: True, "mysql")
    assert step.kind == "rewrite"
    return step


STEPS: list[tuple[tuple[str, int], MirrorStep]] = [
    ((FILE, 100), MirrorStep("archive", "shop", "z", why="drop table")),
    ((FILE, 200), MirrorStep("move", "shop", "a", to=("shop", "a_old"))),
    ((FILE, 200), MirrorStep("move", "shop", "b", to=("shop", "a"))),
    ((FILE, 300), MirrorStep("truncate", "shop", "c")),
    ((FILE, 400), _rewrite_step()),
    ((FILE, 500), MirrorStep("reread", "shop", "e", why="not understood")),
]
MARK = {"z": 1, "a": 2, "b": 3, "c": 4, "d": 5, "e": 6}  # each mirror's rows have qty = its mark * id


class Interrupted(MirrorDdl):
    """``MirrorDdl`` that counts each step's effects and crashes once where it is told to."""

    def __init__(self, lake: DeltaLake, effects: Counter[int], crash: tuple[str, int] | None = None) -> None:
        super().__init__(lake, progress=lambda _text: None)
        self.effects = effects
        self.crash = crash
        self.step = -1

    def _run(self, step: MirrorStep, batch_id: int, at: tuple[str, int], index: int) -> None:
        if self.crash == ("before the step", index):
            raise Crash
        self.step = index
        super()._run(step, batch_id, at, index)

    def _record(self, batch_id: int, done: int, **extra: Any) -> None:
        if self.crash == ("before its journal entry", done - 1) and not extra:
            raise Crash
        super()._record(batch_id, done, **extra)

    def _move(self, path: str, dest: str, batch_id: int, index: int) -> None:
        super()._move(path, dest, batch_id, index)
        self.effects[self.step] += 1

    def _commit(self, path: str, data: Any, batch_id: int, step: MirrorStep) -> None:
        super()._commit(path, data, batch_id, step)
        self.effects[self.step] += 1


def _lake(root: Path) -> DeltaLake:
    lake = DeltaLake(root / "lake", "test-pipeline")
    for table, mark in MARK.items():
        rows = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "qty": pa.array([mark * i for i in (1, 2, 3)],
                                                                                 pa.int32())})
        write_deltalake(lake.table_path("shop", table), rows)
    return lake


def _rows(path: str) -> list[dict[str, Any]]:
    return sorted(DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def _assert_applied_once(lake: DeltaLake) -> None:
    """The lake as one uninterrupted application of ``STEPS`` leaves it."""
    root = Path(lake.root)
    assert sorted(os.listdir(root / "shop")) == ["a", "a_old", "c", "d"]
    archived = os.path.dirname(lake.store.archive("shop", "e", (FILE, 500)))
    assert sorted(os.listdir(archived)) == [f"e@{FILE}-500", f"z@{FILE}-100"]  # no ".1" twins
    for name, was in (("a_old", "a"), ("a", "b")):  # each mirror moved once, with its history
        moved = DeltaTable(lake.table_path("shop", name))
        assert moved.version() == 0 and _rows(moved.table_uri) == [{"id": i, "qty": MARK[was] * i} for i in (1, 2, 3)]
    emptied = DeltaTable(lake.table_path("shop", "c"))
    assert emptied.version() == 1 and _rows(emptied.table_uri) == []
    assert emptied.transaction_version(lake.app_id) == BATCH
    rewritten = DeltaTable(lake.table_path("shop", "d"))
    assert rewritten.version() == 1
    assert _rows(rewritten.table_uri) == [{"id": i, "qty": MARK["d"] * i, "note": "x"} for i in (1, 2, 3)]
    assert lake.store.get_json(Lake.DDL_JOURNAL) == {"batch": BATCH, "done": len(STEPS)}


def test_an_uninterrupted_batch(tmp_path: Path) -> None:
    lake = _lake(tmp_path)
    effects: Counter[int] = Counter()
    rereads = Interrupted(lake, effects).apply(BATCH, STEPS)
    assert [s.name for s in rereads] == ["shop.e"]
    assert effects == {i: 1 for i in range(len(STEPS))}
    _assert_applied_once(lake)
    assert [s.name for s in Interrupted(lake, effects).apply(BATCH, STEPS)] == ["shop.e"]  # a replay: nothing
    assert effects == {i: 1 for i in range(len(STEPS))}


@pytest.mark.parametrize("when", ["before the step", "before its journal entry"])
@pytest.mark.parametrize("index", range(len(STEPS)), ids=[s.kind for _, s in STEPS])
def test_a_batch_interrupted_at_a_step_finishes_on_replay(tmp_path: Path, index: int, when: str) -> None:
    lake = _lake(tmp_path)
    effects: Counter[int] = Counter()
    with pytest.raises(Crash):
        Interrupted(lake, effects, crash=(when, index)).apply(BATCH, STEPS)
    done = index if when == "before the step" else index + 1
    assert effects == {i: 1 for i in range(done)}  # the steps before the crash, and only those
    journal = lake.store.get_json(Lake.DDL_JOURNAL) or {"batch": BATCH, "done": 0}
    assert journal == {"batch": BATCH, "done": index}
    rereads = Interrupted(lake, effects).apply(BATCH, STEPS)  # the restart replays the batch
    assert [s.name for s in rereads] == ["shop.e"]
    assert effects == {i: 1 for i in range(len(STEPS))}
    _assert_applied_once(lake)
