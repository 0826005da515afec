"""The change DataFrame's Arrow batches from the compiled core's ``ChangeRows`` and from records.

``arrow_batches`` over a capture in ``columns`` mode (rows events straight into Arrow buffers by the
compiled core) must give the same table as over the records of the Python path
(``record_batch``): every golden file read twice (the second pass through the event runs), with
DDL records, only some operations or tables, and with rows events cut at every byte.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sluice.binlog import rowplan
from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, CaptureOutput, ChangeCapture
from sluice.errors import SluiceError
from sluice.io.binlog_file import iter_raw_spans
from sluice.spark.source.change_frame import arrow_batches, columns_batch
from tests.unit.binlog.test_event_run import cut_variants

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(rowplan._compiled_core is None, reason="the compiled core is not built"),
]

GOLDEN = sorted((Path(__file__).resolve().parents[2] / "data").glob("*.binlog"))


def _table(files: list[bytes], *, compiled: bool, typed: bool = False, **config: Any) -> Any:
    previous = rowplan.use_compiled(compiled)
    output = (CaptureOutput.TYPED_COLUMNS if typed else CaptureOutput.COLUMNS) if compiled else CaptureOutput.RECORDS
    try:
        capture = ChangeCapture(CaptureConfig(ddl=True, output=output, **config), Checkpoint("f0", 4))

        def transactions() -> Any:
            for i, data in enumerate(files):
                yield from capture.feed_file(f"f{i}", f"f{i}", iter_raw_spans(io.BytesIO(data)))

        batches = list(arrow_batches(transactions()))
        return pa.Table.from_batches(batches).combine_chunks().to_pylist() if batches else []
    except SluiceError as exc:
        return type(exc).__name__, str(exc)
    finally:
        rowplan.use_compiled(previous)


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_files_make_the_same_change_batches(path: Path) -> None:
    data = path.read_bytes()
    twin = _table([data, data], compiled=False)
    assert twin and _table([data, data], compiled=True) == twin
    assert _table([data, data], compiled=True, typed=True) == twin  # images from the value tuples
    for ops in ({"insert"}, {"update", "delete"}):
        assert _table([data, data], compiled=True, ops=frozenset(ops)) == _table(
            [data, data], compiled=False, ops=frozenset(ops))


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_rows_events_cut_at_every_byte_make_the_same_batches_or_errors(path: Path) -> None:
    for index, keep, files in cut_variants(path.read_bytes(), 9):
        twin = _table(files, compiled=False)
        assert _table(files, compiled=True) == twin, (index, keep)
        assert _table(files, compiled=True, typed=True) == twin, (index, keep)


def test_tables_not_captured_are_left_out_alike() -> None:
    path = next(p for p in GOLDEN if p.stem == "mysql-multitable")
    data = path.read_bytes()

    def keep(_db: str, table: str) -> bool:
        return table != "orders"

    twin = _table([data, data, data], compiled=False, table_filter=keep)
    assert twin and all(row["table"] != "orders" for row in twin if row["op"] != "ddl")
    assert _table([data, data, data], compiled=True, table_filter=keep) == twin


def test_more_text_than_an_arrow_column_takes_is_refused_whole() -> None:
    from sluice.binlog.absent import ABSENT
    from sluice.cdc.jsonl import value_bytes
    from sluice.errors import UnsupportedError

    rows = rowplan._compiled_core.ChangeRows()
    rows.max_text = 60  # stands for the 2 GiB of int32 offsets
    meta = rows.meta_id(("insert", "db", "t", ("id",), "f", None))
    keys = (b'"id":', b'"note":')
    assert rows.add_rows(0, keys, [(1, "a" * 10)], meta, 4, 0, ABSENT, value_bytes) == 1
    with pytest.raises(UnsupportedError, match="2 GiB"):
        rows.add_rows(0, keys, [(2, "b" * 10), (3, "c" * 40)], meta, 5, 0, ABSENT, value_bytes)
    assert rows.length == 1  # the event that did not fit left nothing behind
    whole = rowplan._compiled_core.ChangeRows()
    whole.extend(rows, "g:1", 7)
    (row,) = columns_batch(whole).to_pylist()
    assert (row["after"], row["before"], row["pos"], row["gtid"]) == ('{"id":1,"note":"aaaaaaaaaa"}', None, 4, "g:1")
    batch = rowplan._compiled_core.ChangeRows()
    with pytest.raises(UnsupportedError):
        batch.max_text = 10
        batch.extend(rows, "g", 0)


def test_buffers_are_handed_over_and_outlive_the_rows() -> None:
    """``buffers()`` gives Arrow the core's memory with no copy: the blocks keep their bytes after
    the rows (and their typed images) are gone, and the rows start again empty."""
    import gc

    from sluice.binlog.absent import ABSENT
    from sluice.cdc.jsonl import value_bytes

    core = rowplan._compiled_core
    rows = core.ChangeRows()
    rows.keep_typed = True
    meta = rows.meta_id(("insert", "db", "t", ("id",), "f", None))
    keys = (b'"id":', b'"note":')
    rows.add_rows(0, keys, [(1, "a"), (2, None)], meta, 4, 0, ABSENT, value_bytes)
    whole = core.ChangeRows()
    whole.extend(rows, "g:1", 7)
    typed = whole.typed[("db", "t")]
    batch = columns_batch(whole)
    ops, after, _ = typed.buffers()
    assert (whole.length, typed.length) == (0, 0)
    del rows, whole, typed
    gc.collect()
    assert [r["after"] for r in batch.to_pylist()] == ['{"id":1,"note":"a"}', '{"id":2,"note":null}']
    assert bytes(ops) == b"\0\0"
    assert [(kind, length, bytes(valid)) for kind, length, valid, _, _ in after] == [(1, 2, b"\1\1"), (2, 2, b"\1\0")]
    assert bytes(after[1][4]) == b"a" and memoryview(after[0][4]).cast("q").tolist() == [1, 2]

    gathered = core.ChangeRows()
    for pos in (9, 10):  # handed over, then used again
        one = core.ChangeRows()
        one.add_rows(0, keys, [(pos, "c")], one.meta_id(("insert", "db", "t", ("id",), "f", None)), pos, 0, ABSENT,
                     value_bytes)
        gathered.extend(one, "g:2", 8)
        taken = columns_batch(gathered)
        assert [(r["pos"], r["after"]) for r in taken.to_pylist()] == [(pos, f'{{"id":{pos},"note":"c"}}')]


# A compressed transaction's rows are made as records in Python, without typed images: the tables
# of such a transaction come short and take the JSON path, by design.
UNCOMPRESSED = [p for p in GOLDEN if "compressed" not in p.stem]


@pytest.mark.parametrize("path", UNCOMPRESSED, ids=[p.stem for p in UNCOMPRESSED])
def test_typed_images_hold_every_change_of_their_table(path: Path) -> None:
    """The staging tasks' typed images hold every row change of a table, whether the event runs or
    the parser decoded its rows event (the first of each shape is the parser's): a table short of
    some would have its JSON images parsed back in every batch."""
    data = path.read_bytes()
    capture = ChangeCapture(CaptureConfig(ddl=True, output=CaptureOutput.TYPED_COLUMNS), Checkpoint("f0", 4))

    def transactions() -> Any:
        for i in range(2):
            yield from capture.feed_file(f"f{i}", f"f{i}", iter_raw_spans(io.BytesIO(data)))

    typed: list[dict[Any, Any]] = []
    table = pa.Table.from_batches(list(arrow_batches(transactions(), typed)))
    changes: dict[tuple[str, str], int] = {}
    for row in table.select(["op", "db", "table"]).to_pylist():
        if row["op"] != "ddl":
            changes[(row["db"], row["table"])] = changes.get((row["db"], row["table"]), 0) + 1
    kept = {key: [t[key] for t in typed if key in t] for key in changes}
    assert set(kept) == set(changes)
    for key, pieces in kept.items():
        if not any(p.failed for p in pieces):
            assert sum(p.length for p in pieces) == changes[key], key


def test_the_cores_buffers_and_the_metas_name_every_change_column_once() -> None:
    """``columns_batch`` finds each change column by name: in ``ChangeRows.buffers()`` or in a
    ``Meta`` (``META_FIELDS``); between them they name every column of the change schema once."""
    from sluice.cdc.change_rows import META_FIELDS
    from sluice.lake.changelog.schema import CHANGE_ARROW_SCHEMA

    handed = set(rowplan._compiled_core.ChangeRows().buffers()) - {"meta"}  # meta: the index into metas
    assert handed.isdisjoint(META_FIELDS)
    assert sorted(handed | set(META_FIELDS)) == sorted(CHANGE_ARROW_SCHEMA.names)
