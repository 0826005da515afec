"""``sluice dump --format parquet`` on the captured binlog files: every change once, in order, typed.

The JSON lines of the same files (the golden ``.jsonl`` files) are the reference for which changes
there are and where; the per-row conversion (``exact_only``) is the reference for the column-wise
reads; the Python twin must write what the compiled core writes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.cli import main as sluice_main
from sluice.lake.mirror import typed_changes
from tests.conftest import core_or_twin

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"
GOLDEN = sorted(p for p in DATA.glob("*.binlog") if p.with_suffix(".jsonl").exists())


@pytest.fixture(params=[True, False], ids=["core", "twin"])
def core(request: pytest.FixtureRequest) -> Iterator[bool]:
    yield from core_or_twin(request.param)


def _dump(path: Path, out: Path, *extra: str) -> dict[str, list[pa.Table]]:
    assert sluice_main(["dump", "--format", "parquet", "--out", str(out), *extra, str(path)]) == 0
    tables: dict[str, list[pa.Table]] = {}
    for file in sorted((out / "tables").glob("*/*/part-*.parquet")):
        table = pq.read_table(file)
        meta = table.schema.metadata
        tables.setdefault(f"{meta[b'sluice.db'].decode()}.{meta[b'sluice.table'].decode()}", []).append(table)
    assert not list(out.rglob("*.inprogress"))
    return tables


def _json_value_matches(value: object, typed: object, arrow_type: pa.DataType) -> bool:
    """What can be compared without sluice's converters: integers, text, binary, SET members."""
    if pa.types.is_integer(arrow_type) or (pa.types.is_string(arrow_type) and isinstance(value, str)):
        return value == typed
    if pa.types.is_binary(arrow_type):
        return isinstance(value, str) and base64.b64decode(value) == typed
    if pa.types.is_list(arrow_type) and pa.types.is_string(arrow_type.value_type):
        return value == typed
    return True  # DECIMAL, temporal, JSON, GEOMETRY: checked against the per-row path below


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_every_change_is_written_once_in_order_with_its_values(path: Path, tmp_path: Path, core: bool) -> None:
    tables = _dump(path, tmp_path / "out")
    expected: dict[str, list[dict]] = {}
    for line in path.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["op"] != "ddl":
            expected.setdefault(f"{record['db']}.{record['table']}", []).append(record)
    assert set(tables) == set(expected)
    for name, parts in tables.items():
        rows = [row for part in parts for row in part.to_pylist()]
        records = expected[name]
        assert [(r["op"], r["file"], r["pos"], r["row"], r["gtid"]) for r in rows] == \
            [(r["op"], r["file"], r["pos"], r["row"], r["gtid"]) for r in records]
        types = {f.name: f.type for part in parts for f in part.schema.field("after").type}
        for row, record in zip(rows, records, strict=True):
            for side in ("before", "after"):
                image, typed = record[side], row[side]
                assert (image is None) == (typed is None), (name, side, record)
                if image is None:
                    continue
                absent = {a.split(".", 1)[1] for a in row["absent"] or () if a.startswith(side + ".")}
                assert set(typed) - absent == set(image), (name, side, record)  # minimal images: the rest absent
                for column, value in image.items():
                    assert typed[column] is None if value is None else _json_value_matches(
                        value, typed[column], types[column]), (name, column, value, typed[column])
            assert (json.loads(row["json_diffs"]) if row["json_diffs"] else None) == record.get("json_diffs")


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_column_wise_reads_equal_the_per_row_conversion(path: Path, tmp_path: Path, core: bool,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _dump(path, tmp_path / "fast")
    exact_change_table = typed_changes.change_table
    monkeypatch.setattr("sluice.commands.dump_parquet.change_table",
                        lambda *a, **k: exact_change_table(*a, **{**k, "exact_only": True}))
    exact = _dump(path, tmp_path / "exact")
    assert fast.keys() == exact.keys()
    for name in fast:
        assert [t.schema for t in fast[name]] == [t.schema for t in exact[name]]
        assert [t.to_pylist() for t in fast[name]] == [t.to_pylist() for t in exact[name]], name


def test_the_twin_writes_what_the_core_writes(tmp_path: Path) -> None:
    written = {}
    for enabled in (True, False):
        for _ in core_or_twin(enabled):
            written[enabled] = {p.stem: _dump(p, tmp_path / f"{p.stem}-{enabled}", "--ddl") for p in GOLDEN}
    for stem, tables in written[True].items():
        twin = written[False][stem]
        assert tables.keys() == twin.keys()
        for name in tables:
            assert [t.to_pylist() for t in tables[name]] == [t.to_pylist() for t in twin[name]], (stem, name)
        ddl = [tmp_path / f"{stem}-{enabled}" / "ddl.parquet" for enabled in (True, False)]
        assert ddl[0].exists() == ddl[1].exists()
        if ddl[0].exists():
            assert pq.read_table(ddl[0]).to_pylist() == pq.read_table(ddl[1]).to_pylist()


def test_the_typed_images_are_read_where_they_can_be(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is taken (else the test above compares the per-row path with itself)."""
    taken = []
    columnwise = typed_changes._columnwise
    monkeypatch.setattr(typed_changes, "_columnwise", lambda *a: taken.append(columnwise(*a) is not None) or None)
    for _ in core_or_twin(True):
        _dump(DATA / "mysql-multitable.binlog", tmp_path / "out")
    assert any(taken)


def test_a_column_change_starts_the_next_file(tmp_path: Path) -> None:
    tables = _dump(DATA / "mariadb-versioned.binlog", tmp_path / "out", "--ddl")
    columns = [[c["name"] for c in json.loads(t.schema.metadata[b"sluice.columns"])] for t in tables["golden.vt"]]
    assert len(columns) >= 2 and columns[0] != columns[1]
    assert "extra" in columns[1] and "extra" not in columns[0]
    ddl = pq.read_table(tmp_path / "out" / "ddl.parquet").to_pylist()
    assert any("extra" in d["sql"] for d in ddl)


def test_columns_read_by_position_hold_json_text_and_say_so(tmp_path: Path) -> None:
    tables = _dump(DATA / "mysql-matrix.binlog", tmp_path / "out", "--positional")
    (table,) = tables["golden.matrix"]
    columns = json.loads(table.schema.metadata[b"sluice.columns"])
    unsure = [c["name"] for c in columns if c.get("json_text")]
    assert unsure  # the text columns: their bytes may not decode
    records = [json.loads(line) for line in (DATA / "mysql-matrix.jsonl").read_text().splitlines()]
    by_position = {f"@{i + 1}": name for i, name in enumerate(records[0]["after"])}
    for row, record in zip(table.to_pylist(), records, strict=True):
        for side in ("before", "after"):
            if record[side] is None:
                assert row[side] is None
                continue
            for name in unsure:
                value = record[side][by_position[name]]
                assert row[side][name] == (None if value is None else json.dumps(
                    value, ensure_ascii=False, separators=(",", ":")))


def test_the_output_folder_must_be_new_or_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kept.txt").write_text("mine")
    assert sluice_main(["dump", "--format", "parquet", "--out", str(tmp_path), str(GOLDEN[0])]) == 1
    assert "not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "kept.txt").read_text() == "mine"
    assert sluice_main(["dump", "--format", "parquet", str(GOLDEN[0])]) == 1
    assert "needs --out DIR" in capsys.readouterr().err
    assert sluice_main(["dump", "--out", str(tmp_path / "x"), str(GOLDEN[0])]) == 1
    assert "add --format parquet" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_duckdb_and_polars_read_the_files_as_pyarrow_does(tmp_path: Path) -> None:
    """The readers the README names get the same typed values (structs, DECIMAL, UTC instants, lists)."""
    import duckdb
    import polars as pl

    _dump(DATA / "mysql-matrix.binlog", tmp_path / "out")
    files = str(tmp_path / "out" / "tables" / "*" / "*" / "*.parquet")
    expected = pq.read_table(next((tmp_path / "out" / "tables").glob("*/*/*.parquet"))).to_pylist()
    got = duckdb.sql(f"SELECT op, after.id, after.d10, after.ts, after.st, after.bl, row "
                     f"FROM read_parquet('{files}', union_by_name=true) ORDER BY pos, row").fetchall()
    assert len(got) == len(expected)
    for row, e in zip(got, expected, strict=True):
        after = e["after"] or {}
        assert row == (e["op"], after.get("id"), after.get("d10"), after.get("ts"), after.get("st"),
                       after.get("bl"), e["row"])
    frame = pl.read_parquet(files)
    assert frame.select(pl.col("after").struct.field("d65")).to_series().to_list() == [
        (e["after"] or {}).get("d65") for e in expected]


def test_with_few_files_open_a_table_goes_on_in_its_next_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    many = _dump(DATA / "mysql-multitable.binlog", tmp_path / "many")
    monkeypatch.setattr("sluice.commands.dump_parquet._MAX_OPEN", 1)
    monkeypatch.setattr("sluice.commands.dump_parquet._FLUSH_ROWS", 1)
    few = _dump(DATA / "mysql-multitable.binlog", tmp_path / "few")
    assert sum(len(parts) for parts in few.values()) > sum(len(parts) for parts in many.values())
    for name, parts in many.items():
        assert [r for p in few[name] for r in p.to_pylist()] == [r for p in parts for r in p.to_pylist()]


def test_the_progress_line_counts_the_bytes_read_and_clears_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from sluice.commands import dump as dump_command
    from sluice.io.binlog_file import iter_raw_spans

    path = DATA / "mysql-multitable.binlog"
    clock = iter(range(0, 10_000, 2))  # two seconds between looks
    monkeypatch.setattr(dump_command.time, "monotonic", lambda: next(clock))
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    progress = dump_command.Progress([str(path), str(path)])
    for _ in range(2):
        list(progress.follow(iter_raw_spans(str(path))))
    progress.end()
    assert progress.done == 2 * path.stat().st_size
    shown = err.getvalue()
    assert shown.startswith("\rsluice dump: ") and "(100%)" in shown and shown.endswith("\r\033[K")
