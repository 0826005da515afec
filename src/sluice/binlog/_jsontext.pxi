# Included by _rowcore.pyx: MySQL's printed JSON documents (a snapshot chunk's text rows) as
# sluice's JSON text of the same values, in C.
#
# The reference is the per-value path of ``sluice.spark.snapshot.chunk_arrow``: ``json.loads`` with
# ``sluice.cdc.textvalues.json_number`` for a number that is not an integer, then
# ``sluice.lake.types.mirror_columns.json_text`` (compact, non-ASCII kept, a DECIMAL as its printed digits).
# ``json_texts`` walks each document once and writes that text: whitespace dropped; strings with
# their escapes resolved and written again as ``_out_utf8`` writes them; integers as Python prints
# them; any other number as its double's shortest text when that is its printed text or it has an
# exponent, else as the printed digits of a DECIMAL. A document it cannot be sure of (text that is
# not JSON or not UTF-8, a lone surrogate, a key twice in an object or an object of more than 64
# keys, a number only ``Decimal`` can tell a double from, nesting past 64) makes it return None:
# the caller then takes the per-value path, which also says what is wrong. Nothing is read outside
# the column's buffers.

from libc.string cimport memcmp, strchr
from cpython.ref cimport PyObject


cdef extern from "Python.h":
    double PyOS_string_to_double(const char *s, char **endptr, PyObject *overflow_exception) except? -1.0


cdef enum:
    _JSON_DEPTH = 64
    _JSON_KEYS = 64


cdef inline Py_ssize_t _jws(const uint8_t *b, Py_ssize_t p, Py_ssize_t e) noexcept nogil:
    while p < e and (b[p] == 32 or b[p] == 10 or b[p] == 13 or b[p] == 9):
        p += 1
    return p


cdef inline int _jhex4(const uint8_t *b, Py_ssize_t p, Py_ssize_t e) noexcept nogil:
    """The four hex digits at ``p``, or -1."""
    cdef int v = 0, k, c
    if p + 4 > e:
        return -1
    for k in range(4):
        c = b[p + k]
        if 48 <= c <= 57:
            v = v * 16 + c - 48
        elif 97 <= c <= 102:
            v = v * 16 + c - 87
        elif 65 <= c <= 70:
            v = v * 16 + c - 55
        else:
            return -1
    return v


cdef int _jcode_point(_Buf *o, int u) except -1:
    """Code point ``u`` (not a surrogate) as UTF-8."""
    cdef char enc[4]
    if u < 0x80:
        enc[0] = <char>u
        return _out(o, enc, 1)
    if u < 0x800:
        enc[0] = <char>(0xC0 | (u >> 6))
        enc[1] = <char>(0x80 | (u & 0x3F))
        return _out(o, enc, 2)
    if u < 0x10000:
        enc[0] = <char>(0xE0 | (u >> 12))
        enc[1] = <char>(0x80 | ((u >> 6) & 0x3F))
        enc[2] = <char>(0x80 | (u & 0x3F))
        return _out(o, enc, 3)
    enc[0] = <char>(0xF0 | (u >> 18))
    enc[1] = <char>(0x80 | ((u >> 12) & 0x3F))
    enc[2] = <char>(0x80 | ((u >> 6) & 0x3F))
    enc[3] = <char>(0x80 | (u & 0x3F))
    return _out(o, enc, 4)


cdef Py_ssize_t _jstring(const uint8_t *b, Py_ssize_t p, Py_ssize_t e, _Buf *tmp) except -2:
    """The string whose opening quote is at ``p``: its text, escapes resolved, into ``tmp``; the
    position after its closing quote, or -1 where not sure."""
    cdef Py_ssize_t run
    cdef int c, u, low
    tmp.size = 0
    p += 1
    run = p
    while p < e:
        c = b[p]
        if c == 34:  # '"'
            _out(tmp, <const char *>b + run, p - run)
            if not _utf8_valid(<const uint8_t *>tmp.data, tmp.size):
                return -1
            return p + 1
        if c < 0x20:
            return -1  # a raw control byte: not JSON
        if c != 92:  # '\\'
            p += 1
            continue
        _out(tmp, <const char *>b + run, p - run)
        if p + 1 >= e:
            return -1
        c = b[p + 1]
        p += 2
        if c == 34 or c == 92 or c == 47:
            _jcode_point(tmp, c)
        elif c == 98:
            _jcode_point(tmp, 8)
        elif c == 102:
            _jcode_point(tmp, 12)
        elif c == 110:
            _jcode_point(tmp, 10)
        elif c == 114:
            _jcode_point(tmp, 13)
        elif c == 116:
            _jcode_point(tmp, 9)
        elif c == 117:  # 'u'
            u = _jhex4(b, p, e)
            if u < 0:
                return -1
            p += 4
            if 0xD800 <= u <= 0xDBFF:
                if p + 6 > e or b[p] != 92 or b[p + 1] != 117:
                    return -1
                low = _jhex4(b, p + 2, e)
                if low < 0xDC00 or low > 0xDFFF:
                    return -1
                u = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00)
                p += 6
            elif 0xDC00 <= u <= 0xDFFF:
                return -1
            _jcode_point(tmp, u)
        else:
            return -1
        run = p
    return -1


