"""``SnapshotFilter`` on a table whose snapshot key is hashed (``--hash-columns``): the changes it is
given carry the key's hash, its chunks are bounded by the key's own values, and ``KeyPlaces`` places
each hash by the binlog's changes in the window. It must keep exactly what the filter keeps of the
same changes unmasked, per change (``keep``) and on a folded MERGE source (``keep_source``)."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from typing import Any

import pytest

from sluice.binlog.position import Checkpoint, position_key
from sluice.cdc.column_rules import column_rules, open_chunk, sealed
from sluice.cdc.records import RowChange
from sluice.cdc.table_read.chunks import Chunk
from sluice.errors import ConfigError, SchemaError
from sluice.lake.mirror.merge_source import fold_sources, merge_source
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.snapshot.filter import SnapshotFilter
from sluice.spark.snapshot.key_places import PlaceReader
from tests.unit.lake.test_merge_source import (
    COMPOSITE,
    WIDE,
    arrow_rows,
    composite_row,
    random_changes,
    schema_of,
    wide_row,
)
from tests.unit.spark.snapshot.test_filter import FILES, _by_key, _placed, _snapshot
from tests.unit.spark.source.test_staging import cuts

pytestmark = pytest.mark.unit

KEY = b"a key of sixteen bytes or more"


class _Binlog(PlaceReader):
    """The binlog as the driver reads it: the changes unmasked, those of ``[start, end)``."""

    def __init__(self, changes: list[RowChange], rules: Any) -> None:
        super().__init__("mysql://unused@localhost/", "unused", rules)
        self.binlog = changes
        self.reads: list[tuple[str, int]] = []

    def changes(self, db: str, table: str, start: Checkpoint, end: Checkpoint) -> list[RowChange]:
        self.reads.append((start.file, start.pos))
        return [c for c in self.binlog if (c.db, c.table) == (db, table)
                and start.key <= position_key(c.file, c.pos) < end.key]


@pytest.mark.parametrize("seed", range(16))
def test_a_hashed_key_is_judged_as_its_own_values_are(seed: int) -> None:
    """Random changes (inserts, updates, deletes, key moves between chunks; a composite key whose
    text is equal under its collation, 'a' and 'A', with only the text hashed), chunk bounds and
    high watermarks anywhere, a chunk never finished: hashed, the filter keeps the changes it keeps
    unhashed, and the column-wise path folds to the same MERGE source."""
    rng = random.Random(seed)
    wide = seed % 2 == 0
    schema = schema_of(WIDE if wide else COMPOSITE)
    pk = tuple(schema.primary_key)
    rules = column_rules(None, r"db\.t\.id" if wide else r"db\.p\.a", KEY)
    assert rules is not None
    columns = mirror_columns_for_schema(rules.mask_schema(schema), "mysql")

    def new_key(r: random.Random) -> Any:
        return r.randrange(1, 60) if wide else (r.choice(["a", "A", "b", "é", "e", "z z"]), r.randrange(-3, 4))

    changes = _placed(rng, random_changes(rng, schema.name, pk, wide_row if wide else composite_row, new_key,
                                          {}, 400, 4))
    if wide:
        bounds = sorted({(rng.randrange(2, 59),) for _ in range(rng.randrange(1, 6))})
    else:
        bounds = sorted({(rng.choice(["a", "b", "e", "z"]), rng.randrange(-3, 4)) for _ in range(rng.randrange(1, 5))})
        bounds = [b for i, b in enumerate(bounds) if i == 0 or bounds[i - 1][0].casefold() != b[0].casefold()]
    highs = [rng.choice([(c.file, c.pos) for c in changes]) for _ in range(len(bounds) + 1)]
    state = _snapshot(schema, bounds, highs, skip=rng.choice([None, *range(len(bounds) + 1)]))
    binlog = _Binlog(changes, rules)
    hashed = SnapshotFilter(state, binlog)
    masked = [rules.mask(c) for c in changes]
    assert all(m.after is None or m.after[pk[0]] != c.after[pk[0]] for m, c in zip(masked, changes, strict=True)
               if c.after is not None)

    def folded(kept: list[RowChange]) -> list[dict[str, Any]]:
        return _by_key(merge_source(columns, pk, arrow_rows(kept)) if kept else None, pk)

    expected = folded([rules.mask(c) for c in SnapshotFilter(state).keep(changes)])
    assert folded(hashed.keep(masked)) == expected
    rows = arrow_rows(masked)
    parts = [merge_source(columns, pk, rows.slice(a, b - a), positions=True) for a, b in cuts(rng, rows.num_rows)]
    got = hashed.keep_source("db", schema.name, pk, fold_sources([p for p in parts if p is not None], pk))
    assert got is not None
    assert _by_key(got, pk) == expected
    assert binlog.reads == [(FILES[0], 4)]  # one read of the window, from the snapshot's start


def test_a_hash_the_window_does_not_know_is_an_error() -> None:
    """A change whose hashed key no change of the binlog window hashes to (another key, another
    rule) is a typed error, never a change let through or dropped unjudged."""
    schema = schema_of(WIDE)
    pk = tuple(schema.primary_key)
    rules = column_rules(None, r"db\.t\.id", KEY)
    other = column_rules(None, r"db\.t\.id", b"another key of sixteen bytes")
    assert rules is not None and other is not None
    change = RowChange("insert", "db", "t", None, wide_row(random.Random(1), 30), pk, "b.000001", 50, 0, None, 0)
    state = _snapshot(schema, [(20,)], [("b.000001", 90), ("b.000001", 90)])
    hashed = SnapshotFilter(state, _Binlog([change], rules))
    assert hashed.keep([rules.mask(change)]) == []  # placed in the second chunk, before its high watermark
    with pytest.raises(SchemaError, match=r"db\.t at b\.000001:50 has a hashed key"):
        SnapshotFilter(state, _Binlog([change], rules)).keep([other.mask(change)])
    later = replace(change, pos=95)  # after every high watermark: nothing to place
    assert SnapshotFilter(state, _Binlog([], rules)).keep([rules.mask(later)]) == [rules.mask(later)]


def test_the_bounds_of_a_hashed_key_are_sealed_in_the_lake() -> None:
    """A chunk plan whose key is hashed keeps its bounds sealed (no key value in ``snapshot.json``);
    they open under the same key, bound to their chunk, and not under another key or none."""
    rules = column_rules(None, r"db\.t\.email", KEY)
    assert rules is not None
    chunk = Chunk("db", "t", 2, ("email",), ("ada@example.com",), ("bob@x.org",)).to_json()
    kept = rules.seal_chunk(chunk)
    assert "example" not in json.dumps(kept) and sealed(kept) and not sealed(chunk)
    assert Chunk.json_id(kept) == "db.t#2" and open_chunk(rules, kept) == chunk
    assert open_chunk(None, chunk) is chunk
    with pytest.raises(ConfigError, match=r"db\.t: the bounds of snapshot chunk 2 do not open under this key"):
        open_chunk(column_rules(None, r"db\.t\.email", b"another key of sixteen bytes"), kept)
    with pytest.raises(ConfigError, match=r"db\.t: its key is hashed"):
        open_chunk(None, kept)
    with pytest.raises(ConfigError, match="do not open"):  # moved to another chunk's place
        open_chunk(rules, {**kept, "index": 3})
    schema = schema_of(WIDE)
    state = _snapshot(schema, [(20,)], [("b.000001", 90), ("b.000001", 90)])
    plan = state.tables["db.t"]
    wide = column_rules(None, r"db\.t\.id", KEY)
    assert wide is not None
    plan["chunks"] = [wide.seal_chunk(c) for c in plan["chunks"]]
    change = RowChange("insert", "db", "t", None, wide_row(random.Random(1), 30), ("id",), "b.000001", 50, 0, None, 0)
    assert SnapshotFilter(state, _Binlog([change], wide)).keep([wide.mask(change)]) == []  # opened: placed
