"""The interval lists a MySQL GTID set keeps per ``(uuid, tag)``: sorted, merged, closed ranges of
transaction numbers, their arithmetic (merge, difference, membership) and their binary form (the
interval count and half-open ``[start, end)`` pairs of ``Gtid_set::encode`` in sql/rpl_gtid_set.cc).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

GNO_MAX = (1 << 63) - 1
_U64 = struct.Struct("<Q")
_U64X2 = struct.Struct("<QQ")

Interval = tuple[int, int]  # closed: (first, last)


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """The intervals sorted, with overlapping and adjacent ones joined."""
    out: list[Interval] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1] + 1:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def subtract(xs: list[Interval], ys: list[Interval]) -> list[Interval]:
    """The numbers of ``xs`` that are not in ``ys`` (both merged), merged."""
    out: list[Interval] = []
    j = 0
    for a, b in xs:
        while j < len(ys) and ys[j][1] < a:
            j += 1
        k = j
        cur = a
        while k < len(ys) and ys[k][0] <= b:
            ya, yb = ys[k]
            if ya > cur:
                out.append((cur, ya - 1))
            cur = max(cur, yb + 1)
            if cur > b:
                break
            k += 1
        if cur <= b:
            out.append((cur, b))
    return out


def contains(ivs: list[Interval], gno: int) -> bool:
    """Whether ``gno`` is in the merged intervals ``ivs`` (a binary search)."""
    lo, hi = 0, len(ivs)
    while lo < hi:
        mid = (lo + hi) // 2
        if ivs[mid][1] < gno:
            lo = mid + 1
        else:
            hi = mid
    return lo < len(ivs) and ivs[lo][0] <= gno


def encode(ivs: Sequence[Interval]) -> bytes:
    """The interval count, then each interval as ``[first, last + 1)``."""
    out = bytearray(_U64.pack(len(ivs)))
    for a, b in ivs:
        out += _U64X2.pack(a, b + 1)
    return bytes(out)


def decode(buf: bytes | memoryview, pos: int, end: int) -> tuple[list[Interval], int]:
    """Inverse of ``encode`` from ``buf[pos:]``, which must not run past ``end``: the closed
    intervals and the offset after them."""
    (count,) = _U64.unpack_from(buf, pos)
    pos += 8
    if pos + 16 * count > end:
        raise ValueError(f"GTID set declares {count} intervals, the buffer holds fewer")
    ivs: list[Interval] = []
    for _ in range(count):
        a, b = _U64X2.unpack_from(buf, pos)
        pos += 16
        if not 1 <= a < b or b - 1 > GNO_MAX:
            raise ValueError(f"invalid GTID interval [{a}, {b})")
        ivs.append((a, b - 1))
    return ivs, pos
