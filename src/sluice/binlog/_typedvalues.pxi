# Included by _rowcore.pyx after _typedimages.pxi: one value of a row image in its typed form.
#
# ``_typed_value`` reads a value straight from the row bytes where its typed form is plain (an
# integer, a FLOAT or DOUBLE, a binary string, UTF-8 text, DECIMAL and temporal text) and where the
# reader of its column keeps the value's JSON text (a JSON document); any other value is made as its
# object and typed by ``_TypedColumn.put``. The helpers after it serve both: a double, a JSON
# document's text, and a SET's members as their text joined by commas.

cdef int _typed_value(RowProgram prog, _TypedColumn col, bytes buf, const uint8_t *b, Py_ssize_t *ppos,
                      Py_ssize_t end, Col *c, int k, object fallback) except -1:
    """``col.put`` of the value ``prog`` decodes at ``ppos[0]``, read from the bytes where its
    typed form is plain (integers, UTF-8 text, DECIMAL and temporal text) and made as its object
    otherwise; moves ``ppos`` past it unless it returns 0 (no typed form)."""
    cdef Py_ssize_t pos = ppos[0], length
    cdef int op = c.op, n = c.n, t
    cdef uint64_t u
    cdef char text[128]
    if op == OP_VAR:
        if pos + n > end:
            raise Reject("length prefix")
        length = _le(b + pos, n)
        if length > end - pos - n:
            raise Reject("value")
        if c.conv == CONV_UTF8 or _ascii_text(c, b + pos + n, length):
            if c.conv == CONV_UTF8 and not _utf8_valid(b + pos + n, length):
                raise Reject("text")
            if not col.put_text(<const char *>b + pos + n, length):
                return 0
            ppos[0] = pos + n + length
            return 1
        if c.conv == CONV_BYTES or c.conv == CONV_BINPAD:
            return (col.put_bytes(b + pos + n, length, c.pad if c.conv == CONV_BINPAD else 0)
                    and _moved(ppos, pos + n + length))
        if c.conv == CONV_JSON and length and col.json and _typed_json(col, b, pos + n, pos + n + length):
            return _moved(ppos, pos + n + length)  # else the document is made as its object, below
    elif op != OP_NULL and op != OP_CALL and op != OP_SET and op != OP_ENUM:
        if pos + n > end:
            raise Reject("value")
        if op == OP_FLOAT:
            return _typed_double(col, _float_at(b + pos, n)) and _moved(ppos, pos + n)
        if op == OP_DECIMAL or OP_DATE <= op <= OP_TIME2:
            if op == OP_DECIMAL:
                t = _decimal_f(b + pos, c.arg >> 8, c.arg & 0xFF, n, text)
            else:
                t = _temporal_t(op, b + pos, c.arg, text)
            if t >= 0:
                if not col.put_text(text, t):
                    return 0
                ppos[0] = pos + n
                return 1
        else:
            if op == OP_YEAR:
                u = b[pos] + 1900 if b[pos] else 0
            else:
                u = _be(b + pos, n) if op == OP_UINT_BE else _le(b + pos, n)
                if op == OP_INT and c.arg:
                    u = <uint64_t>_signed(u, n)
                elif u >> 63:
                    return 0  # past int64, as the JSON reader would read it
            if not col.put_int(<int64_t>u):
                return 0
            ppos[0] = pos + n
            return 1
    return col.put(prog._value(buf, b, ppos, end, c, k), fallback)


cdef inline int _moved(Py_ssize_t *ppos, Py_ssize_t to) except -1:
    ppos[0] = to
    return 1


cdef int _typed_json(_TypedColumn col, const uint8_t *b, Py_ssize_t start, Py_ssize_t end) except -1:
    """A JSON document as the text the JSON image holds; 0 where that text is left to the object path."""
    cdef Py_ssize_t mark = col.data.size
    if b[start] == 0x04 and start + 1 < end and b[start + 1] == 0:  # the literal null: NULL, as its object None
        return col.put_null()
    if not col.begin_text():
        return 0
    if _json_text(&col.data, b, b[start], start + 1, end, 0, 0) != 0:
        col.data.size = mark
        return 0
    return col.end_text(mark)


cdef int _typed_json_value(_TypedColumn col, object v, object fallback) except -1:
    """A JSON column's value made as its object, as the text the JSON image holds."""
    cdef Py_ssize_t mark = col.data.size
    if not col.begin_text():
        return 0
    _out_value(&col.data, v, fallback)
    return col.end_text(mark)


cdef inline double _float_at(const uint8_t *p, int n):
    cdef float f
    cdef double d
    if n == 4:
        memcpy(&f, p, 4)
        return <double>f
    memcpy(&d, p, 8)
    return d


cdef int _typed_double(_TypedColumn col, double d) except -1:
    """A FLOAT or DOUBLE as the double its JSON number's text parses back to (the shortest text of
    the double: the same double); 0 for NaN and the infinities, which JSON has no number for."""
    if isnan(d) or isinf(d):
        return 0
    return col.put_double(d)


cdef int _typed_set(_TypedColumn col, tuple members) except -1:
    """A SET's members (the tuple the row program makes) as their UTF-8 joined by commas; 0 for a
    member that is empty or holds a comma, which that text could not tell apart, or is not text."""
    cdef Py_ssize_t mark = col.data.size, n
    cdef const char *p
    cdef bint first = True
    if not col.begin_text():
        return 0
    for member in members:
        p = NULL
        if type(member) is str:
            try:
                p = PyUnicode_AsUTF8AndSize(member, &n)
            except UnicodeEncodeError:
                pass  # lone surrogates: the JSON way says what becomes of them
        if p == NULL or n == 0 or memchr(p, 44, n) != NULL:  # 44: ','
            col.data.size = mark
            return 0
        if not first:
            _out(&col.data, ",", 1)
        _out(&col.data, p, n)
        first = False
    return col.end_text(mark)
