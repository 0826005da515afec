"""The canonical form ``sluice.spark.verify.check`` compares rows in: each row as one compact JSON text of
its values (DECIMALs with their exact digits, binary values as base64, temporal values in ISO form)
and a 16-byte BLAKE2b checksum of that text, the same for a mirror's rows and the source's.
"""

from __future__ import annotations

import base64
import json
from binascii import b2a_base64
from collections.abc import Callable, Iterator, Sequence
from datetime import date, datetime, time
from decimal import Decimal
from hashlib import blake2b
from json.encoder import c_make_encoder as _c_make_encoder  # type: ignore[attr-defined]
from json.encoder import encode_basestring as _encode_basestring
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["canonical_column", "row_checksums"]


def _canonical_default(value: Any) -> Any:
    """JSON form of the values inside a row that JSON has no type for."""
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    raise TypeError(f"no canonical form for {type(value).__name__}")


def _row_encoder() -> Callable[[Any], str]:
    """Compact JSON text of a row (a tuple of values), with ``_canonical_default`` for the rest."""
    if _c_make_encoder is None:
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_canonical_default,
                                allow_nan=True).encode
    # One C encoder for every row: json.JSONEncoder.encode builds a new one on every call.
    enc = _c_make_encoder(None, _canonical_default, _encode_basestring, None, ":", ",", False, False, True)
    join = "".join

    def encode(value: Any) -> str:
        return join(enc(value, 0))

    return encode


_encode = _row_encoder()


def _b64(value: bytes | None) -> str | None:
    return None if value is None else b2a_base64(value, newline=False).decode("ascii")


def canonical_column(array: pa.Array) -> list[Any]:
    """One column's values in their canonical form: DECIMAL and temporal values as Arrow's text of
    them (exact digits, ISO form), binary as base64, the rest as Python values JSON writes exactly
    (integers, floats by their shortest repr, text, lists)."""
    t = array.type
    if pa.types.is_decimal(t) or pa.types.is_temporal(t):
        values: list[Any] = pc.cast(array, pa.string()).to_pylist()
        return values
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return [_b64(v) for v in array.to_pylist()]
    return array.to_pylist()


def _digest(text: str) -> bytes:
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def row_checksums(columns: Sequence[list[Any]], key: tuple[int, ...]) -> Iterator[tuple[str | None, bytes]]:
    """(key text or None, checksum) of each row given column-wise in canonical form."""
    encode, digest = _encode, _digest
    if not key:
        for row in zip(*columns, strict=True):
            yield None, digest(encode(row))
    elif len(key) == 1:
        (k,) = key
        for row in zip(*columns, strict=True):
            yield encode((row[k],)), digest(encode(row))
    else:
        for row in zip(*columns, strict=True):
            yield encode([row[i] for i in key]), digest(encode(row))
