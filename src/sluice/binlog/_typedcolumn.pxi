# Included by _rowcore.pyx before _typedimages.pxi: one column of a table's typed row images.
#
# A ``_TypedColumn`` holds one column's values as ``TypedImages`` (``_typedimages.pxi``) adds them:
# its kind is fixed by the first non-NULL value (int64, float64, UTF-8 text or binary bytes, with
# int32 offsets for the last two) and falls to ``_TY_NONE`` (validity bytes only) at the first value
# of another kind or one the JSON reader would read otherwise. ``take`` hands its buffers over as
# they are, so that Arrow wraps them without a copy (``sluice.lake.types.typed_images``).

cdef extern from "string.h":
    const void *memchr(const void *s, int c, size_t n)

cdef enum:
    _TY_NULL = 0    # no value but NULL yet
    _TY_INT = 1     # int64
    _TY_TEXT = 2    # UTF-8 text, int32 offsets
    _TY_NONE = 3    # some value had no typed form: the column is not kept (validity bytes only)
    _TY_DOUBLE = 4  # float64: a FLOAT or DOUBLE
    _TY_BYTES = 5   # a binary string's bytes, int32 offsets

cdef int64_t _ZERO8 = 0


cdef inline int _i32(_Buf *o, int32_t v) except -1:
    return _out(o, <const char *>&v, 4)


cdef inline int _i64(_Buf *o, int64_t v) except -1:
    return _out(o, <const char *>&v, 8)


