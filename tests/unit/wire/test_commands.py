"""Command payload builders."""

from __future__ import annotations

import pytest

from sluice.wire.commands import (
    com_binlog_dump,
    com_binlog_dump_gtid,
    com_ping,
    com_query,
    com_quit,
    com_register_slave,
)
from sluice.wire.constants import BinlogDumpFlag

pytestmark = pytest.mark.unit


def test_simple_commands() -> None:
    assert com_query("SELECT 'é'") == b"\x03SELECT '\xc3\xa9'"
    assert com_ping() == b"\x0e"
    assert com_quit() == b"\x01"


def test_register_slave() -> None:
    assert com_register_slave(1234, "replica", "repl", "", 3307) == (
        b"\x15"  # COM_REGISTER_SLAVE
        b"\xd2\x04\x00\x00"  # server id 1234
        b"\x07replica"  # host, 1-byte length
        b"\x04repl"  # user
        b"\x00"  # password (empty)
        b"\xeb\x0c"  # port 3307
        b"\x00\x00\x00\x00"  # replication rank
        b"\x00\x00\x00\x00"  # master id
    )


def test_binlog_dump() -> None:
    assert com_binlog_dump(4, BinlogDumpFlag.BINLOG_DUMP_NON_BLOCK, 99, "binlog.000002") == (
        b"\x12"  # COM_BINLOG_DUMP
        b"\x04\x00\x00\x00"  # position 4
        b"\x01\x00"  # flags: BINLOG_DUMP_NON_BLOCK
        b"\x63\x00\x00\x00"  # server id 99
        b"binlog.000002"  # file name, rest of the packet
    )
    with pytest.raises(ValueError, match="4-byte position"):
        com_binlog_dump(2**32, 0, 1, "binlog.000001")


def test_binlog_dump_gtid() -> None:
    gtid_set = b"\x00" * 8  # an encoded empty GTID set: 8-byte count of SIDs = 0
    assert com_binlog_dump_gtid(BinlogDumpFlag.BINLOG_THROUGH_GTID, 7, "", 4, gtid_set) == (
        b"\x1e"  # COM_BINLOG_DUMP_GTID
        b"\x04\x00"  # flags: BINLOG_THROUGH_GTID
        b"\x07\x00\x00\x00"  # server id 7
        b"\x00\x00\x00\x00"  # file name length 0
        b""  # file name
        b"\x04\x00\x00\x00\x00\x00\x00\x00"  # position 4 (8 bytes)
        b"\x08\x00\x00\x00"  # GTID set size
        + gtid_set
    )
