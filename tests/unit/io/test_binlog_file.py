"""Reading binlog files block by block: magic, framing across block boundaries, truncation, CRC, stdin."""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import Any

import pytest

import sluice.io.binlog_file as bf
from sluice.binlog import events as ev
from sluice.binlog.constants import EventType as E
from sluice.binlog.parser import EventParser, ParserConfig
from sluice.errors import ChecksumMismatchError, MalformedEventError, TruncatedError
from sluice.io.binlog_file import BINLOG_MAGIC, BinlogFile, iter_events
from tests.unit.binlog.decoders.test_events import SIMPLE_TM, event, fde, query_body, stub_plan_for
from tests.unit.binlog.decoders.test_events_rows import rows_v2

pytestmark = pytest.mark.unit


def sample_events() -> list[bytes]:
    return [
        fde(),
        event(E.QUERY_EVENT, query_body(b"BEGIN", b"")),
        event(E.TABLE_MAP_EVENT, SIMPLE_TM),
        event(E.WRITE_ROWS_EVENT_V2, rows_v2(0x0102030405, 2, b"\x03", b"row" * 100)),
        event(E.XID_EVENT, struct.pack("<Q", 3)),
        event(E.ROTATE_EVENT, struct.pack("<Q", 4) + b"binlog.000002"),
    ]


def write(tmp_path: Path, chunks: list[bytes], magic: bytes = BINLOG_MAGIC) -> Path:
    path = tmp_path / "binlog.000001"
    path.write_bytes(magic + b"".join(chunks))
    return path


def parser() -> EventParser:
    return EventParser(ParserConfig(plan_for=stub_plan_for))


@pytest.mark.parametrize("block", [1, 7, 19, 1 << 16])
def test_offsets_and_events_across_block_sizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    monkeypatch.setattr(bf, "BLOCK_SIZE", block)
    chunks = sample_events()
    out = list(iter_events(write(tmp_path, chunks), parser()))
    offsets = [4]
    for c in chunks[:-1]:
        offsets.append(offsets[-1] + len(c))
    assert [o for o, _ in out] == offsets
    assert [type(e).__name__ for _, e in out] == [
        "FormatDescriptionEvent",
        "QueryEvent",
        "TableMapEvent",
        "RowsEvent",
        "XidEvent",
        "RotateEvent",
    ]


def test_not_a_binlog(tmp_path: Path) -> None:
    with pytest.raises(MalformedEventError, match="not a binlog") as info:
        list(iter_events(write(tmp_path, sample_events(), magic=b"GIF8")))
    assert (
        info.value.offset == 0 and info.value.file is not None and info.value.file.endswith("binlog.000001")
    )
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with pytest.raises(MalformedEventError):
        list(iter_events(empty))


@pytest.mark.parametrize("cut", [1, 10, 25])
def test_truncated_file(tmp_path: Path, cut: int) -> None:
    chunks = sample_events()
    data = b"".join(chunks)
    path = write(tmp_path, [data[: len(data) - cut]])
    last = 4 + len(data) - len(chunks[-1])
    with pytest.raises(TruncatedError) as info:
        list(iter_events(path, parser()))
    assert info.value.offset == last  # type: ignore[attr-defined]
    assert str(last) in str(info.value)


def test_bad_checksum_names_file_and_offset(tmp_path: Path) -> None:
    chunks = sample_events()
    bad = bytearray(chunks[4])
    bad[20] ^= 0xFF
    chunks[4] = bytes(bad)
    path = write(tmp_path, chunks)
    with pytest.raises(ChecksumMismatchError) as info:
        list(iter_events(path, parser()))
    assert info.value.offset == 4 + sum(len(c) for c in chunks[:4])
    assert info.value.file == str(path)


def test_stream_and_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    blob = BINLOG_MAGIC + b"".join(sample_events())
    assert len(list(iter_events(io.BytesIO(blob), parser()))) == 6

    class FakeStdin:
        buffer = io.BytesIO(blob)

    monkeypatch.setattr(bf.sys, "stdin", FakeStdin())
    assert len(list(iter_events("-", parser()))) == 6


def test_binlog_file_from_offset(tmp_path: Path) -> None:
    chunks = sample_events()
    path = write(tmp_path, chunks)
    start = 4 + len(chunks[0]) + len(chunks[1])
    out = list(BinlogFile(path, parser(), start=start))
    assert out[0][0] == start
    assert isinstance(out[0][1], ev.TableMapEvent) and isinstance(out[1][1], ev.RowsEvent)
    assert len(list(BinlogFile(path, parser()))) == 6


