"""The compiled core's typed images (``TypedImages``) against the reference: the JSON images parsed back.

Decoded rows — Python values as the row plans make them: integers, text, DECIMALs, dates and
times as their text (zero dates too), NULLs, unicode and escapes — go into ``ChangeRows`` the way the event runs
put them, transaction by transaction, and are gathered as ``arrow_batches`` gathers them. The
MERGE source built from the typed columns (``typed_merge_source``) must equal the one parsed from
the JSON images (``merge_source``) wherever it is built at all, and it must be built for tables
of the common types; values it must not type make it step aside.
"""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sluice.binlog.absent import ABSENT
from sluice.cdc.change_rows import kind_metas
from sluice.cdc.jsonl import line_parts, value_bytes
from sluice.cdc.schema import TableSchema
from sluice.lake.changelog.rows import changelog_from_rows, to_row_changes
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.mirror.merge_source import merge_source, typed_merge_source
from sluice.lake.sink import DeltaLake
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.lake.types.typed_images import typed_rows
from sluice.spark.source.change_frame import columns_batch
from tests.unit.lake.test_merge_source import mirror, schema_of

pytestmark = pytest.mark.unit

core = pytest.importorskip("sluice.binlog._rowcore", reason="the compiled core is not built")

TABLE = """CREATE TABLE t (id BIGINT NOT NULL, k INT, c CHAR(20), d DECIMAL(12,3), day DATE, at DATETIME(6),
  tm TIME(1), e ENUM('a','b'), ts TIMESTAMP(2) NULL, PRIMARY KEY (id))"""
NAMES = ("id", "k", "c", "d", "day", "at", "tm", "e", "ts")
TEXTS = ["", "plain", "ünïcödé ✓", "emoji 😀", 'quote " and \\ back', "new\nline\ttab", "\u02bc"]


def value_row(rng: random.Random, key: int) -> tuple[Any, ...]:
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.15 else v

    return (
        key, maybe(rng.randrange(-2**31, 2**31)), maybe(rng.choice(TEXTS)),
        maybe(Decimal(rng.randrange(-10**11, 10**11)).scaleb(-3)),
        maybe(rng.choice(["2024-02-29", "0001-01-01", "0000-00-00", "2023-00-10"])),
        maybe(rng.choice([f"2020-06-01 01:02:03.{rng.randrange(10**6):06d}", "0000-00-00 00:00:00.000000"])),
        maybe(rng.choice(["-838:59:59.0", f"12:34:56.{rng.randrange(10)}"])),
        maybe(rng.choice(["a", "b", ""])),
        maybe(rng.choice(["0000-00-00 00:00:00.00", f"2001-02-03T04:05:06.{rng.randrange(100):02d}Z"])),
    )


def events(rng: random.Random, count: int, make: Any = None) -> list[tuple[int, list[Any]]]:
    """Rows events (kind, rows) over a few live keys: inserts, updates (some moving the key), deletes."""
    make = make or value_row
    live: dict[int, tuple[Any, ...]] = {}
    out: list[tuple[int, list[Any]]] = []
    next_key = 1
    for _ in range(count):
        choice = rng.random()
        if choice < 0.4 or len(live) < 3:
            rows = []
            for _ in range(rng.randrange(1, 4)):
                live[next_key] = make(rng, next_key)
                rows.append(live[next_key])
                next_key += 1
            out.append((0, rows))
        elif choice < 0.8:
            key = rng.choice(sorted(live))
            new_key = key if rng.random() < 0.8 else next_key
            next_key += new_key == next_key
            after = make(rng, new_key)
            out.append((1, [(live.pop(key), after)]))
            live[new_key] = after
        else:
            key = rng.choice(sorted(live))
            out.append((2, [live.pop(key)]))
    return out


