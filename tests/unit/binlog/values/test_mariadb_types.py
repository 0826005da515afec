"""MariaDB's UUID, INET4 and INET6 printed as the server prints them, from the bytes it logs.

The INET6 cases follow ``Inet6::to_string`` (MySQL's ``INET6_NTOA`` code): one zero group is enough
for ``::``, the first of two equally long runs is the one cut, and IPv4-compatible and IPv4-mapped
addresses end dotted.
"""

from __future__ import annotations

import ipaddress

import pytest

from sluice.binlog.values.mariadb_types import inet4_text, inet6_text, mariadb_type_decoder, uuid_text

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("text", "printed"), [
    ("2001:db8::1", "2001:db8::1"),
    ("::", "::"),
    ("::1", "::1"),
    ("1::", "1::"),
    ("fe80::1:2", "fe80::1:2"),
    ("2001:db8:0:1:1:1:1:1", "2001:db8::1:1:1:1:1"),  # a single zero group is cut too
    ("1:0:0:2:0:0:3:4", "1::2:0:0:3:4"),  # the first of two equal runs
    ("1:0:0:2:0:0:0:4", "1:0:0:2::4"),  # the longest run
    ("::ffff:192.0.2.1", "::ffff:192.0.2.1"),
    ("::192.0.2.1", "::192.0.2.1"),
    ("::ffff:0:1", "::ffff:0.0.0.1"),
    ("1::ffff:1:2", "1::ffff:1:2"),  # mapped only after five leading zero groups
    ("ABCD:EF01:2345:6789:ABCD:EF01:2345:6789", "abcd:ef01:2345:6789:abcd:ef01:2345:6789"),
    ("0:0:1::", "0:0:1::"),
])
def test_inet6_text(text: str, printed: str) -> None:
    assert inet6_text(ipaddress.IPv6Address(text).packed) == printed


def test_inet4_and_uuid_text() -> None:
    assert inet4_text(bytes([192, 0, 2, 1])) == "192.0.2.1"
    assert inet4_text(bytes(4)) == "0.0.0.0"
    raw = bytes.fromhex("0B8A1C2D3E4F11EFA5B6C7D8E9F00102")
    assert uuid_text(raw) == "0b8a1c2d-3e4f-11ef-a5b6-c7d8e9f00102"


def test_decoder_pads_trimmed_values_and_refuses_long_ones() -> None:
    assert mariadb_type_decoder("inet6")(b"\x20\x01\x0d\xb8") == "2001:db8::"
    assert mariadb_type_decoder("uuid")(b"") == "00000000-0000-0000-0000-000000000000"
    with pytest.raises(ValueError, match="UUID value has 16 bytes, the row holds 17"):
        mariadb_type_decoder("uuid")(bytes(17))
