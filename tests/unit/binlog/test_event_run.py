"""The compiled event run (``_rowcore.EventRun``) and the event parser, its twin, capture alike.

A run takes TABLE_MAP and rows events only once it has seen their table map and body shape, so
each golden file is read twice by one capture (as two files): the second pass goes through the
run. Committed transactions, their checkpoints, records and row counts must be the same as the
Python parser's, in blocks of any size and event by event; a rows event cut at every byte (with a
valid CRC) or failing its checksum must give the same typed error with the same message.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sluice.binlog import rowplan
from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, CaptureOutput, ChangeCapture
from sluice.cdc.jsonl import record_line
from sluice.errors import SluiceError
from sluice.io import binlog_file
from sluice.io.binlog_file import BINLOG_MAGIC, iter_raw_spans

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(rowplan._compiled_core is None, reason="the compiled core is not built"),
]

GOLDEN = sorted((Path(__file__).resolve().parents[2] / "data").glob("*.binlog"))
ROWS_TYPES = {23, 24, 25, 30, 31, 32}


def _events(data: bytes) -> list[bytes]:
    out, pos = [], 4
    while pos < len(data):
        size = int.from_bytes(data[pos + 9 : pos + 13], "little")
        out.append(data[pos : pos + size])
        pos += size
    return out


def _file(events: list[bytes]) -> bytes:
    return BINLOG_MAGIC + b"".join(events)


def _recut(event: bytes, keep: int) -> bytes:
    """The event with its body cut to ``keep`` bytes, its size and CRC32 made valid again."""
    body = event[19:-4][:keep]
    head = bytearray(event[:19])
    head[9:13] = (19 + len(body) + 4).to_bytes(4, "little")
    data = bytes(head) + body
    return data + zlib.crc32(data).to_bytes(4, "little")


def _capture(files: list[bytes], *, compiled: bool, output: CaptureOutput = CaptureOutput.RECORDS,
             by_event: bool = False, keep: Any = None, ops: frozenset[str] | None = None) -> Any:
    """What one capture makes of ``files`` in order: per transaction its checkpoints, row count and
    JSON lines, or the error's type and message."""
    previous = rowplan.use_compiled(compiled)
    try:
        config = CaptureConfig(output=output, ddl=True, table_filter=keep, ops=ops)
        capture = ChangeCapture(config, Checkpoint("f0", 4))
        out: list[Any] = []
        for i, data in enumerate(files):
            name = f"f{i}"
            if by_event:
                capture.begin_file(name, name)
                done = []
                for offset, event in zip(_offsets(data), _events(data), strict=True):
                    tx = capture.feed(name, offset, offset + len(event), event)
                    if tx is not None:
                        done.append(tx)
                capture.cut_off()
            else:
                done = list(capture.feed_file(name, name, iter_raw_spans(io.BytesIO(data))))
            for tx in done:
                text = b"".join(tx.lines or ()).decode() + "".join(f"{record_line(r)}\n" for r in tx.records)
                out.append((str(tx.start), str(tx.end), tx.row_count, text))
        taken = capture._run.taken if capture._run is not None else 0
        out.append((capture.parser.skipped_rows_events, capture.parser.skipped_table_maps))
        return out, capture.events_read, taken
    except SluiceError as exc:
        return type(exc).__name__, str(exc)
    finally:
        rowplan.use_compiled(previous)


def _offsets(data: bytes) -> list[int]:
    out, pos = [], 4
    while pos < len(data):
        out.append(pos)
        pos += int.from_bytes(data[pos + 9 : pos + 13], "little")
    return out


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
@pytest.mark.parametrize("output", [CaptureOutput.RECORDS, CaptureOutput.DECODED_COUNTS, CaptureOutput.LINES,
                                    CaptureOutput.COUNTS], ids=lambda output: output.value)
