"""The column-wise MERGE source (``sluice.lake.mirror.merge_source``) against the per-row path, no server.

The same changes — as the change DataFrame's Arrow rows (``record_batch``) — go through both paths
into two Delta lakes, batch after batch; the mirrors must be equal row for row. The changes mix
inserts, updates and deletes of the same keys in one batch, key moves, NULLs, zero and partial
dates, DECIMALs, unicode text, negative numbers, unsigned BIGINT keys, fractional seconds 0-6,
FLOAT / DOUBLE extremes, binary strings (BINARY's padding) and SETs. Cases the column-wise path
must leave to the per-row path return None.
"""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sluice.cdc.records import RowChange
from sluice.cdc.schema import Catalog, TableSchema, apply_ddl
from sluice.lake.changelog.rows import changelog_from_rows as _changelog
from sluice.lake.changelog.rows import to_row_changes as _row_changes
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.mirror.merge_source import merge_source
from sluice.lake.sink import DeltaLake
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.source.change_frame import record_batch

pytestmark = pytest.mark.unit

CATALOG = Catalog(server_charset="utf8mb4", server_collation="utf8mb4_0900_ai_ci", flavor="mysql")

WIDE = """CREATE TABLE t (
  id BIGINT UNSIGNED NOT NULL, k INT, neg SMALLINT, tiny TINYINT UNSIGNED, c VARCHAR(50), e ENUM('a','b'),
  d DECIMAL(10,3), big DECIMAL(38,10), dt DATE, t0 DATETIME, t3 DATETIME(3), t6 DATETIME(6),
  ts TIMESTAMP NULL, ts2 TIMESTAMP(2) NULL, tm TIME(4), y YEAR, b BIT(5), PRIMARY KEY (id))"""
MIXED = """CREATE TABLE m (id INT NOT NULL, f FLOAT, g DOUBLE, bl BLOB, bn BINARY(4), vb VARBINARY(10),
  s SET('x','y','zé'), PRIMARY KEY (id))"""
COMPOSITE = "CREATE TABLE p (a VARCHAR(20) NOT NULL, n INT NOT NULL, v DECIMAL(5,2), w DATETIME(1), PRIMARY KEY (a, n))"


def schema_of(sql: str) -> TableSchema:
    catalog, outcome = apply_ddl(CATALOG, "CREATE DATABASE db", None)
    catalog, outcome = apply_ddl(catalog, sql, "db")
    assert outcome.understood, outcome
    (schema,) = catalog.tables("db")
    return schema


TEXTS = ["", "plain", "ünïcödé ✓", "emoji 😀", 'quote " and \\ back', "new\nline\ttab", '{"id":1,', "\u02bc"]
DATES = ["2024-02-29", "0000-00-00", "2023-00-10", "1999-12-00", "0001-01-01", "9999-12-31", "0000-05-05"]


def wide_row(rng: random.Random, key: int) -> dict[str, Any]:
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.15 else v

    date = rng.choice(DATES)
    frac = f"{rng.randrange(10 ** 6):06d}"
    return {
        "id": key, "k": maybe(rng.randrange(-2**31, 2**31)), "neg": maybe(rng.randrange(-32768, 0)),
        "tiny": maybe(rng.randrange(256)), "c": maybe(rng.choice(TEXTS)), "e": maybe(rng.choice(["a", "b", ""])),
        "d": maybe(Decimal(rng.randrange(-10 ** 10 + 1, 10 ** 10)).scaleb(-3)),
        "big": maybe(Decimal(rng.randrange(-10 ** 38 + 1, 10 ** 38)).scaleb(-10)),
        "dt": maybe(date), "t0": maybe(f"{date} 23:59:59"),
        "t3": maybe(f"2020-06-0{rng.randrange(1, 10)} 01:02:03.{frac[:3]}"),
        "t6": maybe(rng.choice([f"{date} 00:00:00.{frac}", f"1970-01-01 00:00:00.{frac}"])),
        "ts": maybe(rng.choice(["0000-00-00 00:00:00", "2038-01-19T03:14:07Z", "1970-01-01T00:00:01Z"])),
        "ts2": maybe(rng.choice(["0000-00-00 00:00:00.00", f"2001-02-03T04:05:06.{frac[:2]}Z"])),
        "tm": maybe(rng.choice(["-838:59:59.0000", "00:00:00.0000", f"12:34:56.{frac[:4]}"])),
        "y": maybe(rng.choice([0, 1901, 2155])), "b": maybe(rng.randrange(32)),
    }