cdef inline Py_ssize_t _jdigits(const uint8_t *b, Py_ssize_t p, Py_ssize_t e) noexcept nogil:
    while p < e and 48 <= b[p] <= 57:
        p += 1
    return p


cdef Py_ssize_t _jnumber(const uint8_t *b, Py_ssize_t p, Py_ssize_t e, _Buf *o) except -2:
    """The number at ``p`` written as the reference writes it; the position after it, or -1."""
    cdef Py_ssize_t s = p, n, q
    cdef bint fraction = False, exponent = False
    cdef char text[64]
    cdef char *shortest
    cdef double d
    cdef int result
    if p < e and b[p] == 45:
        p += 1
    if p >= e:
        return -1
    if b[p] == 48:
        p += 1
    elif 49 <= b[p] <= 57:
        p = _jdigits(b, p, e)
    else:
        return -1
    if p < e and b[p] == 46:
        fraction = True
        q = _jdigits(b, p + 1, e)
        if q == p + 1:
            return -1
        p = q
    if p < e and (b[p] == 101 or b[p] == 69):
        exponent = True
        p += 1
        if p < e and (b[p] == 43 or b[p] == 45):
            p += 1
        q = _jdigits(b, p, e)
        if q == p:
            return -1
        p = q
    n = p - s
    if not fraction and not exponent:  # an integer: Python prints its digits, and -0 as 0
        if n == 2 and b[s] == 45 and b[s + 1] == 48:
            _out(o, b"0", 1)
        else:
            _out(o, <const char *>b + s, n)
        return p
    if n >= 64:
        return -1
    memcpy(text, b + s, n)
    text[n] = 0
    d = PyOS_string_to_double(text, NULL, NULL)
    if exponent:  # a DECIMAL never prints with an exponent: a double
        _out_double(o, d)
        return p
    shortest = PyOS_double_to_string(d, b'r', 0, Py_DTSF_ADD_DOT_0, NULL)
    try:
        if <Py_ssize_t>strlen(shortest) == n and memcmp(shortest, text, n) == 0:
            result = 0  # a double's shortest text
        elif strchr(shortest, 101) != NULL and (text[n - 1] != 48 or text[n - 2] == 46):
            result = -1  # a double written out in full, or a DECIMAL: Decimal tells
        else:
            result = 1  # a DECIMAL: its printed digits
        if result == 0:
            _out(o, shortest, n)
        elif result == 1:
            _out(o, text, n)
    finally:
        PyMem_Free(shortest)
    return -1 if result < 0 else p


