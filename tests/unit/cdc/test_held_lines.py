"""A transaction's JSON lines held in a bounded buffer until its COMMIT (``cdc.held``, ``io.spill``).

With the budget set to nothing, every transaction of every golden file is held as it is read and
spills to its temporary file; with a budget of a few hundred bytes some stay in memory. Either way
the lines, the counts and the checkpoints are those of the capture that holds nothing, on the
compiled core and on the Python twin, fed a block or an event at a time, and with no spill
buffer given (all held in memory). A transaction rolled back,
or cut off by the end of the input, prints nothing and its temporary file is gone.
"""

from __future__ import annotations

import gc
import io
import json
import tempfile
import weakref
import zlib
from pathlib import Path
from typing import Any

import pytest

from sluice.binlog import rowplan
from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, CaptureOutput, ChangeCapture
from sluice.cdc.held import HeldLines
from sluice.errors import ConfigError
from sluice.io.binlog_file import BINLOG_MAGIC, iter_raw_spans
from sluice.io.spill import SpillBuffer, parse_size

pytestmark = pytest.mark.unit

GOLDEN = sorted((Path(__file__).resolve().parents[2] / "data").glob("*.binlog"))
QUERY, XID = 2, 16
CORES = [False, True] if rowplan._compiled_core is not None else [False]


def _events(data: bytes) -> list[tuple[int, bytes]]:
    out, pos = [], 4
    while pos < len(data):
        size = int.from_bytes(data[pos + 9 : pos + 13], "little")
        out.append((pos, data[pos : pos + size]))
        pos += size
    return out


def _capture(data: bytes, *, compiled: bool, memory: int | None, by_event: bool = False,
             spill: Any = SpillBuffer) -> tuple[list[Any], int]:
    """Per committed transaction its checkpoints, row count and lines; and how many were held."""
    previous = rowplan.use_compiled(compiled)
    try:
        config = CaptureConfig(output=CaptureOutput.LINES, ddl=True, spill=spill)
        if memory is not None:
            config = CaptureConfig(output=CaptureOutput.LINES, ddl=True, memory=memory, spill=spill)
        capture = ChangeCapture(config, Checkpoint("f", 4))
        if by_event:
            capture.begin_file("f")
            done = [tx for offset, event in _events(data)
                    if (tx := capture.feed("f", offset, offset + len(event), event)) is not None]
            capture.cut_off()
        else:
            done = list(capture.feed_file("f", "f", iter_raw_spans(io.BytesIO(data))))
        out, held = [], 0
        for tx in done:
            if type(tx.lines) is HeldLines:
                held += 1
                spills = spill is not None and tx.lines.size > memory  # type: ignore[operator]
                assert tx.lines.buffer.spilled == spills
            out.append((str(tx.start), str(tx.end), tx.row_count, b"".join(tx.lines or ()).decode()))
        return out, held
    finally:
        rowplan.use_compiled(previous)


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
@pytest.mark.parametrize("compiled", CORES, ids=lambda c: "compiled" if c else "twin")
def test_held_transactions_print_what_unheld_ones_do(path: Path, compiled: bool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    data = path.read_bytes()
    plain, held = _capture(data, compiled=compiled, memory=None)
    assert held == 0  # golden transactions are far below the default budget
    assert any(lines for *_, lines in plain)
    rows = [tx for tx in plain if tx[2]]
    for memory in (0, 300):
        for by_event in (False, True):
            out, held = _capture(data, compiled=compiled, memory=memory, by_event=by_event)
            assert out == plain
            assert held >= len(rows)  # every transaction with rows was held (and DDL ones with --ddl lines)
    assert _capture(data, compiled=compiled, memory=0, spill=None)[0] == plain  # held, all in memory
    monkeypatch.setattr("sluice.io.binlog_file.BLOCK_SIZE", 97)  # core runs cut by block ends everywhere
    assert _capture(data, compiled=compiled, memory=0)[0] == plain


def _recrc(event: bytes) -> bytes:
    return event[:-4] + zlib.crc32(event[:-4]).to_bytes(4, "little")


def _rolled_back(data: bytes) -> bytes:
    """The file with its first transaction's XID replaced by a ROLLBACK statement (made from its BEGIN),
    the events after it moved on and their ``log_pos`` with them."""
    events = _events(data)
    begin = next(e for _, e in events if e[4] == QUERY and e[:-4].endswith(b"BEGIN"))
    body = begin[19:-4]
    out, shift, replaced = [], 0, False
    for pos, event in events:
        if event[4] == XID and not replaced:
            replaced = True
            new = bytearray(begin[:19] + body[:-5] + b"ROLLBACK" + b"\0\0\0\0")
            new[9:13] = len(new).to_bytes(4, "little")
            new[13:17] = (pos + shift + len(new)).to_bytes(4, "little")
            shift += len(new) - len(event)
            out.append(_recrc(bytes(new)))
            continue
        log_pos = int.from_bytes(event[13:17], "little")
        if shift and log_pos:
            moved = bytearray(event)
            moved[13:17] = (log_pos + shift).to_bytes(4, "little")
            event = _recrc(bytes(moved))
        out.append(event)
    assert replaced
    return BINLOG_MAGIC + b"".join(out)


def _without_pos(lines: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in json.loads(line).items() if k != "pos"} for line in lines.splitlines()]