def test_golden_files_capture_alike(path: Path, output: CaptureOutput, monkeypatch: pytest.MonkeyPatch) -> None:
    data = path.read_bytes()
    counting = output in (CaptureOutput.COUNTS, CaptureOutput.DECODED_COUNTS)
    twin, twin_events, _ = _capture(
        [data, data], compiled=False, output=CaptureOutput.DECODED_COUNTS if counting else CaptureOutput.RECORDS)
    assert _capture([data, data], compiled=False, output=output)[:2] == (twin, twin_events)
    compiled, events, taken = _capture([data, data], compiled=True, output=output)
    assert compiled == twin and events == twin_events
    if any(e[4] in ROWS_TYPES for e in _events(data)):
        assert taken > 0, "the second pass did not go through the compiled run"
    by_event, _, taken_one = _capture([data, data], compiled=True, by_event=True, output=output)
    assert by_event == twin
    assert taken_one == taken
    monkeypatch.setattr(binlog_file, "BLOCK_SIZE", 97)  # runs cut by block ends everywhere
    assert _capture([data, data], compiled=True, output=output)[0] == twin


def _result(outcome: Any) -> Any:
    """The transactions and events read, or the error; not how many events the run took."""
    return outcome[:2] if len(outcome) == 3 else outcome


def _rows_events(data: bytes) -> list[int]:
    return [i for i, e in enumerate(_events(data)) if e[4] in ROWS_TYPES]


def cut_variants(data: bytes, step: int) -> Iterator[tuple[int, int, list[bytes]]]:
    """``(index, keep, files)``: the file read whole, then again with its first two rows events
    each cut to ``keep`` bytes of body (every byte up to 40, then every ``step``-th), CRC valid."""
    events = _events(data)
    for index in _rows_events(data)[:2]:
        body = len(events[index]) - 23
        for keep in [*range(min(body, 40)), *range(40, body, step)]:
            cut = list(events)
            cut[index] = _recut(events[index], keep)
            yield index, keep, [data, _file(cut)]


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_rows_events_cut_at_every_byte_fail_alike(path: Path) -> None:
    for index, keep, files in cut_variants(path.read_bytes(), 5):
        twin = _result(_capture(files, compiled=False))
        assert _result(_capture(files, compiled=True)) == twin, (index, keep)
        assert _result(_capture(files, compiled=True, output=CaptureOutput.LINES)) == twin, (index, keep)


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_a_checksum_mismatch_in_a_run_fails_alike(path: Path) -> None:
    data = path.read_bytes()
    events = _events(data)
    for index in _rows_events(data)[:3]:
        bad = bytearray(events[index])
        bad[-6] ^= 0x40
        broken = list(events)
        broken[index] = bytes(bad)
        files = [data, _file(broken)]
        twin = _capture(files, compiled=False)
        assert twin[0] == "ChecksumMismatchError"
        assert _result(_capture(files, compiled=True)) == twin
        assert _result(_capture(files, compiled=True, output=CaptureOutput.LINES)) == twin


@pytest.mark.parametrize("path", [p for p in GOLDEN if "multitable" in p.stem], ids=lambda p: p.stem)
def test_rows_of_tables_not_captured_are_skipped_alike(path: Path) -> None:
    data = path.read_bytes()
    files = [data, data, data]
    names = {line.split('"table":"')[1].split('"')[0] for line in path.with_suffix(".jsonl").read_text().splitlines()}
    assert len(names) > 1
    for left_out in names:
        def keep(db: str, table: str, left_out: str = left_out) -> bool:
            return table != left_out

        twin = _capture(files, compiled=False, keep=keep)
        compiled = _capture(files, compiled=True, keep=keep)
        assert _result(compiled) == _result(twin)
        assert _result(_capture(files, compiled=True, keep=keep, output=CaptureOutput.LINES)) == _result(twin)
        assert twin[0][-1][0] > 0 and compiled[2] > 0


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_only_the_operations_asked_for_alike(path: Path) -> None:
    data = path.read_bytes()
    for ops in ({"insert"}, {"update", "delete"}):
        twin = _capture([data, data], compiled=False, ops=frozenset(ops))
        for output in (CaptureOutput.RECORDS, CaptureOutput.LINES, CaptureOutput.DECODED_COUNTS):
            assert _result(_capture([data, data], compiled=True, ops=frozenset(ops), output=output))[0] == (
                twin[0] if output is not CaptureOutput.DECODED_COUNTS
                else _capture([data, data], compiled=False, ops=frozenset(ops), output=output)[0]
            ), (ops, output)