cdef Py_ssize_t _jvalue(const uint8_t *b, Py_ssize_t p, Py_ssize_t e, _Buf *o, _Buf *tmp,
                        int depth) except -2:
    """The value at ``p`` (after any whitespace) written to ``o``; the position after it, or -1."""
    cdef Py_ssize_t q, mark
    cdef Py_ssize_t key_at[_JSON_KEYS]
    cdef Py_ssize_t key_len[_JSON_KEYS]
    cdef int keys = 0, k, c
    p = _jws(b, p, e)
    if p >= e:
        return -1
    c = b[p]
    if c == 123 or c == 91:  # '{' or '['
        if depth >= _JSON_DEPTH:
            return -1
        _out(o, <const char *>b + p, 1)
        p = _jws(b, p + 1, e)
        if p < e and b[p] == c + 2:  # '}' or ']'
            _out(o, <const char *>b + p, 1)
            return p + 1
        while True:
            if c == 123:
                if p >= e or b[p] != 34 or keys == _JSON_KEYS:
                    return -1
                q = _jstring(b, p, e, tmp)
                if q < 0:
                    return -1
                mark = o.size
                _out_utf8(o, tmp.data, tmp.size)
                for k in range(keys):  # a key twice: the reference keeps one, where it was first
                    if key_len[k] == o.size - mark and memcmp(o.data + key_at[k], o.data + mark, key_len[k]) == 0:
                        return -1
                key_at[keys] = mark
                key_len[keys] = o.size - mark
                keys += 1
                p = _jws(b, q, e)
                if p >= e or b[p] != 58:  # ':'
                    return -1
                _out(o, b":", 1)
                p += 1
            p = _jvalue(b, p, e, o, tmp, depth + 1)
            if p < 0:
                return -1
            p = _jws(b, p, e)
            if p >= e:
                return -1
            if b[p] == 44:  # ','
                _out(o, b",", 1)
                p = _jws(b, p + 1, e)
                continue
            if b[p] != c + 2:
                return -1
            _out(o, <const char *>b + p, 1)
            return p + 1
    if c == 34:
        q = _jstring(b, p, e, tmp)
        if q >= 0:
            _out_utf8(o, tmp.data, tmp.size)
        return q
    if c == 116 and p + 4 <= e and memcmp(<const char *>b + p, b"true", 4) == 0:
        _out(o, b"true", 4)
        return p + 4
    if c == 102 and p + 5 <= e and memcmp(<const char *>b + p, b"false", 5) == 0:
        _out(o, b"false", 5)
        return p + 5
    if c == 110 and p + 4 <= e and memcmp(<const char *>b + p, b"null", 4) == 0:
        _out(o, b"null", 4)
        return p + 4
    return _jnumber(b, p, e, o)


def json_texts(data, offsets, Py_ssize_t first, Py_ssize_t n, bytes valid):
    """MySQL's printed JSON documents as sluice's JSON text: ``data`` and ``offsets`` the buffers of
    a ``pa.binary()`` array (int32 offsets, its own starting at element ``first``), ``n`` elements,
    ``valid`` one byte each (0: SQL NULL). ``(valid, offsets, data)`` of the ``pa.string()`` array
    (a document that is JSON's ``null`` is NULL there too), or None where any document is not sure."""
    cdef const uint8_t[::1] dview
    cdef const uint8_t[::1] oview
    cdef const uint8_t *b = NULL
    cdef const int32_t *offs
    cdef Py_ssize_t size = 0, i, start, end, p, mark
    cdef _Buf o, tmp, offs_out
    cdef bytearray flags
    if n < 0 or len(valid) < n:
        raise ValueError("json_texts: a validity byte per element")
    oview = memoryview(offsets).cast("B")
    if oview.shape[0] < (first + n + 1) * 4:
        raise ValueError("json_texts: the offsets buffer is too short")
    offs = <const int32_t *>&oview[0] + first
    if data is not None:
        dview = memoryview(data).cast("B")
        size = dview.shape[0]
        if size:
            b = &dview[0]
    o.data = tmp.data = offs_out.data = NULL
    o.size = o.cap = tmp.size = tmp.cap = offs_out.size = offs_out.cap = 0
    flags = bytearray(n)
    try:
        _i32(&offs_out, 0)
        for i in range(n):
            if valid[i]:
                start, end = offs[i], offs[i + 1]
                if start < 0 or end < start or end > size:
                    raise ValueError("json_texts: an offset outside the data buffer")
                mark = o.size
                p = _jvalue(b, start, end, &o, &tmp, 0)
                if p < 0 or _jws(b, p, end) != end or o.size > 0x7FFFFFFF:
                    return None
                if o.size - mark == 4 and memcmp(o.data + mark, b"null", 4) == 0:
                    o.size = mark  # the document null: NULL, as its object None
                else:
                    flags[i] = 1
            _i32(&offs_out, <int32_t>o.size)
        return (bytes(flags), PyBytes_FromStringAndSize(offs_out.data, offs_out.size),
                PyBytes_FromStringAndSize(o.data, o.size))
    finally:
        PyMem_Free(o.data)
        PyMem_Free(tmp.data)
        PyMem_Free(offs_out.data)
