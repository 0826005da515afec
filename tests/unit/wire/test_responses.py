"""OK, ERR and EOF packets and the length-encoded helpers."""

from __future__ import annotations

import pytest

from sluice.errors import AccessDeniedError, BinlogUnavailableError, ProtocolError, ServerError, TruncatedError
from sluice.wire.constants import Capability
from sluice.wire.responses import (
    is_eof,
    lenenc_bytes,
    lenenc_int,
    parse_eof,
    parse_err,
    parse_ok,
    raise_if_err,
    read_lenenc_bytes,
    read_lenenc_int,
    read_nul_bytes,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (250, b"\xfa"),
        (251, b"\xfc\xfb\x00"),  # 0xFB would mean NULL: needs the 2-byte form
        (0xFFFF, b"\xfc\xff\xff"),
        (0x10000, b"\xfd\x00\x00\x01"),
        (0xFFFFFF, b"\xfd\xff\xff\xff"),
        (0x1000000, b"\xfe\x00\x00\x00\x01\x00\x00\x00\x00"),
        (2**64 - 1, b"\xfe" + b"\xff" * 8),
    ],
)
def test_lenenc_int(value: int, encoded: bytes) -> None:
    assert lenenc_int(value) == encoded
    assert read_lenenc_int(b"\x99" + encoded, 1) == (value, 1 + len(encoded))


def test_lenenc_int_rejects_null_and_err_markers() -> None:
    with pytest.raises(ProtocolError, match="0xfb"):
        read_lenenc_int(b"\xfb", 0)
    with pytest.raises(ProtocolError, match="0xff"):
        read_lenenc_int(b"\xff", 0)


def test_lenenc_truncated() -> None:
    with pytest.raises(TruncatedError, match="expected 2 bytes at offset 1, found 1"):
        read_lenenc_int(b"\xfc\x01", 0)
    with pytest.raises(TruncatedError, match="length-encoded string"):
        read_lenenc_bytes(b"\x05abc", 0)


def test_lenenc_bytes_and_nul_strings() -> None:
    assert lenenc_bytes(b"abc") == b"\x03abc"
    assert read_lenenc_bytes(b"\x03abcdef", 0) == (b"abc", 4)
    assert read_nul_bytes(b"xxroot\0rest", 2) == (b"root", 7)
    assert read_nul_bytes(memoryview(b"xxroot\0rest"), 2) == (b"root", 7)
    with pytest.raises(TruncatedError, match="NUL"):
        read_nul_bytes(b"no terminator", 0)


def test_ok_packet() -> None:
    payload = (
        b"\x00"  # OK header
        b"\x03"  # affected rows: 3
        b"\xfc\x10\x27"  # last insert id: 10000
        b"\x02\x00"  # status: SERVER_STATUS_AUTOCOMMIT
        b"\x01\x00"  # warnings: 1
        b"Rows matched: 3"  # info (no CLIENT_SESSION_TRACK: rest of the packet)
    )
    ok = parse_ok(payload)
    assert (ok.affected_rows, ok.last_insert_id, ok.status, ok.warnings) == (3, 10000, 2, 1)
    assert ok.info == "Rows matched: 3"


def test_ok_packet_with_session_track() -> None:
    payload = b"\x00\x00\x00" b"\x02\x40" b"\x00\x00" b"\x02hi" b"\x03\x01\x01a"
    ok = parse_ok(payload, Capability.CLIENT_PROTOCOL_41 | Capability.CLIENT_SESSION_TRACK)
    assert ok.info == "hi"
    assert ok.session_state == b"\x01\x01a"


def test_ok_packet_truncated() -> None:
    with pytest.raises(TruncatedError, match="status and warnings"):
        parse_ok(b"\x00\x00\x00\x02")


def test_err_packet_access_denied() -> None:
    payload = (
        b"\xff"  # ERR header
        b"\x15\x04"  # error code 1045 (ER_ACCESS_DENIED_ERROR)
        b"#28000"  # SQLSTATE marker + state
        b"Access denied for user 'repl'@'localhost' (using password: YES)"
    )
    err = parse_err(payload)
    assert (err.errno, err.sqlstate) == (1045, "28000")
    with pytest.raises(AccessDeniedError) as info:
        raise_if_err(payload)
    assert info.value.errno == 1045
    assert "Access denied for user 'repl'" in str(info.value)


@pytest.mark.parametrize("message", [
    b"Could not find first log file name in binary log index file",
    b"Could not find GTID state requested by slave in any binlog files. Probably the slave state is "
    b"too old and required binlog files have been purged.",
    b"Error: connecting slave requested to start from GTID 0-1-100, which is not in the master's binlog",
    b"Cannot replicate because the source purged required binary logs.",
    b"Client requested source to start replication from position > file size",
])
def test_err_packet_binlog_purged(message: bytes) -> None:
    with pytest.raises(BinlogUnavailableError):
        raise_if_err(b"\xff\xd4\x04#HY000" + message)


def test_err_1236_bogus_data_is_not_a_purged_binlog() -> None:
    # The dump thread's one errno (1236) for a start position that is not an event's start.
    payload = (b"\xff\xd4\x04#HY000bogus data in log event; the first event 'binlog.000002' at 342, "
               b"the last event read from 'binlog.000002' at 4, the last byte read from 'binlog.000002' at 342.")
    with pytest.raises(ServerError) as info:
        raise_if_err(payload)
    assert type(info.value) is ServerError and info.value.errno == 1236
    assert "not the start of an event" in str(info.value)
    assert "purged" not in str(info.value)


def test_err_packet_without_sqlstate() -> None:
    # Errors sent before the handshake (e.g. "Too many connections") may lack the '#' marker.
    err = parse_err(b"\xff\x10\x04Too many connections")
    assert (err.errno, err.sqlstate, err.message) == (1040, "HY000", "Too many connections")


def test_eof_packet() -> None:
    payload = b"\xfe" b"\x00\x00" b"\x22\x00"  # warnings 0, status AUTOCOMMIT | QUERY_NO_INDEX_USED
    assert is_eof(payload)
    eof = parse_eof(payload)
    assert (eof.warnings, eof.status) == (0, 0x22)
    assert not is_eof(b"\xfe" + b"\x00" * 8)  # 9 bytes: a length prefix, not EOF
    with pytest.raises(ProtocolError, match="expected an EOF packet"):
        parse_eof(b"\x00\x00\x00\x02\x00\x00\x00")
