"""``SnapshotFilter``: ``covers`` (the stream's changes of a snapshotted table can be filtered only
before the last high watermark of its chunks) and ``keep_source`` (the filter on a staged batch's
folded MERGE source) against ``keep`` (the filter on the changes one by one)."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from sluice.binlog.position import Checkpoint
from sluice.cdc.records import RowChange
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.table_read.chunks import Chunk
from sluice.lake.mirror.merge_source import fold_sources, merge_source, without_positions
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.snapshot.filter import SnapshotFilter
from sluice.spark.snapshot.state import SnapshotState
from tests.unit.lake.test_merge_source import (
    COMPOSITE,
    WIDE,
    arrow_rows,
    composite_row,
    random_changes,
    schema_of,
    wide_row,
)
from tests.unit.spark.source.test_staging import cuts

pytestmark = pytest.mark.unit


def _state() -> SnapshotState:
    schema = TableSchema("d", "t", (ColumnDef("id", "int", nullable=False),), ("id",))
    chunks = [Chunk("d", "t", 0, ("id",), None, (10,)), Chunk("d", "t", 1, ("id",), (10,), None)]
    done = {
        chunks[0].id: {"low": Checkpoint("b.000001", 100).to_json(), "high": Checkpoint("b.000001", 500).to_json()},
        chunks[1].id: {"low": Checkpoint("b.000001", 400).to_json(), "high": Checkpoint("b.000002", 90).to_json()},
    }
    tables = {"d.t": {"schema": schema.to_json(), "key": ["id"], "chunks": [c.to_json() for c in chunks],
                      "done": done, "writing": None}}
    return SnapshotState(Checkpoint("b.000001", 100).to_json(), tables, True, "mysql")


def test_covers_only_before_the_last_high_watermark() -> None:
    snapshot_filter = SnapshotFilter(_state())
    assert snapshot_filter.covers("d", "t", "b.000001", 4000)
    assert snapshot_filter.covers("d", "t", "b.000002", 89)
    assert not snapshot_filter.covers("d", "t", "b.000002", 90)
    assert not snapshot_filter.covers("d", "t", "b.000003", 4)
    assert not snapshot_filter.covers("d", "other", "b.000001", 4000)


# ``keep_source``: the column-wise filter of a staged batch against ``keep`` on its changes.

FILES = ("b.000001", "b.000002")


def _placed(rng: random.Random, changes: list[RowChange]) -> list[RowChange]:
    """The changes at rising positions over two binlog files, a few rows per event."""
    out, file, pos = [], 0, 4
    for change in changes:
        if rng.random() < 0.4:
            pos += rng.randrange(20, 200)
            if file == 0 and rng.random() < 0.03:
                file, pos = 1, 4
        out.append(replace(change, file=FILES[file], pos=pos))
    return out


def _snapshot(schema: TableSchema, bounds: list[tuple[Any, ...]], highs: list[tuple[str, int]],
              skip: int | None = None) -> SnapshotState:
    """A finished snapshot of ``schema`` in chunks cut at ``bounds``, each read up to its high
    watermark; chunk ``skip`` never finished."""
    key = tuple(schema.primary_key)
    edges: list[tuple[Any, ...] | None] = [None, *bounds, None]
    chunks = [Chunk("db", schema.name, i, key, lo, up) for i, (lo, up) in enumerate(itertools.pairwise(edges))]
    done = {c.id: {"low": Checkpoint(FILES[0], 4).to_json(), "high": Checkpoint(*high).to_json()}
            for c, high in zip(chunks, highs, strict=True) if c.index != skip}
    tables = {f"db.{schema.name}": {"schema": schema.to_json(), "key": list(key), "done": done, "writing": None,
                                    "chunks": [c.to_json() for c in chunks]}}
    return SnapshotState(Checkpoint(FILES[0], 4).to_json(), tables, True, "mysql")


def _by_key(table: pa.Table | None, pk: tuple[str, ...]) -> list[dict[str, Any]]:
    if table is None:
        return []
    return without_positions(table).sort_by([(k, "ascending") for k in pk]).to_pylist()


@pytest.mark.parametrize("seed", range(24))
def test_keep_source_keeps_what_keep_keeps(seed: int) -> None:
    """Changes staged in ranges, folded, then filtered column-wise: the same MERGE source as the
    changes ``keep`` keeps, folded. Chunk bounds and high watermarks fall anywhere, exactly on a
    change's position too; keys move between chunks; a composite key has text equal under its
    collation ('a' and 'A'); an unsigned key with a negative bound compares as Python integers."""
    rng = random.Random(seed)
    wide = seed % 2 == 0
    schema = schema_of(WIDE if wide else COMPOSITE)
    pk = tuple(schema.primary_key)
    columns = mirror_columns_for_schema(schema, "mysql")

    def new_key(r: random.Random) -> Any:
        return r.randrange(1, 60) if wide else (r.choice(["a", "A", "b", "é", "e", "z z"]), r.randrange(-3, 4))

    changes = _placed(rng, random_changes(rng, schema.name, pk, wide_row if wide else composite_row, new_key,
                                          {}, 400, 4))
    if wide:
        bounds = sorted({(rng.randrange(2, 59),) for _ in range(rng.randrange(1, 6))})
        if seed % 4 == 2:
            bounds = [(-5,), *bounds]
    else:
        bounds = sorted({(rng.choice(["a", "b", "e", "z"]), rng.randrange(-3, 4)) for _ in range(rng.randrange(1, 5))})
        bounds = [b for i, b in enumerate(bounds) if i == 0 or bounds[i - 1][0].casefold() != b[0].casefold()]
    positions = [(c.file, c.pos) for c in changes]
    highs = [rng.choice(positions) for _ in range(len(bounds) + 1)]
    skip = rng.choice([None, *range(len(bounds) + 1)])
    snapshot_filter = SnapshotFilter(_snapshot(schema, bounds, highs, skip=skip))
    rows = arrow_rows(changes)
    kept = snapshot_filter.keep(changes)
    expected = merge_source(columns, pk, arrow_rows(kept)) if kept else None
    parts = [merge_source(columns, pk, rows.slice(a, b - a), positions=True) for a, b in cuts(rng, rows.num_rows)]
    assert all(p is not None for p in parts)
    got = snapshot_filter.keep_source("db", schema.name, pk, fold_sources([p for p in parts if p is not None], pk))
    assert got is not None
    assert _by_key(got, pk) == _by_key(expected, pk)


def test_keep_source_leaves_to_the_per_row_path_what_it_cannot_judge() -> None:
    schema = schema_of(COMPOSITE)
    pk = tuple(schema.primary_key)
    columns = mirror_columns_for_schema(schema, "mysql")
    changes = [RowChange("insert", "db", "p", None, composite_row(random.Random(0), ("a", 1)), pk, FILES[0], 9, 0,
                         None, 0)]
    source = merge_source(columns, pk, arrow_rows(changes), positions=True)
    assert source is not None
    plain = SnapshotFilter(_snapshot(schema, [("m", 0)], [(FILES[1], 4)] * 2))
    assert plain.keep_source("db", "p", pk, source) is not None
    assert plain.keep_source("db", "p", pk, without_positions(source)) is None  # no positions
    assert plain.keep_source("db", "p", ("a",), source) is None  # a snapshot key other than the primary key
    overlapping = _snapshot(schema, [("m", 0)], [(FILES[1], 4)] * 2)
    overlapping.tables["db.p"]["chunks"][1]["lower"] = ["c", 0]
    assert SnapshotFilter(overlapping).keep_source("db", "p", pk, source) is None
    dated = schema_of("CREATE TABLE p (a DATE NOT NULL, n INT NOT NULL, PRIMARY KEY (a, n))")
    assert SnapshotFilter(_snapshot(dated, [], [(FILES[1], 4)])).keep_source("db", "p", pk, source.select(
        ["a", "n", "_sluice_delete", "_sluice_file", "_sluice_pos"])) is None  # a DATE key: compared per row
    lost = SnapshotState(None, {"db.p": {"lost": True, "key": [], "chunks": [], "done": {}, "writing": None}}, True)
    assert SnapshotFilter(lost).keep_source("db", "p", pk, source).num_rows == 0  # type: ignore[union-attr]
    assert SnapshotFilter(lost).keep_source("db", "q", pk, source) is source  # another table: as it is


@pytest.mark.parametrize("key_type", ["INT", "BIGINT UNSIGNED", "DECIMAL(8,2)"])
def test_keep_source_at_the_bounds_of_a_chunk_never_read(key_type: str) -> None:
    """Keys on each side of the bounds of a chunk that never finished: only the finished chunks'
    keys are left out. A negative bound of an unsigned key is compared as a Python integer, a
    DECIMAL key as a ``Decimal``."""
    schema = schema_of(f"CREATE TABLE g (id {key_type} NOT NULL, v INT, PRIMARY KEY (id))")
    columns = mirror_columns_for_schema(schema, "mysql")
    number = Decimal if key_type.startswith("DECIMAL") else int
    keys = [number(k) for k in (0, 9, 10, 19, 20, 21)]
    changes = [RowChange("insert", "db", "g", None, {"id": k, "v": i}, ("id",), FILES[0], 100 + i, 0, None, 0)
               for i, k in enumerate(keys)]
    source = merge_source(columns, ("id",), arrow_rows(changes), positions=True)
    assert source is not None
    bounds = [(number(-1 if key_type == "BIGINT UNSIGNED" else 1),), (number(10),), (number(20),)]
    snapshot_filter = SnapshotFilter(_snapshot(schema, bounds, [(FILES[1], 4)] * 4, skip=2))
    kept = snapshot_filter.keep_source("db", "g", ("id",), source)
    assert kept is not None and kept.column("id").to_pylist() == [10, 19]
    assert [c.after["id"] for c in snapshot_filter.keep(changes) if c.after] == [10, 19]
    if key_type.startswith("DECIMAL"):
        assert kept.column("id").to_pylist() == [Decimal("10.00"), Decimal("19.00")]
