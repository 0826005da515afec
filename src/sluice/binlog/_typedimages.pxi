# Included by _rowcore.pyx: a table's row images as typed column buffers, beside its JSON images.
#
# ``ChangeRows`` writes each row image as JSON text for the change log; the pipeline's tasks also
# need the last state per key in the mirror's types, and parsing that JSON back costs them more
# than typing the values as they are written. A ``TypedImages`` per table keeps the same images
# column by column while ChangeRows writes them: integers as int64, FLOAT and DOUBLE as float64,
# binary strings as their bytes, every value whose JSON form is a string (text, DECIMAL digits,
# dates and times) as that string's UTF-8, NULL as a cleared validity byte. It types nothing the
# JSON reader would read differently: a value of any other kind, a column of mixed kinds, a
# minimal image, a text with an escape in its JSON form or an integer beyond int64 marks it
# ``failed``, and its JSON images are parsed instead (``sluice.lake.mirror.merge_source.merge_source``,
# which is the reference: a test holds the two equal). A value the JSON reader would read otherwise
# (a NaN, a JSON document, a SET) makes only its column ``_TY_NONE``, typed no further, except
# where ``_typed_value`` (``_typedvalues.pxi``) can keep what the reader of that column expects
# (``sluice.lake.types.read_plans``): a JSON document's text, a SET's members joined by commas.


