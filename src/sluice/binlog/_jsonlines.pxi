# Included by _rowcore.pyx: the JSON lines of a rows event's rows, written in C.
#
# The twin is ``sluice.cdc.jsonl.change_line`` over the ``RowChange`` records of the event: this
# writes the same bytes without a record, a dict or a ``json`` call per row. Values of the simple
# types (None, bool, int, float, str, bytes, DECIMAL, SET members, JSON objects and arrays) are
# written here; every other value (geometry, a DECIMAL inside a JSON document, text that is not
# valid Unicode) goes through ``fallback``, the Python encoder of one value.

from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.math cimport isinf, isnan
from libc.stdio cimport snprintf
from libc.string cimport strlen


cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL
    char *PyOS_double_to_string(double val, char format_code, int precision, int flags, int *ptype) except NULL
    int Py_DTSF_ADD_DOT_0
    long long PyLong_AsLongLongAndOverflow(object v, int *overflow) except? -1


cdef struct _Buf:
    char *data
    Py_ssize_t size
    Py_ssize_t cap


cdef extern from "Python.h":
    int PyBuffer_FillInfo(Py_buffer *view, object exporter, void *buf, Py_ssize_t len, int readonly,
                          int flags) except -1


cdef char _NOTHING = 0  # what an empty block points at


cdef class _Block:
    """A buffer's bytes handed over by the core (``_taken``): read through the buffer protocol, as
    ``pyarrow.py_buffer`` and ``numpy.frombuffer`` do, with no copy; freed with the last reference."""

    cdef char *data
    cdef Py_ssize_t size

    def __cinit__(self):
        self.data = NULL
        self.size = 0

    def __dealloc__(self):
        PyMem_Free(self.data)

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, <void *>self.data if self.data != NULL else <void *>&_NOTHING, self.size, 1,
                          flags)

    def __releasebuffer__(self, Py_buffer *view):
        pass

    def __len__(self):
        return self.size


cdef _Block _taken(_Buf *o):
    """``o``'s bytes as a ``_Block``; ``o`` is left empty."""
    cdef _Block block = _Block.__new__(_Block)
    block.data, block.size = o.data, o.size
    o.data, o.size, o.cap = NULL, 0, 0
    return block


cdef int _out_grow(_Buf *o, Py_ssize_t extra) except -1:
    cdef Py_ssize_t cap = o.cap * 2 if o.cap else 4096
    cdef char *data
    while cap < o.size + extra:
        cap *= 2
    data = <char *>PyMem_Realloc(o.data, cap)
    if data == NULL:
        raise MemoryError()
    o.data = data
    o.cap = cap
    return 0


cdef inline int _out(_Buf *o, const char *p, Py_ssize_t n) except -1:
    if o.size + n > o.cap:
        _out_grow(o, n)
    memcpy(o.data + o.size, p, n)
    o.size += n
    return 0


cdef inline int _out_bytes(_Buf *o, bytes b) except -1:
    return _out(o, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))


