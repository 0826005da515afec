"""Packet framing and the assembler: splits, joins, sequence ids."""

from __future__ import annotations

import random

import pytest

from sluice.errors import ProtocolError
from sluice.wire.packet import PacketAssembler, frame, packet_header

pytestmark = pytest.mark.unit

MAX = 0xFFFFFF


def test_frame_small_payload() -> None:
    data, nxt = frame(b"\x03SELECT 1", 0)
    assert data == (
        b"\x09\x00\x00"  # payload length 9, little-endian 3 bytes
        b"\x00"  # sequence id 0
        b"\x03SELECT 1"  # COM_QUERY + text
    )
    assert nxt == 1


def test_frame_empty_payload_and_sequence_wrap() -> None:
    data, nxt = frame(b"", 255)
    assert data == b"\x00\x00\x00\xff"
    assert nxt == 0


def _packets(data: bytes) -> list[tuple[int, int]]:
    """(length, seq) of each packet in a framed byte string."""
    out = []
    offset = 0
    while offset < len(data):
        length = int.from_bytes(data[offset : offset + 3], "little")
        out.append((length, data[offset + 3]))
        offset += 4 + length
    assert offset == len(data)
    return out


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (MAX - 1, [(MAX - 1, 0)]),
        (MAX, [(MAX, 0), (0, 1)]),  # an exact multiple ends with an empty packet
        (MAX + 1, [(MAX, 0), (1, 1)]),
        (2 * MAX, [(MAX, 0), (MAX, 1), (0, 2)]),
        (17 * 1024 * 1024, [(MAX, 0), (17 * 1024 * 1024 - MAX, 1)]),
    ],
)
def test_frame_splits_large_payloads(size: int, expected: list[tuple[int, int]]) -> None:
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    data, nxt = frame(payload, 0)
    assert _packets(data) == expected
    assert nxt == len(expected)
    assembler = PacketAssembler()
    assembler.feed(data)
    assert assembler.next_payload() == payload
    assert assembler.next_payload() is None
    assert assembler.expected_seq == nxt


@pytest.mark.parametrize("size", [MAX, MAX + 1, 17 * 1024 * 1024])
def test_large_payload_through_recv_buffer_in_odd_chunks(size: int) -> None:
    payload = random.Random(size).randbytes(size)
    data, _ = frame(payload, 7)
    assembler = PacketAssembler(capacity=4096)
    assembler.reset_sequence(7)
    got = []
    offset = 0
    rng = random.Random(1)
    while offset < len(data):
        view = assembler.write_buffer(65536)
        n = min(len(view), rng.randint(1, 3_000_000), len(data) - offset)
        view[:n] = data[offset : offset + n]
        del view
        assembler.commit(n)
        offset += n
        while (p := assembler.next_payload()) is not None:
            got.append(p)
    assert got == [payload]


def _stream() -> tuple[bytes, list[bytes]]:
    payloads = [b"", b"\x00\x00\x00\x02\x00\x00\x00", bytes(range(200)), b"\xfe\x00\x00\x02\x00", b"x" * 300]
    data = b""
    seq = 0
    for p in payloads:
        framed, seq = frame(p, seq)
        data += framed
    return data, payloads


def test_split_at_every_byte_boundary() -> None:
    data, payloads = _stream()
    for cut in range(len(data) + 1):
        assembler = PacketAssembler(capacity=64)
        got = []
        for chunk in (data[:cut], data[cut:]):
            assembler.feed(chunk)
            while (p := assembler.next_payload()) is not None:
                got.append(p)
        assert got == payloads, cut
        assert assembler.buffered == 0


def test_one_byte_at_a_time() -> None:
    data, payloads = _stream()
    assembler = PacketAssembler(capacity=64)
    got = []
    for i in range(len(data)):
        assembler.feed(data[i : i + 1])
        while (p := assembler.next_payload()) is not None:
            got.append(p)
    assert got == payloads


def test_wrong_sequence_id_is_a_protocol_error() -> None:
    assembler = PacketAssembler()
    assembler.feed(packet_header(1, 0) + b"a" + packet_header(1, 5) + b"b")
    assert assembler.next_payload() == b"a"
    with pytest.raises(ProtocolError, match="expected sequence id 1, found 5"):
        assembler.next_payload()


def test_reset_sequence_starts_a_new_exchange() -> None:
    assembler = PacketAssembler()
    assembler.feed(packet_header(2, 0) + b"ok")
    assert assembler.next_payload() == b"ok"
    assembler.reset_sequence(0)
    assembler.feed(packet_header(1, 1) + b"z")  # the server answers our seq-0 command with seq 1
    with pytest.raises(ProtocolError):
        assembler.next_payload()


def test_sequence_wraps_after_255() -> None:
    data = b""
    seq = 250
    for i in range(10):
        framed, seq = frame(bytes([i]), seq)
        data += framed
    assembler = PacketAssembler()
    assembler.reset_sequence(250)
    assembler.feed(data)
    assert [assembler.next_payload() for _ in range(10)] == [bytes([i]) for i in range(10)]
    assert assembler.expected_seq == 4


def test_commit_beyond_buffer_is_refused() -> None:
    assembler = PacketAssembler(capacity=64)
    view = assembler.write_buffer(16)
    with pytest.raises(ValueError):
        assembler.commit(len(view) + 1)


def test_consume_hands_the_received_packets_to_a_scan_and_moves_on_where_it_stopped() -> None:
    asm = PacketAssembler(capacity=64)
    data = b"".join(frame(bytes([i]) * (i + 1), i)[0] for i in range(4))
    asm.feed(data[:-2])  # the last packet is cut off

    def take_two(buf: bytearray, pos: int, end: int, seq: int) -> tuple[int, int, bytes]:
        assert bytes(buf[pos:end]) == data[:-2] and seq == 0
        stop = pos + 4 + 1 + 4 + 2
        return stop, seq + 2, bytes(buf[pos:stop])

    assert asm.consume(take_two)[2] == data[:11]
    assert asm.expected_seq == 2
    assert asm.next_payload() == b"\x02\x02\x02"
    assert asm.next_payload() is None
    asm.feed(data[-2:])
    assert asm.next_payload() == b"\x03" * 4
    assert asm.buffered == 0


def test_consume_refuses_a_scan_that_ends_outside_the_received_bytes() -> None:
    asm = PacketAssembler()
    asm.feed(frame(b"abc", 0)[0])
    with pytest.raises(ValueError):
        asm.consume(lambda buf, pos, end, seq: (end + 1, seq))
    assert asm.next_payload() == b"abc"


def test_consume_offers_nothing_while_a_large_payload_is_half_read() -> None:
    asm = PacketAssembler()
    big, _ = frame(b"x" * 0xFFFFFF + b"y", 0)
    asm.feed(big[: 4 + 0xFFFFFF + 2])
    assert asm.next_payload() is None
    seen: list[int] = []
    asm.consume(lambda buf, pos, end, seq: (seen.append(end - pos), pos, seq)[1:])
    assert seen == [0]
