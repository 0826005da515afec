# Included by _rowcore.pyx: MySQL binary JSON to Python values, in C.
#
# The twin is ``sluice.binlog.values.json_binary.parse_json``; this gives the same values for every
# document it takes and raises ``Reject`` on anything malformed (the twin then says what is wrong).
# Opaque values (DECIMAL, temporal, others) are the twin's own ``parse_json_value`` results.

from cpython.dict cimport PyDict_SetItem

from sluice.binlog.values.json_binary import parse_json_value as _json_value_py

cdef enum:
    _JSON_MAX_DEPTH = 150  # json_binary.MAX_DEPTH


cdef inline uint32_t _jle(const uint8_t *p, int n) noexcept nogil:
    cdef uint32_t u = p[0] | (<uint32_t>p[1] << 8)
    if n == 4:
        u |= (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)
    return u


cdef object _json_doc(const uint8_t *b, Py_ssize_t n):
    """A whole JSON column value of ``n`` bytes (empty: JSON null)."""
    if n == 0:
        return None
    return _json_value(b, b[0], 1, n, 0)


cdef object _json_value(const uint8_t *b, int t, Py_ssize_t pos, Py_ssize_t end, int depth):
    cdef Py_ssize_t n, p
    cdef int i, shift
    cdef uint8_t byte
    cdef double d
    if t <= 3:
        if depth > _JSON_MAX_DEPTH:
            raise Reject("json depth")
        return _json_container(b, t, pos, end, depth + 1)
    if t == 0x0C:  # string: a 7-bit variable-length length, then UTF-8
        n = 0
        p = pos
        shift = 0
        for i in range(5):
            if p >= end:
                raise Reject("json length")
            byte = b[p]
            p += 1
            n |= <Py_ssize_t>(byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        else:
            raise Reject("json length")
        if n > end - p:
            raise Reject("json string")
        return PyUnicode_DecodeUTF8(<const char *>b + p, n, NULL)
    if t == 0x04:
        if pos < end:
            if b[pos] == 0:
                return None
            if b[pos] == 1:
                return True
            if b[pos] == 2:
                return False
        raise Reject("json literal")
    if t == 0x05 or t == 0x06:
        if pos + 2 > end:
            raise Reject("json scalar")
        return <int16_t>_jle(b + pos, 2) if t == 0x05 else <long>_jle(b + pos, 2)
    if t == 0x07 or t == 0x08:
        if pos + 4 > end:
            raise Reject("json scalar")
        return <int32_t>_jle(b + pos, 4) if t == 0x07 else <long long>_jle(b + pos, 4)
    if t == 0x09 or t == 0x0A:
        if pos + 8 > end:
            raise Reject("json scalar")
        if t == 0x09:
            return PyLong_FromLongLong(<int64_t>_le(b + pos, 8))
        return PyLong_FromUnsignedLongLong(_le(b + pos, 8))
    if t == 0x0B:
        if pos + 8 > end:
            raise Reject("json scalar")
        memcpy(&d, b + pos, 8)
        return PyFloat_FromDouble(d)
    if t == 0x0F:  # opaque: the twin's own value
        return _json_value_py(t, PyBytes_FromStringAndSize(<const char *>b + pos, end - pos), 0, end - pos, depth)
    raise Reject("json type")


cdef object _json_container(const uint8_t *b, int t, Py_ssize_t base, Py_ssize_t end, int depth):
    cdef bint large = t & 1
    cdef bint is_object = t < 2
    cdef int hdr = 8 if large else 4
    cdef int off_size = 4 if large else 2
    cdef int value_entry = 1 + off_size
    cdef int key_entry = off_size + 2
    cdef Py_ssize_t count, size, cend, entries, keys_size, i, ve, p, koff, klen
    cdef uint32_t x
    cdef int vt
    cdef list values
    cdef dict obj
    if base + hdr > end:
        raise Reject("json container")
    count = _jle(b + base, off_size)
    size = _jle(b + base + off_size, off_size)
    cend = base + size
    if cend > end or size < hdr:
        raise Reject("json container size")
    entries = base + hdr
    keys_size = key_entry * count if is_object else 0
    if entries + keys_size + value_entry * count > cend:
        raise Reject("json container entries")
    values = PyList_New(0)
    for i in range(count):
        ve = entries + keys_size + i * value_entry
        vt = b[ve]
        x = _jle(b + ve + 1, off_size)
        if vt == 0x04:
            x &= 0xFF
            if x == 0:
                values.append(None)
            elif x == 1:
                values.append(True)
            elif x == 2:
                values.append(False)
            else:
                raise Reject("json literal")
        elif vt == 0x05:
            values.append(<int16_t>(x & 0xFFFF))
        elif vt == 0x06:
            values.append(<long>(x & 0xFFFF))
        elif large and vt == 0x07:
            values.append(<int32_t>x)
        elif large and vt == 0x08:
            values.append(<long long>x)
        else:
            if x < <uint32_t>hdr or base + x >= cend:
                raise Reject("json offset")
            values.append(_json_value(b, vt, base + x, cend, depth))
    if not is_object:
        return values
    obj = {}
    for i in range(count):
        koff = _jle(b + entries + i * key_entry, off_size)
        klen = _jle(b + entries + i * key_entry + off_size, 2)
        if koff < hdr or base + koff + klen > cend:
            raise Reject("json key")
        PyDict_SetItem(obj, PyUnicode_DecodeUTF8(<const char *>b + base + koff, klen, NULL), values[i])
    return obj


def parse_json(bytes data):
    """``json_binary.parse_json(data)`` in C; ``Reject`` where the twin must decide."""
    return _json_doc(<const uint8_t *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
