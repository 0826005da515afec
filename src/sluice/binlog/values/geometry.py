"""GEOMETRY and VECTOR column values.

A GEOMETRY value is the server's internal form: a 4-byte little-endian SRID followed by the WKB
(``sql/spatial.h``); sluice keeps both as a frozen :class:`Geometry`. A VECTOR value (MySQL 9) is a
sequence of little-endian float32 numbers and becomes a tuple of Python floats.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass

__all__ = ["Geometry", "decode_geometry", "decode_vector"]


@dataclass(frozen=True, slots=True)
class Geometry:
    """A spatial value: its spatial reference system id and its well-known binary."""

    srid: int
    wkb: bytes


def decode_geometry(data: bytes) -> Geometry:
    """A GEOMETRY value (SRID u32, then WKB) -> ``Geometry``."""
    if len(data) < 4:
        raise ValueError(f"GEOMETRY value of {len(data)} bytes is shorter than its 4-byte SRID")
    return Geometry(int.from_bytes(data[:4], "little"), bytes(data[4:]))


_LITTLE = sys.byteorder == "little"


def decode_vector(data: bytes) -> tuple[float, ...]:
    """A VECTOR value (little-endian float32s) -> tuple of floats."""
    if len(data) % 4:
        raise ValueError(f"VECTOR value of {len(data)} bytes is not a whole number of float32")
    if _LITTLE:
        return tuple(memoryview(data).cast("f"))
    return struct.unpack(f"<{len(data) // 4}f", data)