def change_rows(transactions: list[list[tuple[int, list[Any]]]], names: tuple[str, ...] = NAMES,
                json: int = 0) -> Any:
    """The transactions' rows as ``arrow_batches`` gathers them: one ChangeRows per transaction,
    extended into the batch's with a GTID and commit time (bit j of ``json``: column j is JSON)."""
    keys = line_parts("write", "db", "t", names, ("id",), "binlog.000001")[1]
    metas = kind_metas("db", "t", ("id",), "binlog.000001")
    batch = core.ChangeRows()
    pos = 4
    for tx in transactions:
        rows = core.ChangeRows()
        rows.keep_typed = True  # as the pipeline's tasks ask for (CaptureOutput.TYPED_COLUMNS)
        for kind, event in tx:
            rows.add_rows(kind, keys, event, rows.meta_id(metas[kind]), pos, 1_700_000_000_000_000, ABSENT, value_bytes,
                          json)
            pos += 100
        batch.extend(rows, None, 1_700_000_000_000_000)
    return batch


def both(batch: Any, schema: TableSchema) -> tuple[pa.Table | None, pa.Table | None]:
    rows = pa.Table.from_batches([columns_batch(batch)])
    columns = mirror_columns_for_schema(schema, "mysql")
    images = typed_rows([batch.typed[("db", "t")]], rows.num_rows)
    typed = None if images is None else typed_merge_source(columns, ("id",), rows, images, positions=True)
    return typed, merge_source(columns, ("id",), rows, positions=True)


@pytest.mark.parametrize("seed", range(12))
def test_typed_images_make_the_merge_source_the_json_images_make(seed: int) -> None:
    rng = random.Random(seed)
    batch = change_rows([events(rng, rng.randrange(1, 6)) for _ in range(rng.randrange(1, 40))])
    typed, parsed = both(batch, schema_of(TABLE))
    assert parsed is not None
    assert typed is not None, "the typed images stepped aside for a table of common types"
    assert typed.equals(parsed), (typed.to_pylist()[:3], parsed.to_pylist()[:3])


def test_integers_past_int64_text_in_an_integer_column_and_minimal_images_step_aside() -> None:
    """A minimal image leaves the table untyped; a value without a typed form only its column."""
    schema = schema_of(TABLE)
    good = value_row(random.Random(1), 1)
    huge = (2**63, *good[1:])
    text_key = ("2", *good[1:])
    minimal = (2, ABSENT, *good[2:])
    for row in (huge, text_key, minimal):
        batch = change_rows([[(0, [good]), (0, [row])]])
        images = typed_rows([batch.typed[("db", "t")]], 2)
        if row is minimal:  # a minimal image: no typed image of the table at all
            assert batch.typed[("db", "t")].failed and images is None
        else:  # a value without a typed form: its column is not kept, the others are
            assert images is not None and "id" not in images.after and set(images.after) == set(NAMES) - {"id"}
        typed, _ = both(batch, schema)
        assert typed is None


def test_a_column_typed_one_way_then_another_steps_aside() -> None:
    """A column that holds integers in one transaction and text in the next (a mirror could not
    take both either) is not typed; all NULLs before the first value are."""
    schema = schema_of(TABLE)
    rng = random.Random(3)
    first = (1, None, *value_row(rng, 1)[2:])
    second = (2, 5, *value_row(rng, 2)[2:])
    batch = change_rows([[(0, [first])], [(0, [second])]])
    typed, parsed = both(batch, schema)
    assert typed is not None and parsed is not None and typed.equals(parsed)
    third = (3, "x", *value_row(rng, 3)[2:])
    batch = change_rows([[(0, [first])], [(0, [second])], [(0, [third])]])
    assert batch.typed[("db", "t")].failed


def test_rows_added_from_text_leave_the_table_to_the_json_images() -> None:
    """A change added as JSON text (a partial JSON update, a record made in Python) is not in the
    typed images: their count no longer matches the table's, and the JSON images decide."""
    batch = change_rows([[(0, [value_row(random.Random(4), 1)])]])
    tx = core.ChangeRows()
    tx.add(tx.meta_id(kind_metas("db", "t", ("id",), "binlog.000001")[0]), None, '{"id":9}', None, 900, 0, 0)
    batch.extend(tx, None, 0)
    rows = pa.Table.from_batches([columns_batch(batch)])
    assert typed_rows([batch.typed[("db", "t")]], rows.num_rows) is None


