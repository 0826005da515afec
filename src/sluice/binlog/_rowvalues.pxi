# The DECIMAL and temporal values of the compiled row core (included by _rowcore.pyx): each
# function builds the value's text in a caller's buffer, exactly as the Python decoders in
# sluice.binlog.values print it, and returns -1 (the object builders None) for any value it leaves
# to those decoders (out of range, negative, the zero timestamp), which then say what is wrong or
# print it. The JSON lines take the text as it is; the row tuples get it as a ``str``/``Decimal``.

# Decimal digits per group byte count (strings/decimal.cc dig2bytes, inverted for full groups).
cdef int DIG2BYTES[10]
DIG2BYTES[:] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4]
cdef uint32_t POW10[10]
POW10[:] = [1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000]


cdef inline int _put(char *out, uint64_t v, int width) noexcept nogil:
    """Decimal digits of ``v``, zero-padded to at least ``width``; returns the count written."""
    cdef char tmp[24]
    cdef int n = 0, i
    while True:
        tmp[n] = <char>(48 + v % 10)
        n += 1
        v //= 10
        if v == 0:
            break
    while n < width:
        tmp[n] = 48
        n += 1
    for i in range(n):
        out[i] = tmp[n - 1 - i]
    return n


cdef object _text(const char *s, int n):
    return PyUnicode_DecodeLatin1(s, n, NULL)


cdef int _decimal_digits(const uint8_t *p, int precision, int scale, int size, char *digits,
                        bint *negative):
    """The magnitude's digits of DECIMAL(precision, scale) (at most 81 + 9), leading zeros kept;
    returns their count, or -1 when a digit group is out of range."""
    cdef uint8_t d[32]
    cdef int intg = precision - scale
    cdef int pos = 0, nd = 0, i, k, lead, nbytes, ndig, reps
    cdef uint32_t g
    if size > 32:
        return -1
    memcpy(d, p, size)
    negative[0] = not (d[0] & 0x80)
    d[0] ^= 0x80
    if negative[0]:
        for i in range(size):
            d[i] ^= 0xFF
    # groups: leading partial integer group, full integer groups, full fraction groups, partial fraction
    lead = intg % 9
    for k in range(4):
        if k == 0:
            ndig = lead
            reps = 1 if lead else 0
        elif k == 1:
            ndig = 9
            reps = intg // 9
        elif k == 2:
            ndig = 9
            reps = scale // 9
        else:
            ndig = scale % 9
            reps = 1 if ndig else 0
        nbytes = DIG2BYTES[ndig]
        for i in range(reps):
            if pos + nbytes > size:
                return -1
            g = <uint32_t>_be(d + pos, nbytes)
            pos += nbytes
            if g >= POW10[ndig]:
                return -1
            nd += _put(digits + nd, g, ndig)
    return nd


cdef object _decimal(const uint8_t *p, int precision, int scale, int size):
    """DECIMAL(precision, scale) as ``Decimal``; None when a digit group is out of range."""
    cdef char digits[96]
    cdef char out[112]
    cdef bint negative
    cdef int nd = _decimal_digits(p, precision, scale, size, digits, &negative)
    cdef int i, k
    if nd < 0:
        return None
    # strip leading zeros of the magnitude (keep one digit)
    i = 0
    while i < nd - 1 and digits[i] == 48:
        i += 1
    k = 0
    if negative and not (nd - i == 1 and digits[i] == 48):
        out[0] = 45
        k = 1
    memcpy(out + k, digits + i, nd - i)
    k += nd - i
    if scale:
        out[k] = 69  # 'E'
        out[k + 1] = 45
        k += 2
        k += _put(out + k, scale, 1)
    return _Decimal(_text(out, k))


cdef int _decimal_f(const uint8_t *p, int precision, int scale, int size, char *out):
    """The text ``format(_decimal(...), "f")`` gives (at most 100 bytes), written to ``out``;
    returns its length, or -1 for a value ``_decimal`` leaves to Python."""
    cdef char digits[96]
    cdef bint negative
    cdef int nd = _decimal_digits(p, precision, scale, size, digits, &negative)
    cdef int i = 0, k = 0
    if nd <= 0 or scale > nd:
        return -1
    # the integer digits without their leading zeros (one kept), then '.' and the scale's digits
    while i < nd - scale - 1 and digits[i] == 48:
        i += 1
    if negative:
        k = i
        while k < nd and digits[k] == 48:
            k += 1
        if k < nd:  # not zero: Decimal keeps the sign of every nonzero value
            out[0] = 45
        k = 1 if k < nd else 0
    if nd - scale == 0:
        out[k] = 48
        k += 1
    memcpy(out + k, digits + i, nd - scale - i)
    k += nd - scale - i
    if scale:
        out[k] = 46
        memcpy(out + k + 1, digits + nd - scale, scale)
        k += 1 + scale
    return k


cdef int _frac(const uint8_t *p, int fsp, char *out) noexcept:
    """'.' and fsp digits of a stored fraction; -1 when out of range (left to Python)."""
    cdef int nbytes = (fsp + 1) // 2
    cdef uint64_t f
    cdef char tmp[8]
    if fsp == 0:
        return 0
    f = _be(p, nbytes)
    if f >= POW10[2 * nbytes]:
        return -1
    _put(tmp, f, 2 * nbytes)
    out[0] = 46
    memcpy(out + 1, tmp, fsp)
    return 1 + fsp


