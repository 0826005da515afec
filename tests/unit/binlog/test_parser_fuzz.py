"""Whatever bytes arrive, the parser fails only with sluice's own errors (never IndexError,
struct.error, UnicodeDecodeError, zlib.error ...)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.binlog.constants import EventType as E
from sluice.binlog.decoders.registry import DECODERS
from sluice.binlog.parser import EventParser, ParserConfig
from sluice.errors import SluiceError
from tests.conftest import examples
from tests.unit.binlog.decoders.test_events import (
    FAMILIES,
    SIMPLE_TM,
    event,
    fde,
    stub_plan_for,
)
from tests.unit.binlog.decoders.test_events_rows import full_table_map, payload_body, rows_v2

pytestmark = pytest.mark.unit

CODES = [*sorted(DECODERS), 0, 99, 250]


def fresh(version: str = "8.0.36", alg: int = 1) -> EventParser:
    p = EventParser(ParserConfig(plan_for=stub_plan_for))
    p.parse(fde(version, alg))
    return p


def parse_or_sluice_error(p: EventParser, data: bytes) -> None:
    try:
        p.parse(data)
    except SluiceError:
        pass


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    parse_or_sluice_error(EventParser(), data)
    parse_or_sluice_error(fresh(), data)


@settings(max_examples=examples(600), suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CODES), st.binary(max_size=120), st.booleans(), st.booleans())
def test_random_bodies_with_valid_framing(code: int, body: bytes, mariadb: bool, with_map: bool) -> None:
    p = fresh("10.11.6-MariaDB" if mariadb else "8.0.36", alg=0)
    if with_map:
        p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM, crc=False))
    parse_or_sluice_error(p, event(code, body, crc=False))


SAMPLES = [(server, code, body) for _, server, code, body, _ in FAMILIES] + [
    ("8.0.36", E.TABLE_MAP_EVENT, full_table_map()),
    ("8.0.36", E.TRANSACTION_PAYLOAD_EVENT, payload_body(event(E.XID_EVENT, struct.pack("<Q", 1)))),
    ("8.0.36", E.UPDATE_ROWS_EVENT_V2, rows_v2(0x0102030405, 2, b"\x03\x03", b"xy", b"\x01\x00\x00\x00\x00")),
]


@settings(max_examples=examples(600), suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SAMPLES), st.data())
def test_mutated_valid_events(sample: tuple[str, int, bytes], data: st.DataObject) -> None:
    server, code, body = sample
    mutable = bytearray(body)
    for _ in range(data.draw(st.integers(1, 4))):
        if not mutable:
            break
        i = data.draw(st.integers(0, len(mutable) - 1))
        mutable[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(mutable)))
    p = fresh(server, alg=0)
    p.parse(event(E.TABLE_MAP_EVENT, SIMPLE_TM, crc=False))
    parse_or_sluice_error(p, event(code, bytes(mutable[:cut]), crc=False))
