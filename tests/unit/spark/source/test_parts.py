"""A task's range written in parts (``sluice.spark.source.parts``), transactions handed out before
their commit.

Every golden binlog file is staged twice as one range: once whole (no transaction handed out, one
part), and once with the part budget set to a byte, so that the capture hands out every open
transaction after each event run (``CaptureConfig.hold_columns``) and every Arrow batch is a part of
its own. The change-log rows the parts hold, read back, are the same rows, commit times included,
and a held part is typed by the catalog as the task had it when it handed the part out; each table's
MERGE sources, folded over the parts, are the same source; every staged file a descriptor names
exists and no two descriptors name one file. A transaction cut off by the end of the input is not in
any descriptor, and its temporary file is closed.
"""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sluice.binlog import rowplan
from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, CaptureOutput, ChangeCapture
from sluice.io.binlog_file import iter_raw_spans
from sluice.lake.layout import open_lake
from sluice.lake.mirror.merge_source import fold_sources
from sluice.spark.source.change_frame import arrow_batches
from sluice.spark.source.parts import PartWriter
from sluice.spark.source.staging import stage_range

pytestmark = pytest.mark.unit

GOLDEN = sorted((Path(__file__).resolve().parents[3] / "data").glob("*.binlog"))
ORDER = [("file", "ascending"), ("pos", "ascending"), ("row", "ascending")]