cdef int _date_t(const uint8_t *p, char *out) noexcept:
    cdef uint32_t v = p[0] | p[1] << 8 | p[2] << 16
    cdef int k
    if v >> 9 > 9999:
        return -1
    k = _put(out, v >> 9, 4)
    out[k] = 45
    k += 1 + _put(out + k + 1, v >> 5 & 15, 2)
    out[k] = 45
    k += 1 + _put(out + k + 1, v & 31, 2)
    return k


cdef int _hms(char *out, uint64_t h, uint64_t m, uint64_t s) noexcept:
    cdef int k = _put(out, h, 2)
    out[k] = 58
    k += 1 + _put(out + k + 1, m, 2)
    out[k] = 58
    k += 1 + _put(out + k + 1, s, 2)
    return k


cdef int _datetime2_t(const uint8_t *p, int fsp, char *out) noexcept:
    cdef int64_t v = <int64_t>_be(p, 5) - 0x8000000000
    cdef int64_t ymd, ym, hms
    cdef int k, f
    if v < 0:
        return -1
    ymd = v >> 17
    ym = ymd >> 5
    hms = v & 0x1FFFF
    if ym // 13 > 9999:
        return -1
    k = _put(out, ym // 13, 4)
    out[k] = 45
    k += 1 + _put(out + k + 1, ym % 13, 2)
    out[k] = 45
    k += 1 + _put(out + k + 1, ymd & 31, 2)
    out[k] = 32
    k += 1 + _hms(out + k + 1, hms >> 12, hms >> 6 & 63, hms & 63)
    f = _frac(p + 5, fsp, out + k)
    if f < 0:
        return -1
    return k + f


cdef void _civil(int64_t days, int64_t *y, int64_t *m, int64_t *d) noexcept nogil:
    """Proleptic Gregorian date of a day count since 1970-01-01 (days >= 0)."""
    cdef int64_t z = days + 719468
    cdef int64_t era = z // 146097
    cdef int64_t doe = z - era * 146097
    cdef int64_t yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    cdef int64_t doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    cdef int64_t mp = (5 * doy + 2) // 153
    d[0] = doy - (153 * mp + 2) // 5 + 1
    m[0] = mp + 3 if mp < 10 else mp - 9
    y[0] = yoe + era * 400 + (1 if m[0] <= 2 else 0)


cdef int _timestamp2_t(const uint8_t *p, int fsp, char *out) noexcept:
    cdef uint64_t sec = _be(p, 4)
    cdef int64_t y, m, d, rem
    cdef char frac[8]
    cdef int k, f
    f = _frac(p + 4, fsp, frac)
    if f < 0:
        return -1
    if sec == 0:
        return -1  # the zero timestamp's text is Python's
    _civil(sec // 86400, &y, &m, &d)
    rem = sec % 86400
    k = _put(out, y, 4)
    out[k] = 45
    k += 1 + _put(out + k + 1, m, 2)
    out[k] = 45
    k += 1 + _put(out + k + 1, d, 2)
    out[k] = 84  # 'T'
    k += 1 + _hms(out + k + 1, rem // 3600, rem // 60 % 60, rem % 60)
    memcpy(out + k, frac, f)
    k += f
    out[k] = 90  # 'Z'
    return k + 1


cdef int _time2_t(const uint8_t *p, int fsp, char *out) noexcept:
    cdef int nfrac = (fsp + 1) // 2
    cdef int64_t intpart, f, packed, hms, usec
    cdef char tmp[8]
    cdef int k = 0
    if nfrac == 0:
        intpart = <int64_t>_be(p, 3) - 0x800000
        if intpart < 0:
            return -1
        return _hms(out, intpart >> 12 & 0x3FF, intpart >> 6 & 63, intpart & 63)
    if nfrac == 3:
        packed = <int64_t>_be(p, 6) - 0x800000000000
        if packed < 0 or (packed & 0xFFFFFF) > 999999:
            return -1
    else:
        intpart = <int64_t>_be(p, 3) - 0x800000
        f = _be(p + 3, nfrac)
        if intpart < 0 and f:
            intpart += 1
            f -= 0x100 if nfrac == 1 else 0x10000
        if nfrac == 1 and not -100 < f < 100:
            return -1
        if nfrac == 2 and not -10000 < f < 10000:
            return -1
        packed = intpart * 0x1000000 + f * (10000 if nfrac == 1 else 100)
    if packed < 0:
        out[0] = 45
        k = 1
        packed = -packed
    hms = packed >> 24
    usec = packed & 0xFFFFFF
    if usec > 999999:
        return -1
    k += _hms(out + k, hms >> 12 & 0x3FF, hms >> 6 & 63, hms & 63)
    _put(tmp, usec, 6)
    out[k] = 46
    memcpy(out + k + 1, tmp, fsp)
    return k + 1 + fsp


cdef object _temporal(int op, const uint8_t *p, int fsp):
    """The text of a DATE, DATETIME2, TIMESTAMP2 or TIME2 value; None for one left to Python."""
    cdef char out[64]
    cdef int k = _temporal_t(op, p, fsp, out)
    return None if k < 0 else _text(out, k)


cdef inline int _temporal_t(int op, const uint8_t *p, int fsp, char *out) noexcept:
    """``_temporal``'s text written to ``out`` (64 bytes); its length, or -1."""
    if op == OP_DATE:
        return _date_t(p, out)
    if op == OP_DATETIME2:
        return _datetime2_t(p, fsp, out)
    if op == OP_TIMESTAMP2:
        return _timestamp2_t(p, fsp, out)
    return _time2_t(p, fsp, out)