def test_crc32_is_zlibs() -> None:
    import random

    crc32 = rowplan._compiled_core.crc32
    rng = random.Random(7)
    # below 64 bytes the table loop alone; from 64 on, folded 16-byte blocks (where the CPU has
    # carry-less multiplication) and the table loop for what is left
    for n in [*range(300), 1000, 4099, 65536 + 7, 1 << 20]:
        data = rng.randbytes(n)
        assert crc32(data) == zlib.crc32(data), n


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_a_reader_that_stops_after_a_transaction_leaves_the_capture_there(path: Path) -> None:
    """``feed_block`` reads only as far as it is iterated: after each transaction it yields, the
    capture's boundary (where a resume starts, and the schema it has applied) is that
    transaction's end, not the end of the block."""
    data = path.read_bytes()
    name = path.name
    whole = [c.transaction.end for c in ChangeCapture(CaptureConfig(), Checkpoint(name, 4)).feed_file(
        name, name, iter_raw_spans(io.BytesIO(data)))]
    assert len(whole) >= 2
    capture = ChangeCapture(CaptureConfig(), Checkpoint(name, 4))
    capture.begin_file(name, name)
    blocks = capture.feed_block(name, 4, data[4:])
    first = next(blocks)
    assert capture.boundary == first.transaction.end == whole[0]
    second = next(blocks)
    assert capture.boundary == second.transaction.end == whole[1]


def _columns(data: bytes, *, by_event: bool = False) -> tuple[list[Any], int]:
    """The change-log columns (as Arrow rows) and typed images of every transaction of the file,
    read twice (the second pass through the runs), in TYPED_COLUMNS; and how many transactions
    held their rows in more than one ChangeRows of their events."""
    from sluice.spark.source.change_frame import columns_batch

    core = rowplan._compiled_core
    capture = ChangeCapture(CaptureConfig(output=CaptureOutput.TYPED_COLUMNS, ddl=True), Checkpoint("f0", 4))
    out: list[Any] = []
    split = 0
    for name in ("f0", "f1"):
        if by_event:
            capture.begin_file(name, name)
            done = [tx for offset, event in zip(_offsets(data), _events(data), strict=True)
                    if (tx := capture.feed(name, offset, offset + len(event), event)) is not None]
            capture.cut_off()
        else:
            done = list(capture.feed_file(name, name, iter_raw_spans(io.BytesIO(data))))
        for tx in done:
            split += sum(type(e[2]) is core.ChangeRows for e in tx.transaction.events) > 1
            if tx.columns is None or not tx.columns.length:
                continue
            rows = core.ChangeRows()
            rows.extend(tx.columns, tx.transaction.rows_gtid, 1)
            typed = {key: (images.failed, images.length, None if images.failed else _bytes(images.buffers()))
                     for key, images in rows.typed.items()}
            out.append((columns_batch(rows).to_pylist(), typed))
    return out, split


def _bytes(buffers: Any) -> Any:
    """Handed-over buffers, nested in lists and tuples, as bytes (which compare by value)."""
    if isinstance(buffers, (list, tuple)):
        return type(buffers)(_bytes(b) for b in buffers)
    return buffers if isinstance(buffers, int) else bytes(buffers)


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_runs_of_a_transaction_go_on_in_one_set_of_columns(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that follows the transaction's last run (nothing the parser took in between) adds its
    rows to that run's ``ChangeRows``: the transaction's columns are the same whether its runs are
    cut by block ends everywhere, by every event, or not at all, and no transaction keeps two."""
    data = path.read_bytes()
    whole, split = _columns(data)
    by_event, split_by_event = _columns(data, by_event=True)
    monkeypatch.setattr(binlog_file, "BLOCK_SIZE", 97)  # runs cut by block ends everywhere
    in_blocks, split_in_blocks = _columns(data)
    assert by_event == whole and in_blocks == whole
    assert split == split_by_event == split_in_blocks == 0