cdef class _TypedColumn:
    """One column's values: data (int64 or UTF-8), int32 offsets (text), one validity byte each."""

    cdef _Buf data, offsets, valid
    cdef int kind
    cdef Py_ssize_t length
    cdef bint json  # a JSON column: each value kept as the text its JSON image holds

    def __cinit__(self):
        self.data.data = self.offsets.data = self.valid.data = NULL
        self.data.size = self.offsets.size = self.valid.size = 0
        self.data.cap = self.offsets.cap = self.valid.cap = 0
        self.kind = _TY_NULL
        self.length = 0

    def __dealloc__(self):
        PyMem_Free(self.data.data)
        PyMem_Free(self.offsets.data)
        PyMem_Free(self.valid.data)

    cdef int _start(self, int kind) except -1:
        """The first value that is not NULL sets the kind; the NULLs before it get their slots."""
        cdef Py_ssize_t i
        self.kind = kind
        if kind == _TY_INT or kind == _TY_DOUBLE:
            for i in range(self.length):
                _out(&self.data, <const char *>&_ZERO8, 8)
        else:
            for i in range(self.length + 1):
                _i32(&self.offsets, 0)
        return 0

    cdef int untype(self) except -1:
        """The column has a value without a typed form: keep no data for it from now on."""
        self.kind = _TY_NONE
        self.data.size = self.offsets.size = 0
        return self._valid(0)

    cdef int begin(self, int kind) except -1:
        """Before a value of ``kind`` is written: 0 when the column holds another kind."""
        if self.kind != kind:
            if self.kind != _TY_NULL:
                return 0
            self._start(kind)
        return 1

    cdef int begin_text(self) except -1:
        """Before a text is written straight into ``data``: 0 when the column holds another kind."""
        return self.begin(_TY_TEXT)

    cdef int end_text(self, Py_ssize_t mark) except -1:
        """After a text was written into ``data`` from ``mark``: 0 (the text taken back) when it
        goes past an Arrow string's 2 GiB."""
        if self.data.size > 0x7FFFFFFF:
            self.data.size = mark
            return 0
        _i32(&self.offsets, <int32_t>self.data.size)
        return self._valid(1)

    cdef int _text(self, const char *p, Py_ssize_t n) except -1:
        """Append a text; 0 when it cannot be (another kind, or past an Arrow string's 2 GiB)."""
        if not self.begin(_TY_TEXT):
            return 0
        if self.data.size + n > 0x7FFFFFFF:
            return 0
        _out(&self.data, p, n)
        _i32(&self.offsets, <int32_t>self.data.size)
        return 1

    cdef int _valid(self, char flag) except -1:
        _out(&self.valid, &flag, 1)
        self.length += 1
        return 1

    cdef int put_null(self) except -1:
        if self.kind == _TY_NONE:
            return self._valid(0)
        if self.kind == _TY_INT or self.kind == _TY_DOUBLE:
            _out(&self.data, <const char *>&_ZERO8, 8)
        elif self.kind == _TY_TEXT or self.kind == _TY_BYTES:
            _i32(&self.offsets, <int32_t>self.data.size)
        return self._valid(0)

    cdef int put_int(self, int64_t i) except -1:
        """Append an integer: 1, or 0 when the column holds text."""
        if self.kind != _TY_INT:
            if self.kind != _TY_NULL:
                return 0
            self._start(_TY_INT)
        _i64(&self.data, i)
        return self._valid(1)

    cdef int put_double(self, double d) except -1:
        """Append a FLOAT or DOUBLE: 1, or 0 when the column holds another kind."""
        if not self.begin(_TY_DOUBLE):
            return 0
        _out(&self.data, <const char *>&d, 8)
        return self._valid(1)

    cdef int put_bytes(self, const uint8_t *p, Py_ssize_t n, Py_ssize_t pad) except -1:
        """Append a binary string, zero bytes added up to ``pad`` (a BINARY(pad)'s length): 1, or 0
        when the column holds another kind (or would pass 2 GiB)."""
        cdef Py_ssize_t size = n if n >= pad else pad
        if not self.begin(_TY_BYTES) or self.data.size + size > 0x7FFFFFFF:
            return 0
        _out(&self.data, <const char *>p, n)
        while n < size:
            _out(&self.data, <const char *>&_ZERO8, 1)
            n += 1
        _i32(&self.offsets, <int32_t>self.data.size)
        return self._valid(1)

    cdef int put_text(self, const char *p, Py_ssize_t n) except -1:
        """Append a text's UTF-8: 1, or 0 when the column holds integers (or would pass 2 GiB)."""
        return self._text(p, n) and self._valid(1)

    cdef int put(self, object v, object fallback) except -1:
        """Append ``v``: 1, or 0 when it has no typed form the JSON reader would agree with."""
        cdef int overflow = 0
        cdef long long i
        cdef const char *p
        cdef Py_ssize_t n
        t = type(v)
        if v is None or self.kind == _TY_NONE:
            return self.put_null()
        if self.json:
            return _typed_json_value(self, v, fallback)
        if t is int:
            i = PyLong_AsLongLongAndOverflow(v, &overflow)
            return 0 if overflow else self.put_int(<int64_t>i)
        elif t is str or t is _Decimal:
            text = v if t is str else format(v, "f")  # a DECIMAL's JSON string holds these digits
            try:
                p = PyUnicode_AsUTF8AndSize(text, &n)
            except UnicodeEncodeError:
                return 0  # lone surrogates: the JSON way says what becomes of them
            if not self._text(p, n):
                return 0
        elif t is float:
            return _typed_double(self, v)
        elif t is bytes:
            return self.put_bytes(<const uint8_t *>PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), 0)
        elif t is tuple:  # a SET's members (a VECTOR's floats are not typed)
            return _typed_set(self, v)
        elif t is bool or t is dict or t is list:
            return 0
        else:  # dates, times: the JSON-lines writer's text, when it is a string without escapes
            js = fallback(v)
            if type(js) is not bytes:
                return 0
            p = PyBytes_AS_STRING(js)
            n = PyBytes_GET_SIZE(js)
            if n < 2 or p[0] != b'"' or p[n - 1] != b'"' or memchr(p, b'\\', n) != NULL:
                return 0
            if not self._text(p + 1, n - 2):
                return 0
        return self._valid(1)

    cdef int extend(self, _TypedColumn o) except -1:
        """Append ``o``'s values: 1, or 0 when the two hold different kinds."""
        cdef Py_ssize_t i, shift
        cdef int32_t *offs
        if o.length == 0:
            return 1
        if o.kind == _TY_NONE or self.kind == _TY_NONE:
            self.kind = _TY_NONE
            self.data.size = self.offsets.size = 0
            _out(&self.valid, o.valid.data, o.valid.size)
            self.length += o.length
            return 1
        if o.kind != _TY_NULL and o.kind != self.kind:
            if self.kind != _TY_NULL:
                return 0
            self._start(o.kind)
        if self.kind == _TY_INT or self.kind == _TY_DOUBLE:
            if o.kind == self.kind:
                _out(&self.data, o.data.data, o.data.size)
            else:
                for i in range(o.length):
                    _out(&self.data, <const char *>&_ZERO8, 8)
        elif self.kind == _TY_TEXT or self.kind == _TY_BYTES:
            shift = self.data.size
            if o.kind == self.kind:
                if shift + o.data.size > 0x7FFFFFFF:
                    return 0
                _out(&self.data, o.data.data, o.data.size)
                offs = <int32_t *>o.offsets.data
                for i in range(1, o.length + 1):
                    _i32(&self.offsets, <int32_t>(offs[i] + shift))
            else:
                for i in range(o.length):
                    _i32(&self.offsets, <int32_t>shift)
        _out(&self.valid, o.valid.data, o.valid.size)
        self.length += o.length
        return 1

    cdef tuple buffers(self):
        """(kind, length, validity, offsets, data), handed over: the column is left empty."""
        out = (self.kind, self.length, _taken(&self.valid), _taken(&self.offsets), _taken(&self.data))
        self.kind = _TY_NULL
        self.length = 0
        return out
