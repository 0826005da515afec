"""Framing: where the whole events of a byte buffer end, read from their common headers.

A reader that takes a binlog in blocks (``sluice.io.binlog_file.iter_raw_blocks``) hands on only
whole events; this walks the 19-byte headers to find where they end. The compiled core does it in
C when it is in use; the loop below is its twin.
"""

from __future__ import annotations

import struct

from sluice.binlog import rowplan
from sluice.binlog.header import HEADER_LEN

__all__ = ["whole_events"]

_SIZE = struct.Struct("<I").unpack_from
_SIZE_OFFSET = 9  # event size inside the common header


def whole_events(buf: bytes, pos: int, limit: int) -> tuple[int, int]:
    """``(end, bad)``: walking the events of ``buf`` from ``pos`` that start before ``limit``, the
    end of the last one that lies whole in ``buf``; ``bad`` is the offset of an event whose header
    declares fewer than 19 bytes (the walk stops there), or -1."""
    core = rowplan.core()
    if core is not None:
        end, bad = core.whole_events(buf, pos, limit)
        return end, bad
    if pos < 0:
        raise ValueError("negative start")
    n = len(buf)
    while pos < limit and n - pos >= HEADER_LEN:
        (size,) = _SIZE(buf, pos + _SIZE_OFFSET)
        if size < HEADER_LEN:
            return pos, pos
        if size > n - pos:
            break
        pos += size
    return pos, -1
