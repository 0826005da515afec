# Included by _rowcore.pyx: a snapshot chunk's text rows cut into one binary column per result-set
# column, in C.
#
# The twin is ``sluice.spark.snapshot.text_rows.split_rows`` (numpy, one column of all rows at a time).
# Each row is a run of length-encoded strings (``0xFB`` SQL NULL; ``0xFC``/``0xFD``/``0xFE`` before
# a 2-, 3- or 8-byte length). A first walk over every row checks every prefix and length against
# its row's end and sums each column's bytes, raising ``ProtocolError`` with the twin's messages; the
# second copies each value once into its column's buffer, sized exactly, with Arrow's offsets and
# validity bitmap beside it. Nothing is read outside a block.

from sluice.errors import ProtocolError as _ProtocolError

cdef int _text_row_error(str message) except -1:
    raise _ProtocolError(message)


cdef inline Py_ssize_t _text_value(const uint8_t *b, Py_ssize_t p, Py_ssize_t e, int c, int ncolumns,
                                   Py_ssize_t *start, bint *null) except -2:
    """The value of column ``c`` at ``b[p:e]`` (``p`` inside its row, ``e`` the row's end): its
    start in ``*start``, whether it is NULL, and its length."""
    cdef uint8_t first
    cdef int width, k
    cdef uint64_t value
    if p >= e:
        _text_row_error(f"text row: expected {ncolumns} values, found {c}")
    first = b[p]
    null[0] = first == 0xFB
    if first <= 0xFB:
        start[0] = p + 1
        return 0 if first == 0xFB else first
    if first == 0xFF:
        _text_row_error(f"text row: column {c} starts with 0xFF, which is not a length prefix")
    width = 2 if first == 0xFC else (3 if first == 0xFD else 8)
    if p + 1 + width > e:
        _text_row_error(f"text row: the length prefix of column {c} runs past the row")
    value = 0
    for k in range(width):
        value |= (<uint64_t>b[p + 1 + k]) << (8 * k)
    if value > 0x7FFFFFFF:
        _text_row_error(f"text row: a value of column {c} claims more than 2 GiB")
    start[0] = p + 1 + width
    return <Py_ssize_t>value


def text_columns(list blocks, int ncolumns):
    """``(rows, columns)``: the text rows of ``ncolumns`` values each in ``blocks`` (each a pair of
    the rows back to back and where each ends, little-endian int64s) cut into columns, each
    ``(validity, offsets, data, null_count, large)``: Arrow binary buffers (``validity`` None when
    nothing is NULL; ``offsets`` int64 when ``large``, when a column holds more than 2 GiB, else int32)."""
    cdef Py_ssize_t nblocks = len(blocks), bi, r, nrows = 0, total = 0, p, e, start, length, prev
    cdef Py_ssize_t *sizes = NULL
    cdef Py_ssize_t *nulls = NULL
    cdef const uint8_t *b
    cdef const int64_t *ends
    cdef Py_ssize_t nends, blen
    cdef bint null
    cdef int c
    cdef list out
    if ncolumns < 0:
        raise ValueError("text_columns: a negative column count")
    for bi in range(nblocks):
        block, block_ends = blocks[bi]
        nends = PyBytes_GET_SIZE(<bytes?>block_ends)
        if nends % 8:
            raise ValueError("text_columns: row ends are int64s")
        nrows += nends // 8
    sizes = <Py_ssize_t *>PyMem_Malloc((ncolumns + 1) * sizeof(Py_ssize_t))
    nulls = <Py_ssize_t *>PyMem_Malloc((ncolumns + 1) * sizeof(Py_ssize_t))
    if sizes == NULL or nulls == NULL:
        PyMem_Free(sizes)
        PyMem_Free(nulls)
        raise MemoryError()
    try:
        memset(sizes, 0, (ncolumns + 1) * sizeof(Py_ssize_t))
        memset(nulls, 0, (ncolumns + 1) * sizeof(Py_ssize_t))
        # First walk: every prefix and length checked, each column's bytes and NULLs counted.
        for bi in range(nblocks):
            block, block_ends = blocks[bi]
            b = <const uint8_t *>PyBytes_AS_STRING(<bytes?>block)
            blen = PyBytes_GET_SIZE(block)
            ends = <const int64_t *>PyBytes_AS_STRING(block_ends)
            nends = PyBytes_GET_SIZE(block_ends) // 8
            if nends and ends[nends - 1] != blen:
                _text_row_error("text rows: a block's row ends do not fit the block")
            prev = 0
            for r in range(nends):
                e = ends[r]
                if e < prev:
                    _text_row_error("text rows: a block's row ends do not fit the block")
                p = prev
                for c in range(ncolumns):
                    length = _text_value(b, p, e, c, ncolumns, &start, &null)
                    if length > e - start:
                        _text_row_error(f"text row: a value of column {c} runs past its row")
                    sizes[c] += length
                    nulls[c] += null
                    p = start + length
                if p != e:
                    _text_row_error(f"text row: bytes left after {ncolumns} values")
                prev = e
        return nrows, _text_fill(blocks, ncolumns, nrows, sizes, nulls)
    finally:
        PyMem_Free(sizes)
        PyMem_Free(nulls)


