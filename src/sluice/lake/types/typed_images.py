"""A table's row images as the compiled core typed them (``TypedImages``), as Arrow arrays.

``ChangeRows`` keeps, beside the change log's JSON images, each table's images column by column:
integers as int64, FLOAT and DOUBLE as float64, binary strings as their bytes and every value whose
JSON form is a string as that string's text (``binlog/_typedimages.pxi``). ``TypedRows`` puts the
pieces a range's batches hold together, in binlog order, as the arrays
``sluice.lake.mirror.merge_source.typed_merge_source`` reads instead of parsing the JSON images back.
Without the compiled core there are none, and the JSON images are parsed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["TypedRows", "string_array", "typed_rows"]

_INT, _TEXT, _NONE, _DOUBLE, _BYTES = 1, 2, 3, 4, 5  # the core's kinds of a typed column (0: only NULLs)


@dataclass(frozen=True, slots=True)
class TypedRows:
    """One table's changes: ``ops`` (0 insert, 1 update, 2 delete, binlog order), the after images
    of inserts and updates and the before images of updates and deletes, by column name: the
    columns whose every value has a typed form (a JSON document as the text its JSON image holds)."""

    ops: np.ndarray
    after: dict[str, pa.Array]
    before: dict[str, pa.Array]


def _array(kind: int, length: int, valid: Any, offsets: Any, data: Any) -> pa.Array | None:
    if kind == _NONE:
        return None  # a value without a typed form: the column was not kept
    if kind == 0:
        return pa.nulls(length)
    if kind in (_INT, _DOUBLE):
        bitmap, nulls = _validity(length, valid)
        return pa.Array.from_buffers(pa.int64() if kind == _INT else pa.float64(), length,
                                     [bitmap, pa.py_buffer(data)], null_count=nulls)
    return _with_offsets(pa.string() if kind == _TEXT else pa.binary(), length, valid, offsets, data)


def _validity(length: int, valid: Any) -> tuple[pa.Buffer | None, int]:
    flags = np.frombuffer(valid, dtype=np.uint8)
    nulls = length - int(np.count_nonzero(flags))
    return (pa.py_buffer(np.packbits(flags, bitorder="little").tobytes()) if nulls else None), nulls


def string_array(length: int, valid: Any, offsets: Any, data: Any) -> pa.Array:
    """A ``pa.string()`` array from the compiled core's buffers: a validity byte per value (0:
    NULL), int32 offsets and the UTF-8 text."""
    return _with_offsets(pa.string(), length, valid, offsets, data)


def _with_offsets(kind: pa.DataType, length: int, valid: Any, offsets: Any, data: Any) -> pa.Array:
    bitmap, nulls = _validity(length, valid)
    return pa.Array.from_buffers(kind, length, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls)


def _column(pieces: list[pa.Array | None]) -> pa.Array | None:
    if any(p is None for p in pieces):
        return None
    kinds = {p.type for p in pieces if p is not None and p.type != pa.null()}
    if len(kinds) > 1:
        return None  # a column typed one way in one piece and another way in the next
    kind = kinds.pop() if kinds else pa.null()
    return pa.concat_arrays([p if p.type == kind else pa.nulls(len(p), kind) for p in pieces if p is not None])


def typed_rows(pieces: Iterable[Any], changes: int) -> TypedRows | None:
    """The ``TypedImages`` of one table from consecutive batches, together; None when any is
    ``failed``, their images differ in shape, or they do not hold all ``changes`` of the table
    (some of its rows were made another way)."""
    parts = list(pieces)
    if not parts or any(p.failed for p in parts) or sum(p.length for p in parts) != changes:
        return None
    keys = parts[0].keys
    if any(p.keys != keys for p in parts):
        return None
    names = [json.loads(k[:-1]) for k in keys]  # each key is the column's JSON name and a colon
    if len(set(names)) != len(names):
        return None
    buffers = [p.buffers() for p in parts]
    ops = np.frombuffer(b"".join(b[0] for b in buffers), dtype=np.uint8)
    images: list[dict[str, pa.Array]] = []
    for side in (1, 2):
        columns: dict[str, pa.Array] = {}
        for j, name in enumerate(names):
            column = _column([_array(*b[side][j]) for b in buffers])
            if column is not None:  # else a value had no typed form, or the pieces differ in kind
                columns[name] = column
        images.append(columns)
    return TypedRows(ops, images[0], images[1])

