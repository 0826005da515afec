"""MariaDB's VECTOR, UUID, INET4 and INET6 through the capture, on binlog files built byte by byte.

MariaDB 11.7+ logs ``VECTOR(n)`` as a VARCHAR of the binary character set holding n little-endian
float32s (``Field_vector``, ``sql/sql_type_vector.cc``), and UUID / INET4 / INET6 as BINARY(16) /
BINARY(4) / BINARY(16) (``Type_handler_fbt``). Only the schema says what they are: here the CREATE
TABLE in the file. With the default metadata (NO_LOG) and with FULL (names and the binary charset,
no type) the values come out as the contract says: a list of floats, the server's text.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import sluice
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.constants import EventType as E
from tests.unit.binlog.decoders.test_events import event, fde, packed, query_body, table_map_body, tlv
from tests.unit.binlog.decoders.test_events_rows import rows_v1
from tests.unit.binlog.encoders import char_meta, image, prefixed
from tests.unit.cdc.schema.test_charset_inference import status

pytestmark = pytest.mark.unit

TID = 9
FLOATS = (1.5, -2.25, 0.5)
UUID = bytes.fromhex("0b8a1c2d3e4f11efa5b6c7d8e9f00102")
DDL = "CREATE TABLE t (id INT PRIMARY KEY, vec VECTOR(3), u UUID, i4 INET4, i6 INET6)"
NAMES = (b"id", b"vec", b"u", b"i4", b"i6")


def binlog(tmp_path: Path, *, full: bool, ddl: bool = True) -> Path:
    st = status(45)
    events = [fde("11.8.2-MariaDB-log")]
    if ddl:
        events += [event(E.QUERY_EVENT, query_body(sql.encode(), st, b"d"))
                   for sql in ("CREATE DATABASE d", DDL)]
    events.append(event(E.QUERY_EVENT, query_body(b"BEGIN", st, b"d")))
    types = [T.LONG, T.VARCHAR, T.STRING, T.STRING, T.STRING]
    meta = struct.pack("<H", 12) + struct.pack(">H", char_meta(T.STRING, 16)) \
        + struct.pack(">H", char_meta(T.STRING, 4)) + struct.pack(">H", char_meta(T.STRING, 16))
    optional = b""
    if full:  # the names, and the binary charset of the four string columns
        optional = tlv(3, packed(63) * 4) + tlv(4, b"".join(packed(len(n)) + n for n in NAMES))
    events.append(event(E.TABLE_MAP_EVENT, table_map_body(TID, b"d", b"t", types, meta, b"\x1e", optional)))
    values = [struct.pack("<i", 1), prefixed(struct.pack("<3f", *FLOATS), 1), prefixed(UUID, 1),
              prefixed(bytes([192, 0, 2, 1]), 1), prefixed(bytes.fromhex("20010db8") + bytes(11) + b"\x01", 1)]
    events.append(event(E.WRITE_ROWS_EVENT_V1, rows_v1(TID, 5, b"\x1f", image(values))))
    events.append(event(E.XID_EVENT, struct.pack("<Q", 7)))
    path = tmp_path / "mariadb-bin.000001"
    path.write_bytes(b"\xfebin" + b"".join(events))
    return path


EXPECTED = {"id": 1, "vec": list(FLOATS), "u": "0b8a1c2d-3e4f-11ef-a5b6-c7d8e9f00102", "i4": "192.0.2.1",
            "i6": "2001:db8::1"}


@pytest.mark.parametrize("full", [False, True], ids=["no-log", "full"])
def test_vector_and_fixed_binary_types_by_the_schema(tmp_path: Path, full: bool) -> None:
    path = binlog(tmp_path, full=full)
    (change,) = sluice.read_changes(path)
    assert change.after is not None
    assert change.after["vec"] == FLOATS and change.after["u"] == EXPECTED["u"]
    run = subprocess.run([sys.executable, "-m", "sluice.cli", "dump", str(path)], capture_output=True, text=True,
                         check=False)
    assert run.returncode == 0, run.stderr
    (line,) = run.stdout.splitlines()
    assert json.loads(line)["after"] == EXPECTED


def test_full_metadata_without_the_schema_is_the_binary_it_logs(tmp_path: Path) -> None:
    # No CREATE TABLE in the files: the map names the columns, not their types.
    (change,) = sluice.read_changes(binlog(tmp_path, full=True, ddl=False))
    assert change.after is not None
    assert change.after["u"] == UUID and change.after["vec"] == struct.pack("<3f", *FLOATS)