OTHER = """CREATE TABLE t (id BIGINT NOT NULL, g DOUBLE, f FLOAT, bl BLOB, bn BINARY(4), s SET('x','y','zé'),
  j JSON, PRIMARY KEY (id))"""
OTHER_NAMES = ("id", "g", "f", "bl", "bn", "s", "j")
DOCUMENTS: list[Any] = [{"a": [1, "two", None, True]}, [], {"é": {"n": -5}}, "text", 7, {"q": 'say "hi"\n'}]


def other_row(rng: random.Random, key: int) -> tuple[Any, ...]:
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.15 else v

    return (
        key, maybe(rng.choice([0.0, -0.0, 0.1, -2.5e-300, 1.7976931348623157e308, 5e-324])),
        maybe(rng.choice([1.5, 0.10000000149011612, -3.4028234663852886e38])),
        maybe(bytes(rng.randrange(256) for _ in range(rng.randrange(30)))),
        maybe(rng.choice([b"ab\x00\x00", b"\xff\x00\x01\x02"])),
        maybe(rng.choice([(), ("x",), ("y", "zé"), ("x", "y", "zé")])), maybe(rng.choice(DOCUMENTS)),
    )


@pytest.mark.parametrize("seed", range(4))
def test_floats_binary_strings_sets_and_json_documents_make_the_per_row_mirror(tmp_path: Path, seed: int) -> None:
    """Their typed images (a double, the bytes, the members' and a document's text) make the MERGE
    source that gives the mirror the per-row path gives."""
    rng = random.Random(seed)
    schema = schema_of(OTHER)
    columns = mirror_columns_for_schema(schema, "mysql")
    slow, fast = DeltaLake(tmp_path / "rows", "app"), DeltaLake(tmp_path / "typed", "app")
    for batch_id in range(3):
        transactions = [events(rng, rng.randrange(1, 5), other_row) for _ in range(rng.randrange(1, 20))]
        batch = change_rows(transactions, OTHER_NAMES, json=1 << 6)
        rows = pa.Table.from_batches([columns_batch(batch)])
        images = typed_rows([batch.typed[("db", "t")]], rows.num_rows)
        assert images is not None and set(images.after) == set(OTHER_NAMES)
        kinds = {name: images.after[name].type for name in ("g", "f", "bl", "bn")}
        assert all(kind in (pa.null(), pa.float64()) for kind in (kinds["g"], kinds["f"])), kinds
        assert all(kind in (pa.null(), pa.binary()) for kind in (kinds["bl"], kinds["bn"])), kinds
        source = typed_merge_source(columns, ("id",), rows, images)
        assert source is not None, "the typed images stepped aside"
        slow.write_batch(batch_id, [TableBatch("db", "t", columns, ("id",), to_row_changes(columns, rows))])
        fast.write_batch(batch_id, [TableBatch("db", "t", columns, ("id",), (), source, rows.num_rows)],
                         changelog=changelog_from_rows(rows, batch_id))
        assert mirror(tmp_path / "rows", "db", "t", ("id",)) == mirror(tmp_path / "typed", "db", "t", ("id",))


def test_a_set_member_the_text_could_not_tell_apart_leaves_its_column_untyped() -> None:
    """An empty member (MySQL allows one) would make the empty set's text: the column steps aside."""
    schema = schema_of("CREATE TABLE t (id BIGINT NOT NULL, s SET('', 'x'), PRIMARY KEY (id))")
    assert schema is not None
    batch = change_rows([[(0, [(1, ("x",)), (2, ("",))])]], ("id", "s"))
    images = typed_rows([batch.typed[("db", "t")]], 2)
    assert images is not None and set(images.after) == {"id"}
