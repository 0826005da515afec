# Included by _rowcore.pyx: row changes in the change log's columns, built in C.
#
# The twin is ``sluice.spark.source.change_frame.record_batch`` over ``RowChange`` / ``DdlRecord`` records. Here
# a rows event's rows go straight into the buffers of the Arrow columns (``sluice.spark.source.change_frame``
# makes the arrays from them without copying): the before / after images as UTF-8 JSON text with
# int32 offsets and a validity bitmap, and the per-row numbers. Everything that is the same for all
# rows of an event (op, db, table, pk, file; ``ddl`` for a DDL record) is one "meta" tuple, and a
# row holds its index; the GTID and commit time are set per transaction by ``extend``.


from sluice.errors import UnsupportedError as _UnsupportedError

cdef int _too_large() except -1:
    raise _UnsupportedError(
        "the row changes of one transaction hold more than 2 GiB of JSON images, more than one Arrow "
        "string column takes: read that range with sluice dump or sluice tail instead"
    )


cdef int _bit(_Buf *bits, Py_ssize_t i, bint value) except -1:
    """Set bit ``i`` of a validity bitmap that grows one byte at a time."""
    if (i >> 3) >= bits.size:
        _out(bits, b"\0", 1)
    if value:
        bits.data[i >> 3] |= <char>(1 << (i & 7))
    return 0