def _stage(data: bytes, lake: Path, part_bytes: int, *,
           cut: int | None = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Stage the file's transactions as one range: the descriptors, and how many parts the capture
    handed out (``held``) and how many of them committed (``committed``)."""
    capture: ChangeCapture | None = None
    store = open_lake(str(lake))
    calls = {"held": 0, "committed": 0, "catalog off the task's thread": 0}

    def catalog() -> Any:
        # A held part is staged on the writer's thread, typed by the catalog as the task read it then.
        calls["catalog off the task's thread"] += threading.current_thread() is not threading.main_thread()
        return capture.tracker.catalog  # type: ignore[union-attr]

    writer = PartWriter(store, 7, Checkpoint("f", 4), catalog)

    def hold(rows: Any, gtid: str | None) -> Any:
        calls["held"] += 1
        return writer.hold(rows, gtid)

    def committed(part: Any, commit_us: int) -> Any:
        calls["committed"] += 1
        return PartWriter.committed(writer, part, commit_us)

    writer.committed = committed  # type: ignore[method-assign]
    config = CaptureConfig(output=CaptureOutput.TYPED_COLUMNS, ddl=True)
    if part_bytes < 1 << 20:
        config = CaptureConfig(output=CaptureOutput.TYPED_COLUMNS, ddl=True, hold_columns=hold, part_bytes=part_bytes)
    capture = ChangeCapture(config, Checkpoint("f", 4))
    spans = iter_raw_spans(io.BytesIO(data if cut is None else data[:cut]))
    typed: list[dict[Any, Any]] = []
    out: list[dict[str, Any]] = []
    for batch in stage_range(arrow_batches(capture.feed_file("f", "f", spans), typed), writer,
                             part_bytes=part_bytes, typed=typed, end=Checkpoint("f", len(data))):
        out.extend(batch.to_pylist())
    return out, calls


def _changes(lake: Path, descriptors: list[dict[str, Any]]) -> pa.Table:
    files = [d["path"] for d in descriptors if d["kind"] == "changes"]
    if not files:
        return pa.table({})
    tables = [pq.read_table(lake / "_sluice" / "changes" / f) for f in files]
    return pa.concat_tables(tables).sort_by(ORDER)


def _sources(descriptors: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    """Each table's op counts, and its staged sources folded in binlog order (None when a part has
    none, the per-row path's case; its layouts when the parts were typed in several, as a file
    that changes a table's schema gives)."""
    by_table: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for d in descriptors:
        if d["kind"] == "table":
            by_table.setdefault((d["db"], d["table"]), []).append(d)
    out: dict[tuple[str, str], Any] = {}
    for key, parts in by_table.items():
        parts.sort(key=lambda d: (d["first_file"], d["first_pos"], d["first_row"]))
        counts = tuple(sum(d[op] for d in parts) for op in ("inserts", "updates", "deletes"))
        layouts = {d["layout"] for d in parts}
        if not all(d["path"] for d in parts):
            out[key] = (counts, None)
        elif len(layouts) > 1:
            out[key] = (counts, layouts)
        else:
            sources = [pa.ipc.open_file(pa.memory_map(d["path"])).read_all() for d in parts]
            out[key] = (counts, fold_sources(sources, json.loads(layouts.pop())[1]).to_pylist())
    return out


def _same_sources(whole: list[dict[str, Any]], parted: list[dict[str, Any]]) -> None:
    """The tables' sources are the same, but for a table whose schema the file changes: the whole
    range is typed by the schema at its end, a part by the one in force when it was written (a
    batch of the pipeline never spans a schema change of a captured table)."""
    a, b = _sources(whole), _sources(parted)
    assert a.keys() == b.keys()
    assert all(a[k][0] == b[k][0] for k in a)
    one_schema = [k for k in a if not isinstance(b[k][1], set)]
    assert one_schema and {k: b[k] for k in one_schema} == {k: a[k] for k in one_schema}


XID = 16


def _events(data: bytes) -> list[tuple[int, int]]:
    """Each event's offset and type code."""
    out, pos = [], 4
    while pos < len(data):
        out.append((pos, data[pos + 4]))
        pos += int.from_bytes(data[pos + 9:pos + 13], "little")
    return out


needs_core = pytest.mark.skipif(rowplan._compiled_core is None,
                                reason="the compiled core is not built: only it hands out an open transaction's rows")


@needs_core
@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_parts_hold_what_a_whole_range_does(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    whole, _ = _stage(data, tmp_path / "whole", 1 << 30)
    parted, calls = _stage(data, tmp_path / "parted", 1)
    whole_files = [d for d in whole if d["kind"] == "changes"]
    parted_files = [d for d in parted if d["kind"] == "changes"]
    assert len(whole_files) == 1
    # A MySQL TRANSACTION_PAYLOAD is one event: its transaction is not cut, and here it is all.
    payload = path.stem == "mysql-compressed"
    assert calls["held"] == calls["committed"] and (calls["held"] > 0 or payload)
    assert calls["catalog off the task's thread"] == 0
    assert len(parted_files) > 1 or payload
    a, b = _changes(tmp_path / "whole", whole), _changes(tmp_path / "parted", parted)
    assert b.num_rows == a.num_rows > 0
    assert b.to_pylist() == a.to_pylist()
    _same_sources(whole, parted)
    assert [d for d in parted if d["kind"] == "ddl"] == [d for d in whole if d["kind"] == "ddl"]
    named = [d["path"] for d in parted if d["kind"] == "table" and d["path"]]
    assert len(set(named)) == len(named) and all(Path(p).exists() for p in named)
    # Only the range's last change-log file says where the range ends and how it was read.
    ends = [d for d in parted_files if d["range_end"]]
    assert len(ends) == 1 and ends[0] == max(parted_files, key=lambda d: (d["last_pos"], d["first_pos"]))


@needs_core
def test_a_cut_off_transaction_is_in_no_part(tmp_path: Path) -> None:
    """The input ends inside the last transaction: parts of it were handed out as it was read, but
    none is committed or named by a descriptor, and the rest is what a range that holds nothing gives."""
    data = (GOLDEN[0].parent / "mariadb-versioned.binlog").read_bytes()
    whole, _ = _stage(data, tmp_path / "whole", 1 << 30)
    last = next(d for d in whole if d["kind"] == "changes")["last_pos"]
    cut = min(pos for pos, kind in _events(data) if pos > last and kind == XID)  # the last one loses its XID
    expected, _ = _stage(data, tmp_path / "expected", 1 << 30, cut=cut)
    parted, calls = _stage(data, tmp_path / "parted", 1, cut=cut)
    a, b = _changes(tmp_path / "expected", expected), _changes(tmp_path / "parted", parted)
    assert b.to_pylist() == a.to_pylist()
    assert a.num_rows < _changes(tmp_path / "whole", whole).num_rows
    _same_sources(expected, parted)
    assert calls["held"] > calls["committed"]


@needs_core
def test_a_change_log_file_that_cannot_be_written_fails_the_range(tmp_path: Path) -> None:
    """The change-log files are written on a thread of the writer's own while the range is read on:
    a write that fails there fails the range, with the error it met, and leaves no thread behind."""
    import threading

    data = (GOLDEN[0].parent / "mariadb-versioned.binlog").read_bytes()
    lake = tmp_path / "lake"
    (lake / "_sluice").mkdir(parents=True)
    (lake / "_sluice" / "changes").write_text("a file where the change log's folder belongs")
    with pytest.raises(OSError):
        _stage(data, lake, 1)
    assert not [t for t in threading.enumerate() if t.name.startswith("sluice-changes")]