FLOATS = [0.0, -0.0, 1.5, -2.25, 0.1, 1e-300, 1.7976931348623157e308, 5e-324, 123456.789]
FLOAT32S = [0.0, 1.5, 0.10000000149011612, -3.4028234663852886e38, 1.401298464324817e-45]
SETS = [(), ("x",), ("y", "zé"), ("x", "y", "zé")]


def mixed_row(rng: random.Random, key: int) -> dict[str, Any]:
    """FLOAT, DOUBLE, binary strings and SETs, as the row decoder makes them."""
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.15 else v

    return {
        "id": key, "f": maybe(rng.choice(FLOAT32S)), "g": maybe(rng.choice(FLOATS)),
        "bl": maybe(bytes(rng.randrange(256) for _ in range(rng.randrange(40)))),
        "bn": maybe(rng.choice([b"\x00\x00\x00\x00", b"ab\x00\x00", b"\xff\xfe\x01\x02"])),
        "vb": maybe(rng.choice([b"", b"\x00", b"plain", b"\x80\x81"])), "s": maybe(rng.choice(SETS)),
    }


def composite_row(rng: random.Random, key: tuple[str, int]) -> dict[str, Any]:
    return {"a": key[0], "n": key[1], "v": Decimal(rng.randrange(-99999, 100000)).scaleb(-2),
            "w": rng.choice(["0000-00-00 00:00:00.0", f"2020-01-01 00:00:0{rng.randrange(10)}.{rng.randrange(10)}"])}


def random_changes(rng: random.Random, table: str, pk: tuple[str, ...], make: Any, new_key: Any,
                   live: dict[Any, dict[str, Any]], count: int, pos: int, moves: bool = True) -> list[RowChange]:
    out: list[RowChange] = []
    where = ("binlog.000001", pos)
    for i in range(count):
        r = rng.random()
        if not live or r < 0.35:
            key = new_key(rng)
            if key in live:
                continue
            image = make(rng, key)
            live[key] = image
            out.append(RowChange("insert", "db", table, None, image, pk, *where, i, None, 1_700_000_000))
        elif r < 0.8:
            key = rng.choice(list(live))
            before = live.pop(key)
            target = key
            if moves and rng.random() < 0.2:
                target = new_key(rng)
                if target in live:
                    target = key
            after = make(rng, target)
            live[target] = after
            out.append(RowChange("update", "db", table, before, after, pk, *where, i, None, 1_700_000_000))
        else:
            key = rng.choice(list(live))
            before = live.pop(key)
            out.append(RowChange("delete", "db", table, before, None, pk, *where, i, None, 1_700_000_000))
    return out


def arrow_rows(changes: list[RowChange]) -> pa.Table:
    return pa.Table.from_batches([record_batch(changes, [1_700_000_000_000_000] * len(changes))])


def mirror(path: Path, db: str, table: str, pk: tuple[str, ...]) -> list[dict[str, Any]]:
    return DeltaTable(str(path / db / table)).to_pyarrow_table().sort_by([(k, "ascending") for k in pk]).to_pylist()


