"""Text result sets, with and without CLIENT_DEPRECATE_EOF."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from sluice.errors import ProtocolError, ServerError, UnsupportedError
from sluice.wire.constants import Capability
from sluice.wire.responses import OkPacket, lenenc_bytes
from sluice.wire.resultset import ResultSet, ResultSetReader, parse_column_definition, parse_text_row

pytestmark = pytest.mark.unit

BASE = Capability.CLIENT_PROTOCOL_41


def _column(name: str) -> bytes:
    return (
        b"\x03def"  # catalog
        b"\x00"  # schema
        b"\x00"  # table
        b"\x00"  # org_table
        + lenenc_bytes(name.encode())  # name
        + b"\x00"  # org_name
        b"\x0c"  # length of the fixed fields
        b"\x2d\x00"  # character set 45
        b"\x40\x00\x00\x00"  # column length 64
        b"\xfd"  # type: VAR_STRING
        b"\x01\x00"  # flags: NOT_NULL
        b"\x1f"  # decimals 31
        b"\x00\x00"  # filler
    )


ROWS = [
    b"\x01a" b"\xfb",  # 'a', NULL
    b"\x00" b"\x03\xc3\xa9t",  # '', 'ét'
    b"\xfc\x2c\x01" + b"x" * 300 + b"\x011",  # a 300-byte value (2-byte length), '1'
]
EXPECTED = [("a", None), ("", "ét"), ("x" * 300, "1")]


def _feed_all(reader: ResultSetReader, payloads: list[bytes]) -> None:
    for i, payload in enumerate(payloads):
        done = reader.feed(payload)
        assert done == (i == len(payloads) - 1)


def test_column_definition() -> None:
    col = parse_column_definition(_column("name"))
    assert (col.catalog, col.name, col.character_set, col.column_length, col.column_type) == (
        "def", "name", 45, 64, 0xFD
    )
    assert (col.flags, col.decimals) == (1, 31)


def test_result_set_with_eof_packets() -> None:
    eof = b"\xfe\x00\x00\x02\x00"  # EOF: warnings 0, status AUTOCOMMIT
    reader = ResultSetReader(BASE)
    _feed_all(reader, [b"\x02", _column("k"), _column("v"), eof, *ROWS, eof])
    result = reader.result
    assert isinstance(result, ResultSet)
    assert result.columns == ("k", "v")
    assert result.rows == EXPECTED
    assert result.status == 2
    assert result.dicts()[0] == {"k": "a", "v": None}


def test_result_set_with_deprecate_eof() -> None:
    end = b"\xfe\x00\x00\x02\x00\x00\x00"  # OK packet with the 0xFE header ends the rows
    reader = ResultSetReader(BASE | Capability.CLIENT_DEPRECATE_EOF)
    _feed_all(reader, [b"\x02", _column("k"), _column("v"), *ROWS, end])
    assert isinstance(reader.result, ResultSet)
    assert reader.result.rows == EXPECTED


def test_empty_result_set() -> None:
    reader = ResultSetReader(BASE | Capability.CLIENT_DEPRECATE_EOF)
    _feed_all(reader, [b"\x01", _column("x"), b"\xfe\x00\x00\x02\x00\x00\x00"])
    assert reader.result == ResultSet(columns=("x",), rows=[], status=2)


def test_ok_instead_of_result_set() -> None:
    reader = ResultSetReader(BASE)
    assert reader.feed(b"\x00\x05\x00\x02\x00\x00\x00")
    assert isinstance(reader.result, OkPacket)
    assert reader.result.affected_rows == 5


def test_err_instead_of_result_set() -> None:
    reader = ResultSetReader(BASE)
    with pytest.raises(ServerError, match="1146"):
        reader.feed(b"\xff\x7a\x04#42S02Table 'shop.nope' doesn't exist")


def test_err_in_the_middle_of_rows() -> None:
    reader = ResultSetReader(BASE | Capability.CLIENT_DEPRECATE_EOF)
    for payload in (b"\x01", _column("x"), b"\x011"):
        reader.feed(payload)
    with pytest.raises(ServerError, match="Query execution was interrupted"):
        reader.feed(b"\xff\x14\x05#70100Query execution was interrupted")


def test_local_infile_request_is_refused() -> None:
    with pytest.raises(UnsupportedError, match="LOCAL INFILE"):
        ResultSetReader(BASE).feed(b"\xfb/etc/passwd")


def test_row_starting_with_0xfe_is_a_row() -> None:
    # A value of 2**24 bytes or more has an 8-byte length prefix starting with 0xFE; such a row
    # is longer than an EOF packet, and longer than 0xFFFFFF, so it is not taken for the end.
    big = 1 << 24
    row = b"\xfe" + big.to_bytes(8, "little") + b"y" * big
    reader = ResultSetReader(BASE | Capability.CLIENT_DEPRECATE_EOF)
    reader.feed(b"\x01")
    reader.feed(_column("big"))
    assert not reader.feed(row)
    assert reader.feed(b"\xfe\x00\x00\x02\x00\x00\x00")
    assert isinstance(reader.result, ResultSet)
    assert len(reader.result.rows[0][0] or "") == big


def test_text_row_errors() -> None:
    with pytest.raises(ProtocolError, match="expected 2 values, found 1"):
        parse_text_row(b"\x01a", 2)
    with pytest.raises(ProtocolError, match="runs past the row"):
        parse_text_row(b"\x05ab", 1)
    with pytest.raises(ProtocolError, match="bytes left"):
        parse_text_row(b"\x01a\x01b", 1)


def test_non_utf8_bytes_are_kept_recoverably() -> None:
    (value,) = parse_text_row(b"\x02\xff\xfe", 1)
    assert value is not None
    assert value.encode("utf-8", "surrogateescape") == b"\xff\xfe"


def test_raw_reader_keeps_row_payloads() -> None:
    from sluice.wire.resultset import RawResultSet, RawResultSetReader

    ok = b"\xfe\x00\x00\x02\x00\x00\x00"
    reader = RawResultSetReader(BASE | Capability.CLIENT_DEPRECATE_EOF)
    _feed_all(reader, [b"\x02", _column("k"), _column("v"), *ROWS, ok])
    result = reader.result
    assert isinstance(result, RawResultSet)
    assert result.columns == ("k", "v")
    assert result.payloads == ROWS
    assert [parse_text_row(p, 2) for p in result.payloads] == EXPECTED
    reader = RawResultSetReader(BASE)
    assert reader.feed(b"\x00\x00\x00\x02\x00\x00\x00")  # a statement without rows: its OK
    assert isinstance(reader.result, OkPacket)


def _reader_of(payloads: list[bytes], size: int) -> Any:
    """``read_rows`` as ``Connection.read_rows`` answers it over these payloads: while rows are due,
    up to ``size`` plain rows in one block, else one payload."""
    from sluice.binlog.framing import row_packets

    stream = bytearray(b"".join(struct.pack("<I", len(p) | ((i & 0xFF) << 24)) + p for i, p in enumerate(payloads)))
    state = {"pos": 0, "seq": 0, "calls": 0}

    def read_rows(eof_limit: int) -> Any:
        state["calls"] += 1
        pos, seq = state["pos"], state["seq"]
        if eof_limit >= 0:
            end = pos
            for _ in range(size):  # offer ``size`` packets at most
                if end + 4 > len(stream):
                    break
                end += 4 + int.from_bytes(stream[end:end + 3], "little")
            pos2, seq2, block, ends = row_packets(stream, pos, end, seq, eof_limit)
            if block:
                state["pos"], state["seq"] = pos2, seq2
                return block, ends
        length = int.from_bytes(stream[pos:pos + 3], "little")
        state["pos"], state["seq"] = pos + 4 + length, (seq + 1) & 0xFF
        return bytes(stream[pos + 4:pos + 4 + length])

    read_rows.state = state  # type: ignore[attr-defined]
    return read_rows


def test_raw_reader_reads_rows_in_blocks_of_any_size() -> None:
    from sluice.wire.resultset import RawResultSet, RawResultSetReader

    eof = b"\xfe\x00\x00\x02\x00"
    for caps, end in ((BASE, [eof, *ROWS, eof]), (BASE | Capability.CLIENT_DEPRECATE_EOF, [*ROWS, eof + b"\x00\x00"])):
        payloads = [b"\x02", _column("k"), _column("v"), *end]
        for size in (1, 2, 3, len(payloads)):
            read_rows = _reader_of(payloads, size)
            result = RawResultSetReader(caps).read_blocks(read_rows)
            assert isinstance(result, RawResultSet) and result.payloads == ROWS
            assert read_rows.state["pos"] == sum(4 + len(p) for p in payloads)  # nothing read past the end
            assert len(result.blocks) == -(-len(ROWS) // size)
    err = b"\xff\x15\x04#28000denied"
    with pytest.raises(ServerError, match="denied"):
        RawResultSetReader(BASE).read_blocks(_reader_of([b"\x02", _column("k"), _column("v"), eof, ROWS[0], err], 9))
    with pytest.raises(ProtocolError, match="empty packet"):
        RawResultSetReader(BASE).read_blocks(_reader_of([b"\x02", _column("k"), _column("v"), eof, ROWS[0], b""], 9))
    assert isinstance(RawResultSetReader(BASE).read_blocks(_reader_of([b"\x00\x00\x00\x02\x00\x00\x00"], 9)),
                      OkPacket)