cdef inline bint _plain8(const char *p) noexcept nogil:
    """Whether none of 8 bytes needs escaping in a JSON string (a control byte, '"' or '\\'):
    a word-at-a-time test that may say no for a plain word, never yes for one that is not."""
    cdef uint64_t w, q, b
    cdef uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL
    memcpy(&w, p, 8)
    q = w ^ (ones * 0x22)
    b = w ^ (ones * 0x5C)
    return ((((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b)) & high) == 0


cdef int _out_str(_Buf *o, str s) except -1:
    """``s`` as a JSON string, escaped as ``json`` does with ``ensure_ascii=False``."""
    cdef Py_ssize_t n
    cdef const char *p = PyUnicode_AsUTF8AndSize(s, &n)
    return _out_utf8(o, p, n)


cdef int _out_utf8(_Buf *o, const char *p, Py_ssize_t n) except -1:
    """The valid UTF-8 text ``p[:n]`` as a JSON string, as ``_out_str`` writes its ``str``."""
    cdef Py_ssize_t i, run = 0
    cdef unsigned char c
    cdef char esc[8]
    if o.size + n + 2 > o.cap:
        _out_grow(o, n + 2)
    o.data[o.size] = b'"'
    o.size += 1
    i = 0
    while i < n:
        if n - i >= 8 and _plain8(p + i):
            i += 8
            continue
        c = <unsigned char>p[i]
        if c >= 0x20 and c != b'"' and c != b'\\':
            i += 1
            continue
        _out(o, p + run, i - run)
        run = i + 1
        if c == b'"':
            _out(o, b'\\"', 2)
        elif c == b'\\':
            _out(o, b'\\\\', 2)
        elif c == b'\n':
            _out(o, b'\\n', 2)
        elif c == b'\r':
            _out(o, b'\\r', 2)
        elif c == b'\t':
            _out(o, b'\\t', 2)
        elif c == 8:
            _out(o, b'\\b', 2)
        elif c == 12:
            _out(o, b'\\f', 2)
        else:
            snprintf(esc, 8, b'\\u%04x', c)
            _out(o, esc, 6)
        i += 1
    _out(o, p + run, n - run)
    _out(o, b'"', 1)
    return 0


cdef inline int _out_int(_Buf *o, long long i) except -1:
    """``i`` in decimal (what ``%lld`` writes, without the cost of the format machinery)."""
    cdef char num[24]
    cdef int n = 0
    if i < 0:
        num[0] = b'-'
        n = 1 + _put(num + 1, (<uint64_t>0) - <uint64_t>i, 1)
    else:
        n = _put(num, <uint64_t>i, 1)
    return _out(o, num, n)


cdef int _out_value(_Buf *o, object v, object fallback) except -1:
    cdef int overflow = 0
    cdef long long i
    t = type(v)
    if v is None:
        return _out(o, b"null", 4)
    if t is int:
        i = PyLong_AsLongLongAndOverflow(v, &overflow)
        if not overflow:
            return _out_int(o, i)
    elif t is str:
        try:
            return _out_str(o, v)
        except UnicodeEncodeError:
            pass  # lone surrogates: the Python encoder writes them as json does
    elif t is bool:
        return _out(o, b"true", 4) if v else _out(o, b"false", 5)
    elif t is bytes:  # BLOB and binary strings: base64, as binascii.b2a_base64 writes it
        return _out_base64(o, <const uint8_t *>PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v))
    elif t is _Decimal:  # a DECIMAL column: its exact digits as a string
        digits = format(v, "f")
        _out(o, b'"', 1)
        _out_bytes(o, (<str>digits).encode("ascii"))
        return _out(o, b'"', 1)
    elif t is dict:  # a JSON document's object: keys are str, in stored order
        if _out_container(o, v, fallback) == 0:
            return 0
    elif t is list or t is tuple:  # a JSON array, or the members of a SET
        if _out_container(o, v, fallback) == 0:
            return 0
    elif t is float:
        return _out_double(o, v)
    return _out_bytes(o, <bytes?>fallback(v))


cdef int _out_double(_Buf *o, double d) except -1:
    """``d`` as ``json`` writes a float (``repr``, and its names for NaN and the infinities)."""
    cdef char *text
    if isnan(d):
        return _out(o, b"NaN", 3)
    if isinf(d):
        return _out(o, b"Infinity", 8) if d > 0 else _out(o, b"-Infinity", 9)
    text = PyOS_double_to_string(d, b'r', 0, Py_DTSF_ADD_DOT_0, NULL)
    try:
        _out(o, text, strlen(text))
    finally:
        PyMem_Free(text)
    return 0


cdef const char *_B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