class _Files:
    """Every temporary file the spill buffers make, by weak reference: a dead one is closed and gone."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[weakref.ref[Any]] = []
        real = tempfile.TemporaryFile

        def made(*args: Any, **kwargs: Any) -> Any:
            f = real(*args, **kwargs)
            self.made.append(weakref.ref(f))
            return f

        monkeypatch.setattr(tempfile, "TemporaryFile", made)

    def open(self) -> list[Any]:
        gc.collect()
        return [f for ref in self.made if (f := ref()) is not None and not f.closed]


@pytest.mark.parametrize("compiled", CORES, ids=lambda c: "compiled" if c else "twin")
def test_a_rolled_back_held_transaction_prints_nothing_and_leaves_no_file(
        compiled: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    files = _Files(monkeypatch)
    data = (Path(__file__).resolve().parents[2] / "data" / "mysql-multitable.binlog").read_bytes()
    plain, _ = _capture(data, compiled=compiled, memory=None)
    out, held = _capture(_rolled_back(data), compiled=compiled, memory=0)
    assert len(files.made) == 2, "the rolled-back transaction was not spilled: the test does not test it"
    # the one-row transaction after it, alone (its events 43 bytes further: ROLLBACK is longer than an XID)
    assert [(end.split()[1], rows, _without_pos(lines)) for _, end, rows, lines in out] == [
        (end.split()[1], rows, _without_pos(lines)) for _, end, rows, lines in plain[1:]]
    assert held == 1
    assert files.open() == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("compiled", CORES, ids=lambda c: "compiled" if c else "twin")
def test_a_transaction_cut_off_at_the_end_prints_nothing_and_leaves_no_file(
        compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _Files(monkeypatch)
    data = (Path(__file__).resolve().parents[2] / "data" / "mysql-multitable.binlog").read_bytes()
    events = _events(data)
    xid = next(i for i, (_, e) in enumerate(events) if e[4] == XID)
    out, held = _capture(BINLOG_MAGIC + b"".join(e for _, e in events[:xid]), compiled=compiled, memory=0)
    assert out == [] and held == 0
    assert files.made and files.open() == []


def test_the_spill_buffer_keeps_order_and_frees_its_file(tmp_path: Path) -> None:
    buffer = SpillBuffer(10, str(tmp_path))
    buffer.write(b"0123")
    assert not buffer.spilled and list(buffer) == [b"0123"]
    pieces = [bytes([65 + i]) * (i * 100_000) for i in range(12)]
    for piece in pieces:
        buffer.write(piece)
    assert buffer.spilled and list(tmp_path.iterdir()) == []  # the file has no name
    assert b"".join(buffer) == b"0123" + b"".join(pieces)
    assert max(map(len, buffer)) <= 1 << 20
    buffer.write(b"end")  # writes go on after a read
    assert b"".join(buffer).endswith(b"end") and len(buffer) == 4 + sum(map(len, pieces)) + 3
    buffer.close()
    assert len(buffer) == 0 and list(buffer) == []


def test_a_spill_directory_that_cannot_hold_the_file_is_a_clear_error(tmp_path: Path) -> None:
    buffer = SpillBuffer(0, str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match=r"missing.*larger than the memory budget"):
        buffer.write(b"x")


@pytest.mark.parametrize(("text", "size"), [("0", 0), ("512", 512), ("64M", 64 << 20), ("2g", 2 << 30),
                                            ("100KB", 100 << 10)])
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text, "--transaction-memory") == size


@pytest.mark.parametrize("text", ["", "M", "1.5M", "-1", "12T", "ten"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(ConfigError, match="--transaction-memory"):
        parse_size(text, "--transaction-memory")
