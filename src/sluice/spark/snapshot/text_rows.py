"""Text rows split into one Arrow binary column per result-set column, all rows at once.

A snapshot chunk's ``SELECT`` answers with tens of thousands of text rows, each a run of
length-encoded strings (``0xFB`` for SQL NULL, ``0xFC``/``0xFD``/``0xFE`` before a 2-, 3- or 8-byte
length; ``sql/protocol_classic.cc``), exactly what ``sluice.wire.resultset.parse_text_row`` reads
one row at a time. ``split_rows`` walks all rows together instead. They arrive in blocks, rows back
to back with where each ends (``RawResultSet.blocks``, cut from the socket's buffer in C, no object
per row); the blocks are joined into one buffer, and per column numpy finds every row's value
start and length from the previous column's end, so the Python work is per column, not per value.
The values become a ``pa.binary()`` array without copying them one by one: an array over the
joined buffer whose elements alternate between the values and the bytes between them, from which
Arrow takes every other element. Malformed rows raise ``ProtocolError`` as ``parse_text_row`` does.

That is the twin: where the compiled core was built, its ``text_columns`` (``_textrows.pxi``) walks
the rows once to check them and once to copy each value into its column, with the same errors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from sluice.binlog import rowplan
from sluice.errors import ProtocolError

__all__ = ["split_rows"]

_NULL, _TWO, _THREE, _EIGHT = 0xFB, 0xFC, 0xFD, 0xFE
_INT32_MAX = 2**31 - 1


def _lengths(buf: np.ndarray, pos: np.ndarray, first: np.ndarray, ends: np.ndarray,
             column: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of the values at ``pos`` whose first byte ``first`` is a length prefix."""
    start = pos + 1
    length = first.copy()
    length[first == _NULL] = 0
    big = np.nonzero(first > _NULL)[0]
    if big.size:
        if (first[big] == 0xFF).any():
            raise ProtocolError(f"text row: column {column} starts with 0xFF, which is not a length prefix")
        for code, width in ((_TWO, 2), (_THREE, 3), (_EIGHT, 8)):
            rows = big[first[big] == code]
            if not rows.size:
                continue
            at = pos[rows] + 1
            if (at + width > ends[rows]).any():
                raise ProtocolError(f"text row: the length prefix of column {column} runs past the row")
            value = np.zeros(rows.size, dtype=np.uint64)
            for b in range(width):
                value |= buf[at + b].astype(np.uint64) << np.uint64(8 * b)
            if (value > np.uint64(_INT32_MAX)).any():
                raise ProtocolError(f"text row: a value of column {column} claims more than 2 GiB")
            length[rows] = value.astype(np.int64)
            start[rows] = at + width
    return start, length


def split_rows(blocks: Sequence[tuple[bytes, bytes]], ncolumns: int) -> list[pa.Array]:
    """The values of the text rows of ``ncolumns`` values each in ``blocks`` (each block: rows back to
    back, and where each ends as little-endian int64s) as one ``pa.binary()`` array per column (null
    for SQL NULL): column ``c`` holds the bytes ``parse_text_row`` decodes."""
    core = rowplan.core()
    if core is not None:
        n, columns = core.text_columns(list(blocks), ncolumns)
        return [_binary(n, *column) for column in columns]
    row_ends = []
    base = 0
    for block, block_ends in blocks:
        at = np.frombuffer(block_ends, dtype="<i8")
        if at.size and (at[-1] != len(block) or (np.diff(at) < 0).any() or at[0] < 0):
            raise ProtocolError("text rows: a block's row ends do not fit the block")
        row_ends.append(at + base)
        base += len(block)
    n = sum(e.size for e in row_ends)
    if not n:
        return [pa.array([], pa.binary()) for _ in range(ncolumns)]
    joined = blocks[0][0] if len(blocks) == 1 else b"".join(b for b, _ in blocks)
    buf = np.frombuffer(joined, dtype=np.uint8)
    ends = np.concatenate(row_ends)
    pos = np.concatenate([[0], ends[:-1]])
    large = len(joined) > _INT32_MAX
    offset_type = np.int64 if large else np.int32
    binary = pa.large_binary() if large else pa.binary()
    data = pa.py_buffer(joined)
    every_other = pa.array(np.arange(0, 2 * n, 2, dtype=np.int64))
    out = []
    for c in range(ncolumns):
        if (pos >= ends).any():
            raise ProtocolError(f"text row: expected {ncolumns} values, found {c}")
        first = buf[pos].astype(np.int64)
        start, length = _lengths(buf, pos, first, ends, c)
        stop = start + length
        if (stop > ends).any():
            raise ProtocolError(f"text row: a value of column {c} runs past its row")
        # Elements 2i are the values, 2i+1 the bytes up to the next row's value (offsets ascend).
        offsets = np.empty(2 * n + 1, dtype=offset_type)
        offsets[0:2 * n:2] = start
        offsets[1:2 * n:2] = stop
        offsets[2 * n] = stop[-1]
        valid = np.ones(2 * n, dtype=bool)
        valid[0::2] = first != _NULL
        validity = pa.array(valid).buffers()[1] if not valid.all() else None
        spans = pa.Array.from_buffers(binary, 2 * n, [validity, pa.py_buffer(offsets), data])
        values = spans.take(every_other)
        out.append(values.cast(pa.binary()) if large else values)
        pos = stop
    if (pos != ends).any():
        raise ProtocolError(f"text row: bytes left after {ncolumns} values")
    return out


def _binary(n: int, validity: bytes | None, offsets: bytes, data: bytes, null_count: int, large: bool) -> pa.Array:
    """A binary array of ``n`` values over the compiled core's buffers (``large``: int64 offsets)."""
    buffers = [None if validity is None else pa.py_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(data)]
    if large:
        return pa.Array.from_buffers(pa.large_binary(), n, buffers, null_count).cast(pa.binary())
    return pa.Array.from_buffers(pa.binary(), n, buffers, null_count)