def _split(spans: Any) -> list[tuple[int, bytes]]:
    """The ``(offset, bytes)`` events of ``(offset, buf, stop)`` spans (whole events in ``buf[:stop]``)."""
    out = []
    for offset, buf, stop in spans:
        assert 0 < stop <= len(buf)
        block = buf[:stop]
        pos = 0
        while pos < len(block):
            size = int.from_bytes(block[pos + 9 : pos + 13], "little")
            out.append((offset + pos, block[pos : pos + size]))
            pos += size
        assert pos == len(block), "a block ends inside an event"
    return out


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "twin"])
def test_raw_spans_are_whole_events_from_start_to_end(compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from sluice.binlog import rowplan
    from sluice.io import binlog_file

    previous = rowplan.use_compiled(compiled)
    if compiled and rowplan.core() is None:
        rowplan.use_compiled(previous)
        pytest.skip("the compiled core was not built")
    try:
        path = Path(__file__).resolve().parents[2] / "data" / "mysql-multitable.binlog"
        events = list(binlog_file.iter_events(path))
        raw = _split(binlog_file.iter_raw_spans(path))
        assert [offset for offset, _ in raw] == [offset for offset, _ in events]
        assert len(raw) > 6
        monkeypatch.setattr(binlog_file, "BLOCK_SIZE", 40)  # blocks of one or two events
        small = list(binlog_file.iter_raw_spans(path))
        assert len(small) > 3 and _split(small) == raw
        start, end = raw[3][0], raw[-2][0]
        assert _split(binlog_file.iter_raw_spans(path, start, end)) == [raw[0], *raw[3:-2]]
        assert _split(binlog_file.iter_raw_spans(path, start)) == [raw[0], *raw[3:]]
    finally:
        rowplan.use_compiled(previous)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "twin"])
def test_whole_events_agrees_with_its_twin_on_every_cut(compiled: bool) -> None:
    from sluice.binlog import framing, rowplan

    path = Path(__file__).resolve().parents[2] / "data" / "mysql-multitable.binlog"
    data = path.read_bytes()[4:]
    previous = rowplan.use_compiled(compiled)
    if compiled and rowplan.core() is None:
        rowplan.use_compiled(previous)
        pytest.skip("the compiled core was not built")
    try:
        for cut in range(0, len(data), 7):
            buf = data[:cut]
            expect = 0
            while len(buf) - expect >= 19:
                size = int.from_bytes(buf[expect + 9 : expect + 13], "little")
                if expect + size > len(buf):
                    break
                expect += size
            assert framing.whole_events(buf, 0, len(buf)) == (expect, -1)
        bad = data[:9] + (7).to_bytes(4, "little") + data[13:40]
        assert framing.whole_events(bad, 0, len(bad)) == (0, 0)
    finally:
        rowplan.use_compiled(previous)


class _Trickle(io.RawIOBase):
    """A pipe that gives at most ``most`` bytes per read."""

    def __init__(self, data: bytes, most: int) -> None:
        self._data, self._pos, self._most = data, 0, most

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        assert whence == 0
        self._pos = pos
        return pos

    def read(self, n: int = -1) -> bytes:  # type: ignore[override]
        n = self._most if n < 0 else min(n, self._most)
        out = self._data[self._pos : self._pos + n]
        self._pos += len(out)
        return out


@pytest.mark.parametrize("block", [7, 40, 1 << 16])
@pytest.mark.parametrize("most", [3, 19, 1 << 20])
def test_raw_spans_hand_on_every_event_once_in_any_read_sizes(monkeypatch: pytest.MonkeyPatch, block: int,
                                                               most: int) -> None:
    path = Path(__file__).resolve().parents[2] / "data" / "mysql-multitable.binlog"
    data = path.read_bytes()
    expect = _split(bf.iter_raw_spans(path))
    monkeypatch.setattr(bf, "BLOCK_SIZE", block)
    spans = list(bf.iter_raw_spans(_Trickle(data, most)))
    assert _split(spans) == expect
    start, end = expect[2][0], expect[-3][0]
    ranged = list(bf.iter_raw_spans(_Trickle(data, most), start, end))
    assert _split(ranged) == [expect[0], *expect[2:-3]]


@pytest.mark.parametrize("block", [64, 1 << 16])
def test_raw_spans_of_a_cut_file_end_in_truncated_error_at_the_cut_event(monkeypatch: pytest.MonkeyPatch,
                                                                          block: int) -> None:
    path = Path(__file__).resolve().parents[2] / "data" / "mysql-multitable.binlog"
    data = path.read_bytes()
    events = _split(bf.iter_raw_spans(path))
    monkeypatch.setattr(bf, "BLOCK_SIZE", block)
    for cut in range(5, len(data), 13):
        inside = [offset for offset, event in events if offset < cut < offset + len(event)]
        got: list[tuple[int, bytes]] = []
        try:
            for offset, buf, stop in bf.iter_raw_spans(io.BytesIO(data[:cut])):
                got.extend(_split([(offset, buf, stop)]))
        except TruncatedError as exc:
            assert inside and exc.offset == inside[0], cut  # type: ignore[attr-defined]
        else:
            assert not inside, cut
        assert got == [e for e in events if e[0] + len(e[1]) <= cut]