cdef int _out_base64(_Buf *o, const uint8_t *p, Py_ssize_t n) except -1:
    cdef Py_ssize_t i = 0, need = 4 * ((n + 2) // 3) + 2
    cdef uint32_t v
    cdef char *w
    if o.size + need > o.cap:
        _out_grow(o, need)
    w = o.data + o.size
    w[0] = b'"'
    w += 1
    while i + 3 <= n:
        v = (<uint32_t>p[i] << 16) | (<uint32_t>p[i + 1] << 8) | p[i + 2]
        w[0] = _B64[v >> 18]
        w[1] = _B64[(v >> 12) & 63]
        w[2] = _B64[(v >> 6) & 63]
        w[3] = _B64[v & 63]
        w += 4
        i += 3
    if n - i == 1:
        v = <uint32_t>p[i] << 16
        w[0] = _B64[v >> 18]
        w[1] = _B64[(v >> 12) & 63]
        w[2] = b'='
        w[3] = b'='
        w += 4
    elif n - i == 2:
        v = (<uint32_t>p[i] << 16) | (<uint32_t>p[i + 1] << 8)
        w[0] = _B64[v >> 18]
        w[1] = _B64[(v >> 12) & 63]
        w[2] = _B64[(v >> 6) & 63]
        w[3] = b'='
        w += 4
    w[0] = b'"'
    o.size += need
    return 0


cdef int _out_container(_Buf *o, object v, object fallback) except -1:
    """A dict with str keys or a list, as json writes it; 1 (nothing written) for anything else."""
    cdef Py_ssize_t mark = o.size
    cdef bint first = True
    if type(v) is dict:
        _out(o, b"{", 1)
        for key, item in (<dict>v).items():
            if type(key) is not str:
                o.size = mark
                return 1
            if not first:
                _out(o, b",", 1)
            first = False
            try:
                _out_str(o, key)
            except UnicodeEncodeError:
                o.size = mark
                return 1
            _out(o, b":", 1)
            _out_value(o, item, fallback)
        return _out(o, b"}", 1)
    _out(o, b"[", 1)
    for item in v:
        if not first:
            _out(o, b",", 1)
        first = False
        _out_value(o, item, fallback)
    return _out(o, b"]", 1)


cdef int _out_image(_Buf *o, tuple values, tuple keys, object absent, object fallback) except -1:
    cdef Py_ssize_t j, n = len(keys)
    cdef bint first = True
    if len(values) != n:
        raise ValueError(f"a row of {len(values)} values for {n} column names")
    _out(o, b"{", 1)
    for j in range(n):
        v = values[j]
        if v is absent:
            continue
        if not first:
            _out(o, b",", 1)
        first = False
        _out_bytes(o, <bytes>keys[j])
        _out_value(o, v, fallback)
    return _out(o, b"}", 1)


cdef int _write_lines(_Buf *o, int kind, bytes head, tuple keys, list rows, bytes mid, Py_ssize_t pos,
                      bytes gtid_ts, long long ts, object absent, object fallback) except -1:
    cdef Py_ssize_t i
    for i in range(len(rows)):
        row = rows[i]
        _out_bytes(o, head)
        if kind == 0:
            _out(o, b'null,"after":', 13)
            _out_image(o, <tuple?>row, keys, absent, fallback)
        elif kind == 2:
            _out_image(o, <tuple?>row, keys, absent, fallback)
            _out(o, b',"after":null', 13)
        else:
            _out_image(o, <tuple?>(<tuple?>row)[0], keys, absent, fallback)
            _out(o, b',"after":', 9)
            _out_image(o, <tuple?>(<tuple?>row)[1], keys, absent, fallback)
        _out_bytes(o, mid)
        _out_int(o, pos)
        _out(o, b',"row":', 7)
        _out_int(o, i)
        _out_bytes(o, gtid_ts)
        _out_int(o, ts)
        _out(o, b'}\n', 2)
    return 0


def rows_jsonl(int kind, bytes head, tuple keys, list rows, bytes mid, Py_ssize_t pos, bytes gtid_ts,
               long long ts, object absent, object fallback):
    """The JSON lines (each ending in a newline) of ``rows``, one rows event's decoded rows.

    ``kind`` 0 write, 1 update (``(before, after)`` pairs), 2 delete. Each line is ``head``, the
    before image (``null`` for writes), ``,"after":``, the after image (``null`` for deletes),
    ``mid`` (up to ``"pos":``), ``pos``, ``,"row":`` and the row number, ``gtid_ts`` (up to
    ``"ts":``), ``ts`` and ``}``. ``keys[j]`` is column j's ``"name":`` as JSON; values equal to
    ``absent`` are left out of an image; ``fallback(value)`` is the JSON text (UTF-8 bytes) of a
    value this writer does not write itself.
    """
    cdef _Buf o
    o.data = NULL
    o.size = o.cap = 0
    try:
        _write_lines(&o, kind, head, keys, rows, mid, pos, gtid_ts, ts, absent, fallback)
        return PyBytes_FromStringAndSize(o.data, o.size)
    finally:
        PyMem_Free(o.data)