cdef class ChangeRows:
    """Row changes as change-log columns: JSON images, meta index, pos, row, ts, GTID, commit time."""

    cdef _Buf text[3]       # before, after, json_diffs: UTF-8 JSON text
    cdef _Buf offsets[3]    # int32, length + 1 entries
    cdef _Buf valid[3]      # validity bitmaps
    cdef _Buf meta, gtid, pos, row, ts, commit
    cdef public list metas  # (op, db, table, pk, file, ddl) of each meta index
    cdef dict meta_ids
    cdef public list gtids  # the GTIDs (str or None) the gtid column indexes
    cdef public Py_ssize_t length
    cdef public Py_ssize_t max_text  # bytes of JSON text a column may hold: Arrow strings' int32 offsets
    cdef public dict typed  # (db, table) -> TypedImages: the same images as typed columns
    cdef public bint keep_typed  # whether ``_add_rows_whole`` fills ``typed`` (the pipeline's tasks)

    def __cinit__(self):
        cdef int i
        for i in range(3):
            self.text[i].data = self.offsets[i].data = self.valid[i].data = NULL
            self.text[i].size = self.offsets[i].size = self.valid[i].size = 0
            self.text[i].cap = self.offsets[i].cap = self.valid[i].cap = 0
        self.meta.data = self.gtid.data = self.pos.data = self.row.data = self.ts.data = self.commit.data = NULL
        self.meta.size = self.gtid.size = self.pos.size = self.row.size = self.ts.size = self.commit.size = 0
        self.meta.cap = self.gtid.cap = self.pos.cap = self.row.cap = self.ts.cap = self.commit.cap = 0
        self.metas = []
        self.meta_ids = {}
        self.gtids = []
        self.length = 0
        self.max_text = 0x7FFFFFFF
        self.typed = {}
        for i in range(3):
            _i32(&self.offsets[i], 0)

    def __dealloc__(self):
        cdef int i
        for i in range(3):
            PyMem_Free(self.text[i].data)
            PyMem_Free(self.offsets[i].data)
            PyMem_Free(self.valid[i].data)
        PyMem_Free(self.meta.data)
        PyMem_Free(self.gtid.data)
        PyMem_Free(self.pos.data)
        PyMem_Free(self.row.data)
        PyMem_Free(self.ts.data)
        PyMem_Free(self.commit.data)

    def meta_id(self, tuple meta):
        """The index of ``meta`` (op, db, table, pk, file, ddl), added when new."""
        found = self.meta_ids.get(meta)
        if found is None:
            found = self.meta_ids[meta] = len(self.metas)
            self.metas.append(meta)
        return found

    cdef int _close_text(self, int i, bint valid) except -1:
        if self.text[i].size > self.max_text:
            _too_large()
        _bit(&self.valid[i], self.length, valid)
        return _i32(&self.offsets[i], <int32_t>self.text[i].size)

    cdef int _row_numbers(self, int32_t meta, int64_t pos, int32_t row, int64_t ts) except -1:
        _i32(&self.meta, meta)
        _i32(&self.gtid, -1)
        _i64(&self.pos, pos)
        _i32(&self.row, row)
        _i64(&self.ts, ts)
        _i64(&self.commit, 0)
        self.length += 1
        return 0

    cdef int _add_rows(self, int kind, tuple keys, list rows, int32_t meta, int64_t pos, int64_t ts,
                       object absent, object fallback) except -1:
        cdef Py_ssize_t i
        for i in range(len(rows)):
            row = rows[i]
            if kind == 0:
                self._close_text(0, False)
                _out_image(&self.text[1], <tuple?>row, keys, absent, fallback)
                self._close_text(1, True)
            elif kind == 2:
                _out_image(&self.text[0], <tuple?>row, keys, absent, fallback)
                self._close_text(0, True)
                self._close_text(1, False)
            else:
                _out_image(&self.text[0], <tuple?>(<tuple?>row)[0], keys, absent, fallback)
                self._close_text(0, True)
                _out_image(&self.text[1], <tuple?>(<tuple?>row)[1], keys, absent, fallback)
                self._close_text(1, True)
            self._close_text(2, False)
            self._row_numbers(meta, pos, <int32_t>i, ts)
        return 0

    def add_rows(self, int kind, tuple keys, list rows, int meta, int64_t pos, int64_t ts, absent, fallback,
                 uint64_t json=0):
        """The rows of a rows event (``kind`` 0 write, 1 update, 2 delete), as ``rows_jsonl`` takes
        them; ``ts`` in microseconds; bit j of ``json`` set for a JSON column j (its typed images
        keep the text of its JSON image). On an error nothing of the event is kept."""
        self._add_rows_whole(kind, keys, rows, meta, pos, ts, absent, fallback, None, None, 0, 0, json)
        return len(rows)

    def add_body(self, int kind, tuple keys, RowProgram prog, bytes buf, Py_ssize_t start, Py_ssize_t end, int meta,
                 int64_t pos, int64_t ts, fallback):
        """``add_rows`` of ``prog.decode(buf, start, end)``, written from the body itself, as the
        event runs do; ``Reject`` where ``decode`` rejects it, and then nothing is kept."""
        if not prog.ordered:
            raise ValueError("the images' columns are not in table order")
        self._add_rows_whole(kind, keys, None, meta, pos, ts, None, fallback, prog, buf, start, end)

    cdef int _add_body(self, int kind, tuple keys, RowProgram prog, bytes buf, Py_ssize_t start, Py_ssize_t end,
                       int32_t meta, int64_t pos, int64_t ts, object fallback) except -1:
        """The rows of ``buf[start:end]``, a body of ``prog``'s shape, written from its bytes
        (``_image_text``) as ``_add_rows`` writes them once decoded; ``prog.ordered`` must hold."""
        cdef const uint8_t *b = <const uint8_t *>PyBytes_AS_STRING(buf)
        cdef Py_ssize_t p = start
        cdef int32_t i = 0
        if start < 0 or end > PyBytes_GET_SIZE(buf) or start > end:
            raise Reject("body outside the buffer")
        if len(keys) != prog.ncols:
            raise ValueError(f"a row of {prog.ncols} values for {len(keys)} column names")
        while p < end:
            if kind == 0:
                self._close_text(0, False)
                _image_text(prog, &self.text[1], buf, b, &p, end, 0, keys, fallback)
                self._close_text(1, True)
            elif kind == 2:
                _image_text(prog, &self.text[0], buf, b, &p, end, 0, keys, fallback)
                self._close_text(0, True)
                self._close_text(1, False)
            else:
                _image_text(prog, &self.text[0], buf, b, &p, end, 0, keys, fallback)
                self._close_text(0, True)
                _image_text(prog, &self.text[1], buf, b, &p, end, 1, keys, fallback)
                self._close_text(1, True)
            self._close_text(2, False)
            self._row_numbers(meta, pos, i, ts)
            i += 1
        return 0

    cdef int _add_rows_whole(self, int kind, tuple keys, list rows, int32_t meta, int64_t pos, int64_t ts,
                             object absent, object fallback, RowProgram prog=None, bytes buf=None,
                             Py_ssize_t start=0, Py_ssize_t end=0, uint64_t json=0) except -1:
        """``_add_rows``, or with ``rows`` None ``_add_body`` (``prog``'s body ``buf[start:end]``),
        and the typed images when kept; on an error nothing is kept."""
        cdef Py_ssize_t length = self.length
        cdef Py_ssize_t sizes[12]
        cdef int i
        cdef TypedImages typed
        cdef _Buf *bufs[12]
        bufs[0], bufs[1], bufs[2] = &self.text[0], &self.text[1], &self.text[2]
        bufs[3], bufs[4], bufs[5] = &self.offsets[0], &self.offsets[1], &self.offsets[2]
        bufs[6], bufs[7], bufs[8] = &self.meta, &self.gtid, &self.pos
        bufs[9], bufs[10], bufs[11] = &self.row, &self.ts, &self.commit
        for i in range(12):
            sizes[i] = bufs[i].size
        typed = None
        if self.keep_typed:
            owner = self.metas[meta]
            typed = <TypedImages>self.typed.get((owner[1], owner[2]))
            if typed is None:
                typed = self.typed[(owner[1], owner[2])] = TypedImages(keys)
            elif typed.keys is not keys and typed.keys != keys:
                typed.failed = True
        try:
            if rows is None:
                self._add_body(kind, keys, prog, buf, start, end, meta, pos, ts, fallback)
                if typed is not None:
                    typed.add_body(kind, prog, buf, start, end, fallback)
            else:
                self._add_rows(kind, keys, rows, meta, pos, ts, absent, fallback)
                if typed is not None:
                    typed.add_rows(kind, rows, absent, fallback, json)
        except BaseException:
            if typed is not None:
                typed.failed = True
            for i in range(12):
                bufs[i].size = sizes[i]
            for i in range(3):  # bits of the dropped rows: cleared, the bitmap cut to the kept rows
                if self.valid[i].size > ((length + 7) >> 3):
                    self.valid[i].size = (length + 7) >> 3
                if length & 7 and self.valid[i].size:
                    self.valid[i].data[length >> 3] &= <char>((1 << (length & 7)) - 1)
            self.length = length
            raise
        return 0

    def add(self, int meta, before, after, diffs, int64_t pos, int row, int64_t ts):
        """One row change whose JSON texts (str or None) were made elsewhere."""
        cdef int i
        for i, text in enumerate((before, after, diffs)):
            if text is not None:
                _out_bytes(&self.text[i], (<str?>text).encode("utf-8"))
            self._close_text(i, text is not None)
        self._row_numbers(meta, pos, row, ts)

    def extend(self, ChangeRows other, gtid=False, int64_t commit_us=0):
        """Append ``other``'s rows; with ``gtid`` given (str or None) they get that GTID and commit
        time (µs), else none yet (a transaction's rows, gathered before it commits)."""
        cdef Py_ssize_t i, n = other.length, base = self.length
        cdef int k
        cdef int32_t g = -1, shift
        cdef int32_t *offs
        cdef int32_t *metas
        if n == 0:
            return
        remap = [self.meta_id(meta) for meta in other.metas]
        if gtid is not False:
            g = len(self.gtids)
            self.gtids.append(gtid)
        for k in range(3):
            if self.text[k].size + other.text[k].size > self.max_text:
                _too_large()
            shift = <int32_t>self.text[k].size
            _out(&self.text[k], other.text[k].data, other.text[k].size)
            offs = <int32_t *>other.offsets[k].data
            for i in range(1, n + 1):
                _i32(&self.offsets[k], offs[i] + shift)
            for i in range(n):
                _bit(&self.valid[k], base + i, (<uint8_t>other.valid[k].data[i >> 3] >> (i & 7)) & 1)
        metas = <int32_t *>other.meta.data
        for i in range(n):
            _i32(&self.meta, <int32_t>remap[metas[i]])
            _i32(&self.gtid, g)
            _i64(&self.commit, commit_us if g >= 0 else 0)
        _out(&self.pos, other.pos.data, other.pos.size)
        _out(&self.row, other.row.data, other.row.size)
        _out(&self.ts, other.ts.data, other.ts.size)
        self.length += n
        for key, images in other.typed.items():
            mine = self.typed.get(key)
            if mine is None:
                mine = self.typed[key] = TypedImages((<TypedImages>images).keys)
            mine.extend(images)

    def buffers(self):
        """Hand the column buffers over, with no copy, as objects of the buffer protocol, by the
        change schema's column names: ``before`` / ``after`` / ``json_diffs`` (validity, offsets,
        text), ``meta`` (int32 index into ``metas``), ``gtid`` (int32 index into ``gtids``, -1 none),
        ``pos`` (int64), ``row`` (int32), ``ts`` and ``commit_ts`` (int64 µs). The rows are left
        empty; their metas, GTIDs and typed images stay."""
        cdef int k
        out = {}
        for k, name in enumerate(("before", "after", "json_diffs")):
            out[name] = (_taken(&self.valid[k]), _taken(&self.offsets[k]), _taken(&self.text[k]))
            _i32(&self.offsets[k], 0)
        out["meta"] = _taken(&self.meta)
        out["gtid"] = _taken(&self.gtid)
        out["pos"] = _taken(&self.pos)
        out["row"] = _taken(&self.row)
        out["ts"] = _taken(&self.ts)
        out["commit_ts"] = _taken(&self.commit)
        self.length = 0
        return out
