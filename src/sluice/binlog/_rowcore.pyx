# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled core: row images to value tuples, and runs of TABLE_MAP and rows events, in C.

The event runs (``EventRun``) are in ``_eventrun.pxi``, the frame of each event they take in
``_eventframes.pxi``, their CRC-32 (``crc32``, twin ``zlib.crc32``) in ``_crc32.pxi``; their Python
twin is the event parser itself, which takes every event the run leaves to it. ``_framing.pxi``
(``whole_events``, ``events_of``, ``stream_events``: whole events out of a file's blocks and a
stream's packets) has ``sluice.binlog.framing`` as its twin. ``rows_jsonl`` (``_jsonlines.pxi``)
writes the JSON lines of decoded rows; its twin is ``sluice.cdc.jsonl``. ``RowProgram.lines``
(``_rowjson.pxi``) writes the same lines from the row bytes themselves. The objects of single
values (integers, floats, SET members, text in its character set) are made in ``_rowobjects.pxi``.
``ChangeRows`` (``_changerows.pxi``) holds row changes as the change log's Arrow column buffers; its
twin is ``sluice.spark.source.change_frame.record_batch``. Beside them, ``TypedImages``
(``_typedimages.pxi``, its values in ``_typedvalues.pxi``) keeps each table's images as typed
columns for the pipeline's MERGE sources; the reference it is held to is the same images parsed
back from their JSON (``sluice.lake.mirror.merge_source.merge_source``).

A :class:`RowProgram` is built once per row-image shape (event kind, present-column bitmaps) from
the column specs the Python row plan decides (``sluice.binlog.rowplan``); it decodes a rows-event
body into exactly the tuples the plan's generated Python code returns. It never reads outside
``buf[start:end]``: every length is checked before it is used. On anything it does not take on
itself — bytes that run short, a value a server cannot write, text that is not valid in its
character set — it raises ``Reject`` and the caller decodes the body with the Python twin, which
raises the precise, typed error (or, for rare values it hands over, returns the same values). Values
a column hands to a Python function (JSON, geometry, SET members, unusual temporal values) are the
Python functions' own results, so the two paths cannot disagree on them.

A column spec is ``(op, n, arg, obj)``:

=============  ==================================================================================
``int``        ``n`` bytes little-endian (1, 2, 3, 4, 8); ``arg`` 1 = signed
``float``      ``n`` = 4 (FLOAT, as its float32 value) or 8 (DOUBLE)
``year``       1 byte, 1900 + v, 0 for 0
``null``       no bytes, ``None``
``enum``       ``n`` = 1 or 2 bytes; ``obj`` the member tuple ('' first) or None for the number
``uint_be``    ``n`` bytes big-endian unsigned (BIT)
``uint_le``    ``n`` bytes little-endian unsigned (SET without members)
``set``        ``n`` bytes little-endian mask; ``obj`` the members: the tuple of those set
``call``       ``n`` bytes, value ``obj(buf, pos)``
``decimal``    ``n`` bytes, ``arg`` = precision << 8 | scale; ``obj(buf, pos)`` for values it rejects
``date``       3 bytes; ``datetime2`` / ``timestamp2`` / ``time2``: ``n`` bytes, ``arg`` = fsp;
               ``obj(buf, pos)`` takes every value this module leaves to Python
``var``        ``n``-byte length prefix, then the bytes; ``arg`` the conversion: 0 bytes, 1 UTF-8,
               2 codec ``obj`` (a str), 3 ``obj(bytes)``, 4 bytes right-padded with zeros to
               ``obj`` bytes, 5 charmap table ``obj`` (a str), 6 MySQL binary JSON
               (``_jsonbinary.pxi``)
=============  ==================================================================================
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.float cimport PyFloat_FromDouble
from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.ref cimport Py_INCREF
from cpython.list cimport PyList_New
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memmove, memset

from decimal import Decimal as _Decimal


cdef extern from "Python.h":
    object PyUnicode_DecodeUTF8(const char *s, Py_ssize_t size, const char *errors)
    object PyUnicode_Decode(const char *s, Py_ssize_t size, const char *encoding, const char *errors)
    object PyUnicode_DecodeCharmap(const char *s, Py_ssize_t size, object mapping, const char *errors)
    object PyUnicode_DecodeLatin1(const char *s, Py_ssize_t size, const char *errors)


class Reject(Exception):
    """The compiled loop does not take this body; decode it with the Python twin."""


cdef enum:
    OP_NULL = 0
    OP_INT = 1
    OP_FLOAT = 2
    OP_YEAR = 3
    OP_ENUM = 4
    OP_UINT_BE = 5
    OP_UINT_LE = 6
    OP_CALL = 7
    OP_DECIMAL = 8
    OP_DATE = 9
    OP_DATETIME2 = 10
    OP_TIMESTAMP2 = 11
    OP_TIME2 = 12
    OP_VAR = 13
    OP_SET = 14

cdef enum:
    CONV_BYTES = 0
    CONV_UTF8 = 1
    CONV_CODEC = 2
    CONV_FUNC = 3
    CONV_BINPAD = 4
    CONV_CHARMAP = 5
    CONV_JSON = 6

_ASCII = "".join(map(chr, range(128)))

_OPS = {
    "null": OP_NULL, "int": OP_INT, "float": OP_FLOAT, "year": OP_YEAR, "enum": OP_ENUM,
    "uint_be": OP_UINT_BE, "uint_le": OP_UINT_LE, "call": OP_CALL, "decimal": OP_DECIMAL,
    "date": OP_DATE, "datetime2": OP_DATETIME2, "timestamp2": OP_TIMESTAMP2, "time2": OP_TIME2,
    "var": OP_VAR, "set": OP_SET,
}

cdef struct Col:
    int op
    int index      # column number in the table
    int n          # byte width, or the length-prefix width of a var column
    int arg
    int conv
    int pad
    bint ascii     # a charmap that maps each byte below 0x80 to that character (ASCII text is its UTF-8)
    const char *codec


cdef class RowProgram:
    """Decodes the rows of one body shape; see the module docstring for the column specs."""

    cdef Col *cols
    cdef int ncols          # table columns
    cdef int nimages        # 1 (write/delete) or 2 (update)
    cdef int counts[2]      # present columns per image
    cdef int firsts[2]      # index of each image's first Col
    cdef list objs          # per Col: its Python object (or None)
    cdef object absent
    cdef bytes codecs_keep
    cdef readonly bint ordered  # each image's columns in table order (``_rows_text`` needs it)

    def __cinit__(self):
        self.cols = NULL

    def __dealloc__(self):
        if self.cols != NULL:
            PyMem_Free(self.cols)

    def __init__(self, int column_count, list images, object absent):
        """``images``: one or two lists of ``(index, spec)`` for the present columns, in order."""
        cdef int total = 0, k = 0, i
        cdef Col *c
        if not 1 <= len(images) <= 2:
            raise ValueError("a row program has one or two images")
        for image in images:
            total += len(image)
        self.ncols = column_count
        self.nimages = len(images)
        self.absent = absent
        self.objs = []
        self.cols = <Col *>PyMem_Malloc(max(total, 1) * sizeof(Col))
        if self.cols == NULL:
            raise MemoryError()
        memset(self.cols, 0, max(total, 1) * sizeof(Col))
        codecs = []
        self.ordered = True
        for i, image in enumerate(images):
            self.firsts[i] = k
            self.counts[i] = len(image)
            if [index for index, _ in image] != sorted({index for index, _ in image}):
                self.ordered = False
            for index, spec in image:
                op, n, arg, obj = spec
                c = &self.cols[k]
                c.op = _OPS[op]
                c.index = index
                c.n = n
                c.arg = arg
                if not 0 <= index < column_count:
                    raise ValueError(f"column {index} is outside a table of {column_count}")
                if c.op == OP_VAR:
                    if not 1 <= n <= 4:
                        raise ValueError(f"length prefix of {n} bytes")
                    c.conv = arg
                    if arg == CONV_CODEC:
                        codecs.append(obj.encode("ascii"))
                    elif arg == CONV_CHARMAP:
                        c.ascii = obj[:128] == _ASCII
                    elif arg == CONV_BINPAD:
                        c.pad = obj
                elif c.op in (OP_INT, OP_UINT_BE, OP_UINT_LE, OP_SET) and not 1 <= n <= 8:
                    raise ValueError(f"integer of {n} bytes")
                if c.op == OP_SET:
                    c.arg = len(obj)
                    obj = (tuple(obj), {})  # the members, and the member tuples of masks seen
                self.objs.append(obj)
                k += 1
        # Codec names live as bytes objects in one list so that their char pointers stay valid.
        self.codecs_keep = b"\0".join(codecs) + b"\0"
        cdef const char *p = PyBytes_AS_STRING(self.codecs_keep)
        cdef int j = 0
        for i in range(total):
            if self.cols[i].op == OP_VAR and self.cols[i].conv == CONV_CODEC:
                self.cols[i].codec = p
                while p[0] != 0:
                    p += 1
                p += 1
                j += 1

    def decode(self, bytes buf, Py_ssize_t start, Py_ssize_t end):
        """The rows of ``buf[start:end]``: value tuples, or (before, after) pairs for updates."""
        return self._decode(buf, start, end)

    cdef list _decode(self, bytes buf, Py_ssize_t start, Py_ssize_t end):
        cdef const uint8_t *b = <const uint8_t *>PyBytes_AS_STRING(buf)
        cdef Py_ssize_t pos = start
        cdef list rows = []
        cdef object before, after
        if start < 0 or end > PyBytes_GET_SIZE(buf) or start > end:
            raise Reject("body outside the buffer")
        while pos < end:
            before = self._image(buf, b, &pos, end, 0)
            if self.nimages == 2:
                after = self._image(buf, b, &pos, end, 1)
                rows.append((before, after))
            else:
                rows.append(before)
        return rows

    def lines(self, bytes buf, Py_ssize_t start, Py_ssize_t end, int kind, bytes head, tuple keys, bytes mid,
              Py_ssize_t pos, bytes gtid_ts, long long ts, object fallback):
        """What ``rows_jsonl(kind, head, keys, self.decode(buf, start, end), mid, pos, gtid_ts, ts,
        ABSENT, fallback)`` returns, written from the body with no value tuple (``_rowjson.pxi``);
        ``head`` None: each row's images alone. ``Reject`` as ``decode``."""
        cdef _Buf o
        if not self.ordered:
            raise ValueError("the images' columns are not in table order")
        o.data = NULL
        o.size = o.cap = 0
        try:
            _rows_text(self, &o, buf, start, end, kind, head, keys, mid, pos, gtid_ts, ts, fallback)
            return PyBytes_FromStringAndSize(o.data, o.size)
        finally:
            PyMem_Free(o.data)

    def count(self, bytes buf, Py_ssize_t start, Py_ssize_t end):
        """The number of rows in ``buf[start:end]``, by the images' lengths alone."""
        if start < 0 or end > PyBytes_GET_SIZE(buf) or start > end:
            raise Reject("body outside the buffer")
        return self._count(<const uint8_t *>PyBytes_AS_STRING(buf), start, end)

    cdef Py_ssize_t _count(self, const uint8_t *b, Py_ssize_t start, Py_ssize_t end) except -1:
        """The number of rows in ``b[start:end]``, walking the images by their lengths alone (no
        value decoded); ``Reject`` where a length runs past the end."""
        cdef Py_ssize_t pos = start, rows = 0, length
        cdef int image, j, count, nbytes
        cdef const uint8_t *nulls
        cdef Col *c
        while pos < end:
            for image in range(self.nimages):
                count = self.counts[image]
                nbytes = (count + 7) >> 3
                if pos + nbytes > end:
                    raise Reject("null bitmap")
                nulls = b + pos
                pos += nbytes
                for j in range(count):
                    if nulls[j >> 3] >> (j & 7) & 1:
                        continue
                    c = &self.cols[self.firsts[image] + j]
                    if c.op == OP_VAR:
                        if pos + c.n > end:
                            raise Reject("length prefix")
                        length = _le(b + pos, c.n)
                        if length > end - pos - c.n:
                            raise Reject("value")
                        pos += c.n + length
                    elif c.op != OP_NULL:
                        if pos + c.n > end:
                            raise Reject("value")
                        pos += c.n
            rows += 1
        return rows

    cdef object _image(self, bytes buf, const uint8_t *b, Py_ssize_t *ppos, Py_ssize_t end, int image):
        cdef int count = self.counts[image]
        cdef int first = self.firsts[image]
        cdef int nbytes = (count + 7) >> 3
        cdef Py_ssize_t pos = ppos[0]
        cdef const uint8_t *nulls = b + pos
        cdef int i, j
        cdef Col *c
        cdef object row = PyTuple_New(self.ncols)
        cdef object v
        if pos + nbytes > end:
            raise Reject("null bitmap")
        pos += nbytes
        for i in range(self.ncols):
            Py_INCREF(self.absent)
            PyTuple_SET_ITEM(row, i, self.absent)
        for j in range(count):
            c = &self.cols[first + j]
            if nulls[j >> 3] >> (j & 7) & 1:
                v = None
            else:
                v = self._value(buf, b, &pos, end, c, first + j)
            # The slot holds a borrowed ABSENT placed above; replacing it drops that reference.
            _set_item(row, c.index, v)
        ppos[0] = pos
        return row

    cdef object _value(self, bytes buf, const uint8_t *b, Py_ssize_t *ppos, Py_ssize_t end, Col *c, int k):
        cdef Py_ssize_t pos = ppos[0]
        cdef Py_ssize_t length, q
        cdef int op = c.op
        cdef int n = c.n
        cdef uint64_t u
        cdef object v
        if op == OP_VAR:
            if pos + n > end:
                raise Reject("length prefix")
            length = _le(b + pos, n)
            q = pos + n + length
            if q > end:
                raise Reject("value")
            v = _convert(self, b + pos + n, length, c, k)
            ppos[0] = q
            return v
        if op == OP_NULL:
            return None
        if pos + n > end:
            raise Reject("value")
        ppos[0] = pos + n
        if op == OP_INT:
            u = _le(b + pos, n)
            if c.arg:
                return PyLong_FromLongLong(_signed(u, n))
            return PyLong_FromUnsignedLongLong(u)
        if op == OP_FLOAT:
            return _float(b + pos, n)
        if op == OP_YEAR:
            return b[pos] + 1900 if b[pos] else 0
        if op == OP_ENUM:
            u = _le(b + pos, n)
            members = self.objs[k]
            if members is None:
                return PyLong_FromUnsignedLongLong(u)
            if u >= <uint64_t>len(members):
                raise Reject("enum")
            return members[u]
        if op == OP_UINT_BE:
            return PyLong_FromUnsignedLongLong(_be(b + pos, n))
        if op == OP_UINT_LE:
            return PyLong_FromUnsignedLongLong(_le(b + pos, n))
        if op == OP_SET:
            return _set_members(self.objs[k], _le(b + pos, n), c.arg)
        if op == OP_DECIMAL:
            v = _decimal(b + pos, c.arg >> 8, c.arg & 0xFF, n)
        elif OP_DATE <= op <= OP_TIME2:
            v = _temporal(op, b + pos, c.arg)
        else:
            v = None  # OP_CALL
        if v is None:
            v = self.objs[k](buf, pos)
        return v


include "_rowobjects.pxi"
include "_rowvalues.pxi"
include "_jsonbinary.pxi"
include "_jsonlines.pxi"
include "_rowjson.pxi"
include "_typedcolumn.pxi"
include "_typedimages.pxi"
include "_typedvalues.pxi"
include "_changerows.pxi"
include "_crc32.pxi"
include "_eventframes.pxi"
include "_eventrun.pxi"
include "_framing.pxi"
include "_textrows.pxi"
include "_jsontext.pxi"


import sys as _sys
if _sys.byteorder != "little":  # pragma: no cover - FLOAT/DOUBLE are copied as host doubles
    raise ImportError("the compiled row core needs a little-endian machine")
