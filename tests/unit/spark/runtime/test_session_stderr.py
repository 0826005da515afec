"""The driver JVM's standard error as sluice passes it on: every line but the JVM's start-up notice."""

from __future__ import annotations

import io
import os

import pytest

from sluice.spark.runtime.session import _forward_stderr

pytestmark = pytest.mark.unit


def _forwarded(data: bytes) -> bytes:
    read_end, write_end = os.pipe()
    try:
        _forward_stderr(io.BytesIO(data), write_end)
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as out:
        return out.read()


def test_every_line_but_the_incubator_notice_goes_through() -> None:
    data = (b"WARNING: Using incubator modules: jdk.incubator.vector\n"
            b"26/11/27 10:08:01 ERROR TorrentBroadcast: Store broadcast broadcast_0 fail\n"
            b"WARNING: something else\n"
            b"a last line without its newline")
    assert _forwarded(data) == (b"26/11/27 10:08:01 ERROR TorrentBroadcast: Store broadcast broadcast_0 fail\n"
                                b"WARNING: something else\n"
                                b"a last line without its newline")


def test_a_closed_destination_drops_the_lines_and_reads_on() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # writes fail with EPIPE (Python ignores SIGPIPE)
    source = io.BytesIO(b"one\ntwo\nthree\n")
    try:
        _forward_stderr(source, write_end)
    finally:
        os.close(write_end)
    assert source.read() == b""  # read to its end: the JVM never waits on a full pipe
