# Included by _rowcore.pyx: a rows event's images written as JSON straight from the row bytes.
#
# ``_write_lines`` writes the lines of decoded rows (a tuple per image, an object per value); this
# writes the same bytes from the event body itself. The values whose text is made here are the
# integers, FLOAT and DOUBLE, YEAR, ENUM members, BIT, DECIMAL, the temporal types, UTF-8 text,
# binary strings and MySQL binary JSON made only of objects, arrays, strings, numbers and literals.
# Every other value (another character set, SET, geometry, an opaque JSON scalar, a value the
# text writers leave to Python) is made by ``RowProgram._value`` and written by ``_out_value``, as
# ``_write_lines`` would, so the two paths cannot disagree. Bytes that run short raise ``Reject``
# as ``RowProgram._decode`` does; the caller then leaves the event to the parser.


cdef inline int _utf8_len(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """The length of the UTF-8 sequence at ``p`` (``n`` bytes left), or 0 where CPython's strict
    decoder would stop: a stray or truncated byte, an overlong form, a surrogate, past U+10FFFF."""
    cdef uint8_t c = p[0], c1
    if c < 0x80:
        return 1
    if c < 0xC2 or c > 0xF4 or n < 2:
        return 0
    c1 = p[1]
    if c1 & 0xC0 != 0x80:
        return 0
    if c < 0xE0:
        return 2
    if n < 3 or p[2] & 0xC0 != 0x80:
        return 0
    if (c == 0xE0 and c1 < 0xA0) or (c == 0xED and c1 >= 0xA0):
        return 0
    if c < 0xF0:
        return 3
    if n < 4 or p[3] & 0xC0 != 0x80:
        return 0
    if (c == 0xF0 and c1 < 0x90) or (c == 0xF4 and c1 >= 0x90):
        return 0
    return 4


cdef bint _utf8_valid(const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """Whether ``PyUnicode_DecodeUTF8(p, n, NULL)`` would decode ``p[:n]`` without an error."""
    cdef Py_ssize_t i = 0
    cdef uint64_t w
    cdef int k
    while i < n:
        if n - i >= 8:
            memcpy(&w, p + i, 8)
            if not w & 0x8080808080808080ULL:
                i += 8
                continue
        k = _utf8_len(p + i, n - i)
        if k == 0:
            return False
        i += k
    return True


cdef inline bint _ascii_text(Col *c, const uint8_t *p, Py_ssize_t n) noexcept nogil:
    """Whether ``p[:n]`` of a charmap column is text its charmap maps byte for byte to the same
    ASCII characters, whose UTF-8 it then is: the charmap is ASCII's below 0x80 and no byte is above."""
    cdef Py_ssize_t i = 0
    cdef uint64_t w
    if c.conv != CONV_CHARMAP or not c.ascii:
        return False
    while n - i >= 8:
        memcpy(&w, p + i, 8)
        if w & 0x8080808080808080ULL:
            return False
        i += 8
    while i < n:
        if p[i] & 0x80:
            return False
        i += 1
    return True


cdef int _json_text(_Buf *o, const uint8_t *b, int t, Py_ssize_t pos, Py_ssize_t end, int depth,
                    bint counting) except -1:
    """A binary JSON value as ``_out_value`` writes ``_json_value``'s result; 1 (part written)
    for anything it leaves to that path: an opaque scalar, a large unsigned integer, text that is
    not UTF-8, keys out of the server's order (which could repeat one) or bytes out of bounds.
    ``counting``: the document is checked as for its text, but no text is written for a string
    (once it is checked), a number or a key."""
    cdef Py_ssize_t n, p
    cdef int i, shift
    cdef uint8_t byte
    cdef double d
    cdef uint64_t u
    if t <= 3:
        if depth > _JSON_MAX_DEPTH:
            return 1
        return _json_container_text(o, b, t, pos, end, depth + 1, counting)
    if t == 0x0C:
        n = 0
        p = pos
        shift = 0
        for i in range(5):
            if p >= end:
                return 1
            byte = b[p]
            p += 1
            n |= <Py_ssize_t>(byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        else:
            return 1
        if n > end - p or not _utf8_valid(b + p, n):
            return 1
        return 0 if counting else _out_utf8(o, <const char *>b + p, n)
    if t == 0x04:
        if pos < end and b[pos] <= 2:
            return _json_literal(o, b[pos])
        return 1
    if t == 0x05 or t == 0x06:
        if pos + 2 > end:
            return 1
        if counting:
            return 0
        return _out_int(o, <int16_t>_jle(b + pos, 2) if t == 0x05 else <long>_jle(b + pos, 2))
    if t == 0x07 or t == 0x08:
        if pos + 4 > end:
            return 1
        if counting:
            return 0
        return _out_int(o, <int32_t>_jle(b + pos, 4) if t == 0x07 else <long long>_jle(b + pos, 4))
    if t == 0x09 or t == 0x0A:
        if pos + 8 > end:
            return 1
        u = _le(b + pos, 8)
        if counting:
            return 0
        if t == 0x0A and u >> 63:
            return 1
        return _out_int(o, <int64_t>u)
    if t == 0x0B:
        if pos + 8 > end:
            return 1
        if counting:
            return 0
        memcpy(&d, b + pos, 8)
        return _out_double(o, d)
    return 1


cdef inline int _json_literal(_Buf *o, uint8_t x) except -1:
    if x == 0:
        return _out(o, b"null", 4)
    if x == 1:
        return _out(o, b"true", 4)
    return _out(o, b"false", 5)


cdef int _json_container_text(_Buf *o, const uint8_t *b, int t, Py_ssize_t base, Py_ssize_t end,
                              int depth, bint counting) except -1:
    """An object or array, entry by entry as ``_json_container`` reads them."""
    cdef bint large = t & 1
    cdef bint is_object = t < 2
    cdef int hdr = 8 if large else 4
    cdef int off_size = 4 if large else 2
    cdef int value_entry = 1 + off_size
    cdef int key_entry = off_size + 2
    cdef Py_ssize_t count, size, cend, entries, keys_size, i, ve, koff, klen, plen = -1, pkey = 0
    cdef uint32_t x
    cdef int vt, cmp
    if base + hdr > end:
        return 1
    count = _jle(b + base, off_size)
    size = _jle(b + base + off_size, off_size)
    cend = base + size
    if cend > end or size < hdr:
        return 1
    entries = base + hdr
    keys_size = key_entry * count if is_object else 0
    if entries + keys_size + value_entry * count > cend:
        return 1
    _out(o, b"{" if is_object else b"[", 1)
    for i in range(count):
        if i:
            _out(o, b",", 1)
        if is_object:
            koff = _jle(b + entries + i * key_entry, off_size)
            klen = _jle(b + entries + i * key_entry + off_size, 2)
            if koff < hdr or base + koff + klen > cend:
                return 1
            koff += base
            # The server stores keys by length, then bytes: each one past the one before means
            # none repeats, so the object has what the dict built from it has, in the same order.
            if klen < plen:
                return 1
            if klen == plen:
                cmp = memcmp(b + pkey, b + koff, klen)
                if cmp >= 0:
                    return 1
            plen = klen
            pkey = koff
            if not _utf8_valid(b + koff, klen):
                return 1
            if not counting:
                _out_utf8(o, <const char *>b + koff, klen)
                _out(o, b":", 1)
        ve = entries + keys_size + i * value_entry
        vt = b[ve]
        x = _jle(b + ve + 1, off_size)
        if vt == 0x04:
            if x & 0xFF > 2:
                return 1
            _json_literal(o, x & 0xFF)
        elif counting and 0x05 <= vt and (vt <= 0x06 or large and vt <= 0x08):
            pass  # an inline number: any bytes are one
        elif vt == 0x05:
            _out_int(o, <int16_t>(x & 0xFFFF))
        elif vt == 0x06:
            _out_int(o, <long>(x & 0xFFFF))
        elif large and vt == 0x07:
            _out_int(o, <int32_t>x)
        elif large and vt == 0x08:
            _out_int(o, <long long>x)
        else:
            if x < <uint32_t>hdr or base + x >= cend:
                return 1
            if _json_text(o, b, vt, base + x, cend, depth, counting):
                return 1
    return _out(o, b"}" if is_object else b"]", 1)


cdef int _value_text(RowProgram prog, _Buf *o, bytes buf, const uint8_t *b, Py_ssize_t *ppos,
                     Py_ssize_t end, Col *c, int k, object fallback) except -1:
    """One non-NULL value at ``ppos[0]`` as ``_out_value`` writes it; moves ``ppos`` past it.
    ``fallback`` None (counting): the value is checked as for its text (UTF-8, DECIMAL digit groups,
    temporal ranges, a JSON document's structure, ENUM and SET members) or made as an object, but no
    text is written for one that any bytes make (integers, floats, binary strings) or for text."""
    cdef bint counting = fallback is None
    cdef Py_ssize_t pos = ppos[0], length, mark
    cdef int op = c.op, n = c.n, t
    cdef uint64_t u
    cdef float f
    cdef double d
    cdef char text[128]
    cdef object v
    if op == OP_VAR:
        if pos + n > end:
            raise Reject("length prefix")
        length = _le(b + pos, n)
        if length > end - pos - n:
            raise Reject("value")
        pos += n
        if c.conv == CONV_UTF8:
            if not _utf8_valid(b + pos, length):
                raise Reject("text")
            ppos[0] = pos + length
            return 0 if counting else _out_utf8(o, <const char *>b + pos, length)
        if _ascii_text(c, b + pos, length):
            ppos[0] = pos + length
            return 0 if counting else _out_utf8(o, <const char *>b + pos, length)
        if c.conv == CONV_BYTES or (c.conv == CONV_BINPAD and length >= c.pad):
            ppos[0] = pos + length
            return 0 if counting else _out_base64(o, b + pos, length)
        if c.conv == CONV_JSON and length:
            mark = o.size
            if _json_text(o, b, b[pos], pos + 1, pos + length, 0, counting) == 0:
                ppos[0] = pos + length
                return 0
            o.size = mark
    elif op != OP_NULL and op != OP_CALL and op != OP_SET:
        if pos + n > end:
            raise Reject("value")
        if counting and (op <= OP_YEAR or op == OP_UINT_BE or op == OP_UINT_LE):
            ppos[0] = pos + n  # counting: any bytes of its width are an integer or a float
            return 0
        if op == OP_INT:
            u = _le(b + pos, n)
            if c.arg:
                ppos[0] = pos + n
                return _out_int(o, _signed(u, n))
            if not u >> 63:
                ppos[0] = pos + n
                return _out_int(o, <int64_t>u)
        elif op == OP_FLOAT:
            ppos[0] = pos + n
            if n == 4:
                memcpy(&f, b + pos, 4)
                return _out_double(o, <double>f)
            memcpy(&d, b + pos, 8)
            return _out_double(o, d)
        elif op == OP_YEAR:
            ppos[0] = pos + n
            return _out_int(o, b[pos] + 1900 if b[pos] else 0)
        elif op == OP_UINT_BE or op == OP_UINT_LE:
            u = _be(b + pos, n) if op == OP_UINT_BE else _le(b + pos, n)
            if not u >> 63:
                ppos[0] = pos + n
                return _out_int(o, <int64_t>u)
        elif op == OP_DECIMAL or OP_DATE <= op <= OP_TIME2:
            if op == OP_DECIMAL:
                t = _decimal_f(b + pos, c.arg >> 8, c.arg & 0xFF, n, text + 1)
            else:
                t = _temporal_t(op, b + pos, c.arg, text + 1)
            if t >= 0:
                text[0] = text[t + 1] = 34  # '"'
                ppos[0] = pos + n
                return _out(o, text, t + 2)
    v = prog._value(buf, b, ppos, end, c, k)
    if counting:
        return 0
    return _out_value(o, v, fallback)


cdef int _image_text(RowProgram prog, _Buf *o, bytes buf, const uint8_t *b, Py_ssize_t *ppos,
                     Py_ssize_t end, int image, tuple keys, object fallback) except -1:
    """One image as ``_out_image`` writes its tuple (``keys`` None: the values only)."""
    cdef int count = prog.counts[image]
    cdef int first = prog.firsts[image]
    cdef int nbytes = (count + 7) >> 3
    cdef Py_ssize_t pos = ppos[0]
    cdef const uint8_t *nulls = b + pos
    cdef int j
    cdef Col *c
    if pos + nbytes > end:
        raise Reject("null bitmap")
    pos += nbytes
    _out(o, b"{", 1)
    for j in range(count):
        c = &prog.cols[first + j]
        if keys is not None:
            if j:
                _out(o, b",", 1)
            _out_bytes(o, <bytes>keys[c.index])
        if nulls[j >> 3] >> (j & 7) & 1:
            _out(o, b"null", 4)
        else:
            _value_text(prog, o, buf, b, &pos, end, c, first + j, fallback)
    ppos[0] = pos
    return _out(o, b"}", 1)


cdef Py_ssize_t _rows_text(RowProgram prog, _Buf *o, bytes buf, Py_ssize_t start, Py_ssize_t end, int kind,
                           bytes head, tuple keys, bytes mid, Py_ssize_t pos, bytes gtid_ts, long long ts,
                           object fallback) except -1:
    """The JSON lines ``_write_lines`` writes for ``prog.decode(buf, start, end)``, written from
    the body; ``head`` None writes each row's images alone (every value decoded, for counting;
    ``fallback`` None then drops the values made as objects). Returns the number of rows.
    ``prog.ordered`` must hold."""
    cdef const uint8_t *b = <const uint8_t *>PyBytes_AS_STRING(buf)
    cdef Py_ssize_t p = start, i = 0
    if start < 0 or end > PyBytes_GET_SIZE(buf) or start > end:
        raise Reject("body outside the buffer")
    if keys is not None and len(keys) != prog.ncols:
        raise ValueError(f"a row of {prog.ncols} values for {len(keys)} column names")
    while p < end:
        if head is None:
            _image_text(prog, o, buf, b, &p, end, 0, None, fallback)
            if kind == 1:
                _image_text(prog, o, buf, b, &p, end, 1, None, fallback)
            i += 1
            continue
        _out_bytes(o, head)
        if kind == 0:
            _out(o, b'null,"after":', 13)
            _image_text(prog, o, buf, b, &p, end, 0, keys, fallback)
        elif kind == 2:
            _image_text(prog, o, buf, b, &p, end, 0, keys, fallback)
            _out(o, b',"after":null', 13)
        else:
            _image_text(prog, o, buf, b, &p, end, 0, keys, fallback)
            _out(o, b',"after":', 9)
            _image_text(prog, o, buf, b, &p, end, 1, keys, fallback)
        _out_bytes(o, mid)
        _out_int(o, pos)
        _out(o, b',"row":', 7)
        _out_int(o, i)
        _out_bytes(o, gtid_ts)
        _out_int(o, ts)
        _out(o, b'}\n', 2)
        i += 1
    return i