def run_both(tmp_path: Path, sql: str, batches: list[list[RowChange]]) -> tuple[Any, Any]:
    schema = schema_of(sql)
    columns = mirror_columns_for_schema(schema, "mysql")
    pk = tuple(schema.primary_key)
    slow, fast = DeltaLake(tmp_path / "rows", "app"), DeltaLake(tmp_path / "cols", "app")
    for batch_id, changes in enumerate(batches):
        rows = arrow_rows(changes)
        per_row = _row_changes(columns, rows)
        slow.write_batch(batch_id, [TableBatch("db", schema.name, columns, pk, per_row)])
        source = merge_source(columns, pk, rows)
        assert source is not None, "the column-wise path must take these changes"
        result = fast.write_batch(batch_id, [TableBatch("db", schema.name, columns, pk, (), source, rows.num_rows)],
                                  changelog=_changelog(rows, batch_id))
        assert result.tables[0].status == "written"
        assert mirror(tmp_path / "rows", "db", schema.name, pk) == mirror(tmp_path / "cols", "db", schema.name, pk)
    return mirror(tmp_path / "rows", "db", schema.name, pk), pk


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_wide_table_same_mirror(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    live: dict[Any, dict[str, Any]] = {}

    def new_key(r: random.Random) -> int:
        return r.choice([r.randrange(1, 60), 2 ** 64 - 1 - r.randrange(5), 2 ** 63 + r.randrange(3)])

    batches = [random_changes(rng, "t", ("id",), wide_row, new_key, live, 150, 100 + b) for b in range(4)]
    rows, _ = run_both(tmp_path, WIDE, batches)
    assert len(rows) == len(live)
    assert {r["id"] for r in rows} == {Decimal(k) for k in live}


@pytest.mark.parametrize("seed", [6, 7])
def test_floats_binary_strings_and_sets_same_mirror(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    live: dict[Any, dict[str, Any]] = {}
    batches = [random_changes(rng, "m", ("id",), mixed_row, lambda r: r.randrange(1, 80), live, 120, 10 + b)
               for b in range(3)]
    rows, _ = run_both(tmp_path, MIXED, batches)
    assert {r["id"] for r in rows} == set(live)


@pytest.mark.parametrize("seed", [4, 5])
def test_composite_key_with_moves(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    live: dict[Any, dict[str, Any]] = {}

    def new_key(r: random.Random) -> tuple[str, int]:
        return (r.choice(["a", "A", "é", "z z"]), r.randrange(-3, 4))

    batches = [random_changes(rng, "p", ("a", "n"), composite_row, new_key, live, 80, 10 + b) for b in range(4)]
    rows, _ = run_both(tmp_path, COMPOSITE, batches)
    assert {(r["a"], r["n"]) for r in rows} == set(live)


def test_same_key_in_one_batch(tmp_path: Path) -> None:
    def ch(op: str, before: Any, after: Any, i: int) -> RowChange:
        return RowChange(op, "db", "p", before, after, ("a", "n"), "binlog.000001", 4, i, None, 0)

    def img(a: str, n: int, v: str) -> dict[str, Any]:
        return {"a": a, "n": n, "v": Decimal(v), "w": None}

    batch = [
        ch("insert", None, img("x", 1, "1.00"), 0),
        ch("update", img("x", 1, "1.00"), img("x", 1, "2.00"), 1),
        ch("delete", img("x", 1, "2.00"), None, 2),
        ch("insert", None, img("x", 1, "3.00"), 3),  # deleted and inserted again: the insert wins
        ch("insert", None, img("y", 2, "-4.50"), 4),
        ch("update", img("y", 2, "-4.50"), img("y", 3, "5.00"), 5),  # moves y/2 to y/3
        ch("update", img("y", 3, "5.00"), img("y", 2, "6.00"), 6),  # and back
        ch("insert", None, img("m", 0, "0.00"), 7),
    ]
    rows, _ = run_both(tmp_path, COMPOSITE, [batch[:1], batch[1:]])
    assert [(r["a"], r["n"], r["v"]) for r in rows] == [
        ("m", 0, Decimal("0.00")), ("x", 1, Decimal("3.00")), ("y", 2, Decimal("6.00"))
    ]


def _one(sql: str, changes: list[RowChange]) -> Any:
    schema = schema_of(sql)
    return merge_source(mirror_columns_for_schema(schema, "mysql"), tuple(schema.primary_key), arrow_rows(changes))


def test_declines_what_only_the_per_row_path_does_exactly() -> None:
    def ins(image: dict[str, Any], table: str = "p") -> RowChange:
        return RowChange("insert", "db", table, None, image, ("a", "n"), "binlog.000001", 4, 0, None, 0)

    full = {"a": "x", "n": 1, "v": Decimal("1.00"), "w": None}
    assert _one(COMPOSITE, [ins(full)]) is not None
    assert _one(COMPOSITE, [ins({"a": "x", "n": 1, "v": Decimal("1.00")})]) is None  # minimal image
    assert _one(COMPOSITE, [ins({**full, "gone": 5})]) is None  # a column dropped since
    assert _one(COMPOSITE, [ins({**full, "n": None})]) is None  # NULL key: the per-row path raises
    assert _one(COMPOSITE, [ins({**full, "w": "2021-02-29 00:00:00.0"})]) is None  # no such day: Arrow fails
    assert _one(COMPOSITE, [ins({**full, "w": "2021-02-01T00:00:00.0"})]) is None  # not DATETIME text
    assert _one(COMPOSITE, [ins({**full, "v": Decimal("1000.00")})]) is None  # does not fit DECIMAL(5,2)
    assert _one(COMPOSITE, [ins({**full, "n": "1"})]) is None  # a string for an INT
    assert _one("CREATE TABLE s (a VARCHAR(20) NOT NULL, n INT NOT NULL, f JSON, PRIMARY KEY (a, n))",
                [ins({"a": "x", "n": 1, "f": {"k": 1}}, "s")]) is None  # a JSON document: typed images only
    assert _one("CREATE TABLE s (a VARCHAR(20) NOT NULL, n DOUBLE NOT NULL, PRIMARY KEY (a, n))",
                [ins({"a": "x", "n": 1.5}, "s")]) is None  # a DOUBLE key: the per-row path folds it
    diff = RowChange("update", "db", "p", full, full, ("a", "n"), "binlog.000001", 4, 0, None, 0,
                     {"w": ()})  # type: ignore[arg-type]
    assert _one(COMPOSITE, [diff]) is None



def test_key_bounds_of_a_merge_source() -> None:
    from sluice.lake.mirror.merge_source import key_bounds

    ints = pa.table({"id": pa.array([7, -3, 12], pa.int64()), "v": ["a", "b", "c"]})
    assert key_bounds(ints, "id") == " AND target.`id` >= -3 AND target.`id` <= 12"
    texts = pa.table({"k`q": pa.array(["jed", "it's", "émile"], pa.string())})
    assert key_bounds(texts, "k`q") == " AND target.`k``q` >= 'it''s' AND target.`k``q` <= 'émile'"
    assert key_bounds(pa.table({"d": pa.array([Decimal(1)], pa.decimal128(20, 0))}), "d") == ""  # no exact literal
    assert key_bounds(ints.slice(0, 0), "id") == ""
    assert key_bounds(pa.table({"id": pa.array([None], pa.int64())}), "id") == ""


def test_a_source_of_deletes_only_is_built_column_wise() -> None:
    """A part (or range) of nothing but deletes reads no after image: its temporal columns' check of
    no value at all passes, and the source deletes the keys."""
    gone = {"a": "x", "n": 1, "v": Decimal("1.00"), "w": "2020-01-01 00:00:02.5"}
    source = _one(COMPOSITE, [RowChange("delete", "db", "p", gone, None, ("a", "n"), "binlog.000001", 4, 0, None, 0)])
    assert source is not None
    assert [(r["a"], r["n"], r["_sluice_delete"]) for r in source.to_pylist()] == [("x", 1, True)]
