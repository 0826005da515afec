"""Framing in C and its twin: a replication stream's packets to blocks of events, events of some types."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from sluice.binlog import framing, rowplan
from tests.conftest import core_or_twin

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"
FILES = sorted(DATA.glob("*.binlog"))
SPECIAL = {4, 15, 27, 41}  # ROTATE, FORMAT_DESCRIPTION, HEARTBEAT, HEARTBEAT_V2: never in a block


@pytest.fixture(params=[True, False], ids=["compiled", "twin"])
def compiled(request: pytest.FixtureRequest) -> Iterator[bool]:
    yield from core_or_twin(request.param)


def file_events(path: Path) -> list[tuple[int, bytes]]:
    data = path.read_bytes()
    out, pos = [], 4
    while pos < len(data):
        (size,) = struct.unpack_from("<I", data, pos + 9)
        out.append((pos, data[pos : pos + size]))
        pos += size
    return out


def packets(events: list[bytes], seq: int = 0) -> bytearray:
    """Each event as a replica receives it: packet header, OK byte, the event."""
    out = bytearray()
    for event in events:
        out += struct.pack("<I", (len(event) + 1) | (seq << 24)) + b"\x00" + event
        seq = (seq + 1) & 0xFF
    return out


def replay(buf: bytearray, events: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """Read ``buf`` as the stream does: blocks where ``stream_events`` gives one, else one packet
    by itself; returns every event with the offset it was given."""
    out: list[tuple[int, bytes]] = []
    pos, seq, at = 0, 0, events[0][0]
    while pos < len(buf):
        pos2, seq2, block, at2 = framing.stream_events(buf, pos, len(buf), seq, at)
        if block:
            assert pos2 > pos
            walked = 0
            while walked < len(block):
                (size,) = struct.unpack_from("<I", block, walked + 9)
                assert block[walked + 4] not in SPECIAL
                out.append((at + walked, block[walked : walked + size]))
                walked += size
            assert at2 == at + len(block)
            pos, seq, at = pos2, seq2, at2
            continue
        assert (pos2, seq2, at2) == (pos, seq, at)
        (word,) = struct.unpack_from("<I", buf, pos)
        event = bytes(buf[pos + 5 : pos + 4 + (word & 0xFFFFFF)])
        out.append((at, event))
        (size,) = struct.unpack_from("<I", event, 9)
        pos, seq, at = pos + 4 + (word & 0xFFFFFF), (seq + 1) & 0xFF, at + size
    return out


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_stream_blocks_give_back_every_event_at_its_offset(path: Path, compiled: bool) -> None:
    events = file_events(path)
    buf = packets([e for _, e in events])
    assert replay(buf, events) == events
    pos, seq, block, at = framing.stream_events(buf, 0, len(buf), 0, 4)
    assert block == b"" and (pos, seq, at) == (0, 0, 4), "a FORMAT_DESCRIPTION starts no block"


@pytest.mark.parametrize("path", FILES[:3], ids=[p.stem for p in FILES[:3]])
def test_stream_events_twin_and_compiled_agree_at_every_cut(path: Path) -> None:
    if rowplan.core() is None:
        pytest.skip("the compiled core was not built")
    events = file_events(path)[1:]  # after the FORMAT_DESCRIPTION
    buf = packets([e for _, e in events], seq=250)
    start = events[0][0]
    results = []
    for enabled in (True, False):
        previous = rowplan.use_compiled(enabled)
        try:
            results.append([framing.stream_events(buf, 0, cut, 250, start) for cut in range(0, len(buf), 5)])
        finally:
            rowplan.use_compiled(previous)
    assert results[0] == results[1]
    taken = [r for r in results[0] if r[2]]
    assert taken and all(r[0] <= cut for r, cut in zip(results[0], range(0, len(buf), 5), strict=True))


def _mutations(buf: bytearray, n: int) -> Iterator[tuple[str, bytearray]]:
    """The stream with its second packet changed so that a block must end before it."""
    second = 4 + (int.from_bytes(buf[0:3], "little"))
    event = second + 5

    def changed(offset: int, value: bytes) -> bytearray:
        copy = bytearray(buf)
        copy[offset : offset + len(value)] = value
        return copy

    yield "sequence id", changed(second + 3, bytes([(buf[second + 3] + 1) & 0xFF]))
    yield "error packet", changed(second + 4, b"\xff")
    yield "artificial", changed(event + 17, bytes([buf[event + 17] | 0x20]))
    yield "rotate", changed(event + 4, b"\x04")
    yield "heartbeat", changed(event + 4, b"\x1b")
    yield "size", changed(event + 9, struct.pack("<I", n - 1))
    yield "log_pos ahead", changed(event + 13, struct.pack("<I", 1 << 30))
    yield "16 MiB", changed(second, b"\xff\xff\xff")


def test_a_block_ends_before_a_packet_that_needs_a_look_of_its_own(compiled: bool) -> None:
    events = [e for _, e in file_events(FILES[0])[1:4]]
    buf = packets(events)
    first = len(events[0])
    for what, changed in _mutations(buf, len(events[1])):
        pos, seq, block, at = framing.stream_events(changed, 0, len(changed), 0, 1000)
        assert block == events[0], what
        assert (pos, seq, at) == (5 + first, 1, 1000 + first), what
    short = bytearray(buf[: 4 + 1 + 10])
    assert framing.stream_events(short, 0, len(short), 0, 4)[2] == b""
    with pytest.raises(ValueError):
        framing.stream_events(buf, 0, len(buf) + 1, 0, 4)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_events_of_finds_the_events_of_the_types_asked(path: Path, compiled: bool) -> None:
    data = path.read_bytes()
    events = file_events(path)
    wanted = framing.type_table({2, 15})  # QUERY, FORMAT_DESCRIPTION
    expect = [pos for pos, e in events if e[4] in (2, 15)]
    assert expect and framing.events_of(data, 4, len(data), wanted) == expect
    for cut in range(4, len(data), 11):
        whole = [pos for pos, e in events if pos + len(e) <= cut and e[4] in (2, 15)]
        assert framing.events_of(data, 4, cut, wanted) == whole
    bad = data[:13] + (7).to_bytes(4, "little") + data[17:]
    assert framing.events_of(bad, 4, len(bad), wanted) == []


def _row_stream(rng_seed: int, seq: int = 250) -> tuple[bytearray, list[bytes]]:
    """Text rows (some starting with 0xFE, an 8-byte length prefix, or 0xFB, NULL) as packets."""
    import random

    rng = random.Random(rng_seed)
    rows = []
    for _ in range(300):
        kind = rng.randrange(4)
        if kind == 0:
            rows.append(b"\xfe" + struct.pack("<Q", 3) + b"abc" + b"x" * rng.randrange(0, 20))
        elif kind == 1:
            rows.append(b"\xfb" + bytes([5]) + b"12345")
        else:
            rows.append(rng.randbytes(rng.randrange(1, 60)).replace(b"\xff", b"\x01").replace(b"\xfe", b"\x02"))
    buf = bytearray()
    for i, row in enumerate(rows):
        buf += struct.pack("<I", len(row) | (((seq + i) & 0xFF) << 24)) + row
    return buf, rows


def _rows_of(block: bytes, ends: bytes) -> list[bytes]:
    out, start = [], 0
    for (stop,) in struct.iter_unpack("<q", ends):
        out.append(block[start:stop])
        start = stop
    return out


def test_row_packets_give_every_row_once_at_any_cut(compiled: bool) -> None:
    buf, rows = _row_stream(1)
    for step in (1, 3, 50, 997, len(buf)):
        got: list[bytes] = []
        pos, seq = 0, 250
        for cut in [*range(step, len(buf), step), len(buf)]:
            pos2, seq2, block, ends = framing.row_packets(buf, pos, cut, seq, 9)
            assert len(ends) == 8 * len(_rows_of(block, ends))
            got += _rows_of(block, ends)
            assert pos <= pos2 <= cut
            pos, seq = pos2, seq2
        assert got == rows, step
        assert pos == len(buf) and seq == (250 + len(rows)) & 0xFF


def test_row_packets_twin_and_compiled_agree_at_every_cut() -> None:
    if rowplan.core() is None:
        pytest.skip("the compiled core was not built")
    buf, _ = _row_stream(2)
    results = []
    for enabled in (True, False):
        previous = rowplan.use_compiled(enabled)
        try:
            results.append([framing.row_packets(buf, p, cut, 250 + p, limit)
                            for p in (0, 17) for cut in range(p, len(buf), 7) for limit in (-1, 9, 0xFFFFFF)])
        finally:
            rowplan.use_compiled(previous)
    assert results[0] == results[1]


def test_row_packets_stop_before_what_the_reader_must_see(compiled: bool) -> None:
    def packet(payload: bytes, seq: int) -> bytes:
        return struct.pack("<I", len(payload) | (seq << 24)) + payload

    row = b"\x01a"
    for name, stop, limit in (("EOF", b"\xfe\x00\x00\x02\x00", 9), ("OK", b"\xfe\x00\x00\x02\x00\x00\x00", 0xFFFFFF),
                              ("ERR", b"\xff\x15\x04#28000denied", 9), ("empty", b"", 9)):
        buf = bytearray(packet(row, 0) + packet(row, 1) + packet(stop, 2) + packet(row, 3))
        pos, seq, block, ends = framing.row_packets(buf, 0, len(buf), 0, limit)
        assert (pos, seq, block, ends) == (12, 2, row + row, struct.pack("<qq", 2, 4)), name
        assert framing.row_packets(buf, pos, len(buf), seq, limit) == (pos, seq, b"", b""), name
    # A row of 0xFE with an 8-byte length is a row when no EOF can be that long (CLIENT_DEPRECATE_EOF).
    long_fe = b"\xfe" + struct.pack("<Q", 1) + b"z"
    buf = bytearray(packet(long_fe, 0))
    assert framing.row_packets(buf, 0, len(buf), 0, 9)[2] == long_fe
    out_of_order = bytearray(packet(row, 0) + packet(row, 5))
    assert framing.row_packets(out_of_order, 0, len(out_of_order), 0, 9)[:3] == (6, 1, row)
    big = bytearray(b"\xff\xff\xff\x00" + b"a" * 16)
    assert framing.row_packets(big, 0, len(big), 0, 9) == (0, 0, b"", b"")
    with pytest.raises(ValueError):
        framing.row_packets(bytearray(4), 0, 5, 0, 9)
