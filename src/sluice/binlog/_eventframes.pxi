# Included by _rowcore.pyx before _eventrun.pxi: the frame of one event in a run.
#
# The event types a run takes, the C state a run keeps for its steps, the CRC32 check, and the
# header and column bitmaps of a rows event, read from the bytes without a Python object but the
# key of the shape the rows have.

cdef enum:
    T_TABLE_MAP = 19
    T_WRITE_V1 = 23
    T_DELETE_V1 = 25
    T_WRITE_V2 = 30
    T_DELETE_V2 = 32
    T_ANNOTATE_ROWS = 160

_KINDS = ("write", "update", "delete")


cdef struct _Run:
    # What a run knows of its stream and what it has done so far, kept in C for its steps.
    const uint8_t *b
    Py_ssize_t tail             # 4 when events end with a CRC32, else 0
    bint crc, verify            # events carry a CRC32; the parser checks it
    bint tm_ok, v1_ok, v2_ok    # the post-header lengths are the ones read here
    bint lines, columns         # the rows are written as JSON lines / change-log columns
    bint took_map
    Py_ssize_t skipped_rows, skipped_maps, written
    _Buf out                    # the JSON lines written


cdef struct _Rows:
    # One rows event: its frame, kind, table id, where its body is read from, and its column bitmaps.
    Py_ssize_t pos, size, bs, be, q
    int tc, k
    long long tid
    uint64_t present, after


cdef inline bint _crc_bad(const _Run *r, Py_ssize_t pos, Py_ssize_t size) noexcept nogil:
    """Whether the event at ``pos`` has a CRC32 the parser checks and its bytes do not match it."""
    return r.crc and r.verify and _crc32(r.b + pos, size - 4) != _u32(r.b + pos + size - 4)


cdef inline long long _table_id(const uint8_t *p) noexcept nogil:
    return _u32(p) | (<long long>p[4] << 32) | (<long long>p[5] << 40)


cdef inline bint _rows_head(const _Run *r, _Rows *e, int tc, Py_ssize_t pos, Py_ssize_t size) noexcept nogil:
    """Frame the rows event at ``pos``: its kind, table id and where its column count is; False
    when the parser takes it."""
    e.pos = pos
    e.size = size
    e.tc = tc
    e.bs = pos + 19
    e.be = pos + size - r.tail
    if tc >= T_WRITE_V2:
        e.k = tc - T_WRITE_V2
        if not r.v2_ok or e.be - e.bs < 10 or r.b[e.bs + 8] != 2 or r.b[e.bs + 9] != 0:
            return False  # extra data (partition ids, NDB info): the parser reads it
        e.q = e.bs + 10
    else:
        e.k = tc - T_WRITE_V1
        if not r.v1_ok or e.be - e.bs < 8:
            return False
        e.q = e.bs + 8
    if _crc_bad(r, pos, size):
        return False
    e.tid = _table_id(r.b + e.bs)
    return True


cdef object _rows_program(_Rows *e, object plan, const uint8_t *b, int colcount):
    """Read the rows event's column count and bitmaps (``e.q`` then points at its rows) and give
    the compiled program of its shape; None when the parser takes it."""
    cdef Py_ssize_t q = e.q
    cdef int ncols = b[q], nb, i
    cdef uint64_t mask
    q += 1
    if ncols >= 251 or ncols > colcount or colcount > 64:
        return None
    nb = (ncols + 7) >> 3
    if q + nb * (2 if e.k == 1 else 1) > e.be:
        return None
    mask = ~(<uint64_t>0) if colcount == 64 else ((<uint64_t>1 << colcount) - 1)
    e.present = e.after = 0
    for i in range(nb):
        e.present |= <uint64_t>b[q + i] << (8 * i)
    q += nb
    if e.k == 1:
        for i in range(nb):
            e.after |= <uint64_t>b[q + i] << (8 * i)
        q += nb
        key = (_KINDS[e.k], PyLong_FromUnsignedLongLong(e.present & mask),
               PyLong_FromUnsignedLongLong(e.after & mask), False)
    else:
        key = (_KINDS[e.k], PyLong_FromUnsignedLongLong(e.present & mask), None, False)
    e.q = q
    fns = plan._shapes.get(key)
    if fns is None:
        return None
    program = fns[2]
    if type(program) is not RowProgram:
        return None
    return program