cdef struct _TextCol:
    char *data
    char *offsets
    uint8_t *valid
    Py_ssize_t at
    bint large


cdef inline void _text_offset(_TextCol *col, Py_ssize_t i) noexcept:
    cdef int32_t at32
    cdef int64_t at64
    if col.large:
        at64 = col.at
        memcpy(col.offsets + i * 8, &at64, 8)
    else:
        at32 = <int32_t>col.at
        memcpy(col.offsets + i * 4, &at32, 4)


cdef list _text_fill(list blocks, int ncolumns, Py_ssize_t nrows, const Py_ssize_t *sizes,
                     const Py_ssize_t *nulls):
    """Second walk, over rows the first walk checked: every value copied into its column."""
    cdef _TextCol *cols = <_TextCol *>PyMem_Malloc((ncolumns + 1) * sizeof(_TextCol))
    cdef Py_ssize_t i = 0, r, p, e, start, length, prev, nends, nbits = (nrows + 7) // 8
    cdef const uint8_t *b
    cdef const int64_t *ends
    cdef bint null
    cdef int c
    cdef list out = []
    if cols == NULL:
        raise MemoryError()
    try:
        for c in range(ncolumns):
            cols[c].large = sizes[c] > 0x7FFFFFFF
            data = PyBytes_FromStringAndSize(NULL, sizes[c])
            offsets = PyBytes_FromStringAndSize(NULL, (nrows + 1) * (8 if cols[c].large else 4))
            validity = PyBytes_FromStringAndSize(NULL, nbits) if nulls[c] else None
            cols[c].data = PyBytes_AS_STRING(data)
            cols[c].offsets = PyBytes_AS_STRING(offsets)
            cols[c].valid = NULL
            cols[c].at = 0
            if validity is not None:
                cols[c].valid = <uint8_t *>PyBytes_AS_STRING(validity)
                memset(cols[c].valid, 0, nbits)
            out.append((validity, offsets, data, nulls[c], cols[c].large))
        for block, block_ends in blocks:
            b = <const uint8_t *>PyBytes_AS_STRING(block)
            ends = <const int64_t *>PyBytes_AS_STRING(block_ends)
            nends = PyBytes_GET_SIZE(block_ends) // 8
            prev = 0
            for r in range(nends):
                e = ends[r]
                p = prev
                for c in range(ncolumns):
                    length = _text_value(b, p, e, c, ncolumns, &start, &null)
                    _text_offset(&cols[c], i)
                    if cols[c].valid != NULL and not null:
                        cols[c].valid[i >> 3] |= <uint8_t>(1 << (i & 7))
                    memcpy(cols[c].data + cols[c].at, b + start, length)
                    cols[c].at += length
                    p = start + length
                i += 1
                prev = e
        for c in range(ncolumns):
            _text_offset(&cols[c], i)
        return out
    finally:
        PyMem_Free(cols)
