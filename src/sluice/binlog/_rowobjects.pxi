# Included by _rowcore.pyx: one column value's bytes to its Python object.
#
# Integers read little- or big-endian and widened from two's complement, FLOAT and DOUBLE, the
# member tuple of a SET mask, and a var column's bytes in its conversion (UTF-8, a codec, a
# charmap, right-padded binary, MySQL binary JSON or a Python function); ``_set_item`` puts a value
# into a row tuple in place of the borrowed placeholder it holds.

cdef object _set_members(tuple spec, uint64_t mask, int count):
    """The member tuple of a SET mask (``spec``: the members and a cache of the masks seen)."""
    cdef dict seen = <dict>spec[1]
    cdef int i
    key = PyLong_FromUnsignedLongLong(mask)
    value = seen.get(key)
    if value is not None:
        return value
    if count < 64 and mask >> count:
        raise Reject("SET member beyond the defined ones")
    members = <tuple>spec[0]
    value = tuple([members[i] for i in range(count) if mask >> i & 1])
    if len(seen) < 4096:
        seen[key] = value
    return value


cdef inline void _set_item(object row, int i, object v):
    Py_INCREF(v)
    _replace(row, i, v)


cdef extern from *:
    """
    static inline void sluice_tuple_replace(PyObject *t, Py_ssize_t i, PyObject *v) {
        PyObject *old = PyTuple_GET_ITEM(t, i);
        PyTuple_SET_ITEM(t, i, v);
        Py_XDECREF(old);
    }
    """
    void _replace "sluice_tuple_replace" (object t, Py_ssize_t i, object v)


cdef inline uint64_t _le(const uint8_t *p, int n) noexcept nogil:
    cdef uint64_t u = 0
    cdef int i
    for i in range(n - 1, -1, -1):
        u = u << 8 | p[i]
    return u


cdef inline int64_t _signed(uint64_t u, int n) noexcept nogil:
    """An ``n``-byte two's-complement integer read by ``_le``, widened to 64 bits."""
    if n < 8 and u >> (8 * n - 1):
        return <int64_t>u - (<int64_t>1 << (8 * n))
    return <int64_t>u


cdef inline uint64_t _be(const uint8_t *p, int n) noexcept nogil:
    cdef uint64_t u = 0
    cdef int i
    for i in range(n):
        u = u << 8 | p[i]
    return u


cdef object _float(const uint8_t *p, int n):
    cdef float f
    cdef double d
    cdef uint8_t tmp[8]
    cdef int i
    # The binlog is little-endian; so is every platform sluice builds on, checked at import.
    if n == 4:
        memcpy(&f, p, 4)
        return PyFloat_FromDouble(<double>f)
    memcpy(&d, p, 8)
    return PyFloat_FromDouble(d)


cdef object _convert(RowProgram prog, const uint8_t *p, Py_ssize_t length, Col *c, int k):
    cdef int conv = c.conv
    cdef object raw
    if conv == CONV_UTF8:
        try:
            return PyUnicode_DecodeUTF8(<const char *>p, length, NULL)
        except UnicodeDecodeError:
            raise Reject("text")
    if conv == CONV_BYTES:
        return PyBytes_FromStringAndSize(<const char *>p, length)
    if conv == CONV_BINPAD:
        if length >= c.pad:
            return PyBytes_FromStringAndSize(<const char *>p, length)
        raw = PyBytes_FromStringAndSize(NULL, c.pad)
        memcpy(PyBytes_AS_STRING(raw), p, length)
        memset(PyBytes_AS_STRING(raw) + length, 0, c.pad - length)
        return raw
    if conv == CONV_CODEC:
        try:
            return PyUnicode_Decode(<const char *>p, length, c.codec, NULL)
        except UnicodeDecodeError:
            raise Reject("text")
    if conv == CONV_CHARMAP:
        try:
            return PyUnicode_DecodeCharmap(<const char *>p, length, prog.objs[k], NULL)
        except UnicodeDecodeError:
            raise Reject("text")
    if conv == CONV_JSON:
        return _json_doc(p, length)
    return prog.objs[k](PyBytes_FromStringAndSize(<const char *>p, length))