cdef class TypedImages:
    """One table's row changes as typed columns: the op of each change (0 insert, 1 update,
    2 delete), the after images of inserts and updates, the before images of updates and deletes."""

    cdef public tuple keys      # the images' column keys, as ChangeRows takes them
    cdef public bint failed     # some image has no typed form: use the JSON images
    cdef public Py_ssize_t length
    cdef _Buf ops
    cdef list after, before

    def __cinit__(self, tuple keys):
        self.keys = keys
        self.failed = False
        self.length = 0
        self.ops.data = NULL
        self.ops.size = self.ops.cap = 0
        self.after = [_TypedColumn() for _ in keys]
        self.before = [_TypedColumn() for _ in keys]

    def __dealloc__(self):
        PyMem_Free(self.ops.data)

    cdef int _image(self, list columns, object row, object absent, object fallback, uint64_t json) except -1:
        cdef Py_ssize_t j, n = len(columns)
        if type(row) is not tuple or len(<tuple>row) != n:
            return 0
        for j in range(n):
            (<_TypedColumn>columns[j]).json = j < 64 and (json >> j) & 1
            v = (<tuple>row)[j]
            if v is absent:
                return 0
            if not (<_TypedColumn>columns[j]).put(v, fallback):
                (<_TypedColumn>columns[j]).untype()
        return 1

    cdef int add_rows(self, int kind, list rows, object absent, object fallback, uint64_t json=0) except -1:
        """Add a rows event's rows (as ChangeRows takes them; bit j of ``json`` set for a JSON
        column j); a minimal image makes the whole table ``failed``, a value without a typed form
        its column ``_TY_NONE``."""
        cdef Py_ssize_t i
        cdef char op = <char>kind
        if self.failed:
            return 0
        for i in range(len(rows)):
            row = rows[i]
            if kind == 0:
                ok = self._image(self.after, row, absent, fallback, json)
            elif kind == 2:
                ok = self._image(self.before, row, absent, fallback, json)
            else:
                ok = (type(row) is tuple and len(<tuple>row) == 2
                      and self._image(self.before, (<tuple>row)[0], absent, fallback, json)
                      and self._image(self.after, (<tuple>row)[1], absent, fallback, json))
            if not ok:
                self.failed = True
                return 0
            _out(&self.ops, &op, 1)
            self.length += 1
        return 0

    cdef int add_body(self, int kind, RowProgram prog, bytes buf, Py_ssize_t start, Py_ssize_t end,
                      object fallback) except -1:
        """``add_rows`` of ``prog.decode(buf, start, end)``, read from the body itself; ``Reject``
        where ``decode`` rejects it. ``prog.ordered`` must hold."""
        cdef const uint8_t *b = <const uint8_t *>PyBytes_AS_STRING(buf)
        cdef Py_ssize_t p = start
        cdef char op = <char>kind
        cdef int ok
        if self.failed:
            return 0
        if start < 0 or end > PyBytes_GET_SIZE(buf) or start > end:
            raise Reject("body outside the buffer")
        while p < end:
            if kind == 0:
                ok = self._image_body(self.after, prog, buf, b, &p, end, 0, fallback)
            elif kind == 2:
                ok = self._image_body(self.before, prog, buf, b, &p, end, 0, fallback)
            else:
                ok = (self._image_body(self.before, prog, buf, b, &p, end, 0, fallback)
                      and self._image_body(self.after, prog, buf, b, &p, end, 1, fallback))
            if not ok:
                self.failed = True
                return 0
            _out(&self.ops, &op, 1)
            self.length += 1
        return 0

    cdef int _image_body(self, list columns, RowProgram prog, bytes buf, const uint8_t *b, Py_ssize_t *ppos,
                         Py_ssize_t end, int image, object fallback) except -1:
        """``_image`` of one image's tuple, value by value from the body; 0 (``ppos`` left where
        it was) for a minimal image."""
        cdef int count = prog.counts[image]
        cdef int first = prog.firsts[image]
        cdef int nbytes = (count + 7) >> 3
        cdef Py_ssize_t pos = ppos[0]
        cdef const uint8_t *nulls = b + pos
        cdef int j
        cdef Py_ssize_t at
        cdef _TypedColumn col
        if count != len(columns):
            return 0  # a minimal image: its columns are in table order, so this says it is whole
        if pos + nbytes > end:
            raise Reject("null bitmap")
        pos += nbytes
        for j in range(count):
            col = <_TypedColumn>columns[j]
            col.json = prog.cols[first + j].conv == CONV_JSON
            if nulls[j >> 3] >> (j & 7) & 1:
                col.put_null()
            elif col.kind == _TY_NONE:
                prog._value(buf, b, &pos, end, &prog.cols[first + j], first + j)
                col.put_null()
            else:
                at = pos
                if not _typed_value(prog, col, buf, b, &pos, end, &prog.cols[first + j], first + j, fallback):
                    if pos == at:  # not read past yet
                        prog._value(buf, b, &pos, end, &prog.cols[first + j], first + j)
                    col.untype()
        ppos[0] = pos
        return 1

    def extend(self, TypedImages other):
        """Append ``other``'s changes (the same table's, later in the binlog)."""
        cdef Py_ssize_t j
        if self.failed:
            return
        if other.failed or other.keys != self.keys:
            self.failed = True
            return
        for j in range(len(self.after)):
            if not ((<_TypedColumn>self.after[j]).extend(<_TypedColumn>other.after[j])
                    and (<_TypedColumn>self.before[j]).extend(<_TypedColumn>other.before[j])):
                self.failed = True
                return
        _out(&self.ops, other.ops.data, other.ops.size)
        self.length += other.length

    @property
    def untyped(self):
        """Which columns keep no typed values (``_TY_NONE``), as a bit mask: bit j for the after
        images' column j, bit n + j for the before images' (n columns)."""
        cdef Py_ssize_t j, n = len(self.after)
        mask = 0
        for j in range(n):
            if (<_TypedColumn>self.after[j]).kind == _TY_NONE:
                mask |= 1 << j
            if (<_TypedColumn>self.before[j]).kind == _TY_NONE:
                mask |= 1 << (n + j)
        return mask

    def buffers(self):
        """(ops: a byte per change, after columns, before columns); a column is (kind: 0 only NULLs,
        1 int64, 2 text, 3 not kept, 4 float64, 5 bytes; length; validity bytes; int32 offsets; data),
        handed over with no copy (``_Block``): the images are left empty."""
        out = (_taken(&self.ops), [(<_TypedColumn>c).buffers() for c in self.after],
               [(<_TypedColumn>c).buffers() for c in self.before])
        self.length = 0
        return out
