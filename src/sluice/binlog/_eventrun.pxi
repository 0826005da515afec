# Included by _rowcore.pyx: runs of events taken in C (framing, CRC32 checks, TABLE_MAP reuse, rows).
#
# Inside a transaction a binlog is mostly TABLE_MAP and rows events, one pair per statement. The
# Python parser makes a header, an event object and a table entry for each; here a run of them is
# framed, checked and decoded without a Python object per event. ``EventRun.run`` takes events for
# as long as it can do everything the parser would do with them, and stops at the first one it
# cannot (any other type, a TABLE_MAP it has not seen, a shape without a program, a CRC mismatch,
# bytes that run short): the parser then takes that event, with its precise errors, and the run
# goes on after it. It never raises on bad input and never reads outside ``buf[pos:end]``.

from cpython.dict cimport PyDict_GetItem
from cpython.ref cimport PyObject
from libc.string cimport memcmp


#: The event types a run takes (a reader need not offer it any other).
RUN_TYPES = frozenset({T_TABLE_MAP, T_ANNOTATE_ROWS, *range(T_WRITE_V1, T_DELETE_V1 + 1),
                       *range(T_WRITE_V2, T_DELETE_V2 + 1)})


cdef inline int _phl(bytes phl, int type_code, int default):
    cdef int i = type_code - 1
    if i < PyBytes_GET_SIZE(phl) and (<const uint8_t *>PyBytes_AS_STRING(phl))[i]:
        return (<const uint8_t *>PyBytes_AS_STRING(phl))[i]
    return default


cdef class EventRun:
    """Takes runs of TABLE_MAP, rows and ANNOTATE_ROWS events for one ``EventParser``.

    ``run`` reads the parser's stream state (checksum algorithm, post-header lengths, the table
    maps of the open transaction) and updates it as the parser would. A TABLE_MAP is taken when its
    bytes equal those of the entry last seen with its table id (the entry, with its compiled plan,
    is put back into the transaction's maps); ``version`` is the schema version the entries' plans
    were made under, and a new one forgets them all. A rows event is taken when its table's plan
    and body shape already have a compiled program.
    """

    cdef object parser
    cdef dict known             # table id -> the parser's table entry last used with that id
    cdef object version
    cdef object build_header
    cdef object build_rows
    cdef Py_ssize_t counts[3]   # rows counted per kind (write, update, delete) when not kept
    cdef public Py_ssize_t taken  # events taken, in all
    cdef public bint skip_values  # counting: walk the rows by their lengths, decode no value
    # JSON lines (``write_lines``): the rows are written as lines instead of kept in events
    cdef object line_spec
    cdef object lines_of
    cdef object absent
    cdef object fallback
    cdef bint kept[3]
    cdef dict specs             # table id -> (entry, file, heads, keys, mid) / (entry, file, metas, keys)
    cdef bint columns           # ``write_columns``: the rows go into ChangeRows instead
    cdef bint typed             # and their images into ChangeRows.typed as well
    cdef ChangeRows chunk       # the change-log columns of the run under way, made at its first row

    def __init__(self, parser, build_header, build_rows):
        """``build_header`` / ``build_rows`` build ``EventHeader`` / ``RowsEvent`` from their fields."""
        self.parser = parser
        self.known = {}
        self.version = None
        self.build_header = build_header
        self.build_rows = build_rows

    def write_lines(self, line_spec, kinds, absent, fallback, lines_of):
        """Write the rows of the kinds in ``kinds`` (write/update/delete) as JSON lines
        (``rows_jsonl``) instead of putting rows events into the sink: each run that wrote any
        puts ``(file, offset, lines_of(data, rows))`` there. ``line_spec(table_map, file)`` gives
        a table's ``(heads per kind, keys, mid)``, or None to leave its rows to the parser."""
        self.line_spec = line_spec
        self.lines_of = lines_of
        self.absent = absent
        self.fallback = fallback
        for k in range(3):
            self.kept[k] = kinds is None or _KINDS[k] in kinds
        self.specs = {}

    def write_columns(self, line_spec, kinds, absent, fallback, typed=False):
        """Put the rows of the kinds in ``kinds`` into change-log columns instead of rows events:
        each run that took any puts ``(file, offset, ChangeRows)`` into the sink.
        ``line_spec(table_map, file)`` gives a table's ``(metas per kind, keys)`` (see
        ``ChangeRows``), or None to leave its rows to the parser. ``typed``: keep the images as
        typed columns too (``ChangeRows.typed``)."""
        self.write_lines(line_spec, kinds, absent, fallback, None)
        self.columns = True
        self.typed = typed

    cdef object _spec(self, long long tid, object entry, object tm, str file):
        """The table's line spec as ``(entry, file, *line_spec(tm, file))``, kept per table id;
        None when the table's rows are left to the parser."""
        spec = self.specs.get(tid)
        if spec is None or spec[0] is not entry or spec[1] != file:
            spec = self.line_spec(tm, file)
            if spec is None:
                return None
            spec = self.specs[tid] = (entry, file, *spec)
        return spec

    def take_counts(self):
        """Rows counted since the last call, per kind: ``(write, update, delete)``."""
        out = (self.counts[0], self.counts[1], self.counts[2])
        self.counts[0] = self.counts[1] = self.counts[2] = 0
        return out

    def run(self, bytes buf, Py_ssize_t pos, Py_ssize_t end, str file, Py_ssize_t base, list sink, version,
            bytes gtid_ts=None):
        """Take the events of ``buf[pos:end]`` from ``pos`` on; return the offset of the first event
        not taken (``end`` when all were). ``sink`` None counts the rows of each kind; a list gets
        ``(file, base + offset, RowsEvent)`` for every rows event, or the lines of the run (see
        ``write_lines``; ``gtid_ts`` is their ``,"gtid":…,"ts":``)."""
        cdef object p = self.parser
        cdef Py_ssize_t n = PyBytes_GET_SIZE(buf)
        cdef Py_ssize_t size, start = pos
        cdef int tc, took
        cdef object maps
        cdef _Run r
        r.b = <const uint8_t *>PyBytes_AS_STRING(buf)
        r.lines = sink is not None and self.line_spec is not None and gtid_ts is not None
        r.columns = sink is not None and self.line_spec is not None and self.columns
        r.took_map = False
        r.skipped_rows = r.skipped_maps = r.written = 0
        r.out.data = NULL
        r.out.size = r.out.cap = 0
        if pos < 0:
            return pos
        if end < n:
            n = end
        if not self._stream(&r):
            return pos
        maps = p._maps
        if version != self.version:
            self.known.clear()
            if self.specs is not None:
                self.specs.clear()
            self.version = version
        self.chunk = None
        continued = None
        if r.columns and sink:
            # The transaction's last event is the change-log columns of a run before this one (the
            # parser took nothing in between): this run's rows go on in them, not into a chunk of
            # their own that the commit or the part would copy into one.
            tail = sink[len(sink) - 1]
            if (type(tail) is tuple and len(tail) == 3 and type(tail[2]) is ChangeRows
                    and (<ChangeRows>tail[2]).keep_typed == self.typed):
                self.chunk = continued = tail[2]
        try:
            while n - pos >= 19:
                tc = r.b[pos + 4]
                size = _u32(r.b + pos + 9)
                if size < 19 + r.tail or size > n - pos:
                    break
                if tc == T_TABLE_MAP:
                    took = self._take_map(&r, maps, pos, size)
                elif tc == T_ANNOTATE_ROWS:
                    # The statement text of the rows that follow (MariaDB): nothing reads it.
                    took = not _crc_bad(&r, pos, size)
                elif T_WRITE_V1 <= tc <= T_DELETE_V1 or T_WRITE_V2 <= tc <= T_DELETE_V2:
                    took = self._take_rows(&r, maps, tc, pos, size, buf, file, base, sink, gtid_ts)
                else:
                    break
                if not took:
                    break
                pos += size
                self.taken += 1
        finally:
            self._finish(&r, file, base + start, sink, continued)
        return pos

    cdef int _stream(self, _Run *r) except -1:
        """Read the parser's stream state into ``r``; 0 when its checksum algorithm is not one a
        run reads."""
        cdef object p = self.parser
        cdef bytes phl
        alg = p.checksum_alg
        if alg is None or (alg != 0 and alg != 1):
            return 0
        r.crc = alg == 1
        r.tail = 4 if r.crc else 0
        r.verify = bool(p._verify)
        phl = p._phl
        r.tm_ok = _phl(phl, T_TABLE_MAP, 8) == 8
        r.v1_ok = (_phl(phl, T_WRITE_V1, 8) == 8 and _phl(phl, T_WRITE_V1 + 1, 8) == 8
                   and _phl(phl, T_DELETE_V1, 8) == 8)
        r.v2_ok = (_phl(phl, T_WRITE_V2, 10) == 10 and _phl(phl, T_WRITE_V2 + 1, 10) == 10
                   and _phl(phl, T_DELETE_V2, 10) == 10)
        return 1

    cdef int _take_map(self, _Run *r, object maps, Py_ssize_t pos, Py_ssize_t size) except -1:
        """Take the TABLE_MAP at ``pos`` when its bytes equal those of the entry last seen with its
        table id, putting that entry back into the transaction's maps; 0 when the parser takes it."""
        cdef Py_ssize_t bs = pos + 19, be = pos + size - r.tail
        cdef long long tid
        cdef PyObject *hit
        cdef object entry, raw
        if not r.tm_ok or be - bs < 8:
            return 0
        if _crc_bad(r, pos, size):
            return 0
        tid = _table_id(r.b + bs)
        hit = PyDict_GetItem(self.known, tid)
        if hit is NULL:
            return 0
        entry = <object>hit
        raw = entry.table_map.raw
        if (type(raw) is not bytes or PyBytes_GET_SIZE(raw) != be - bs
                or memcmp(PyBytes_AS_STRING(raw), r.b + bs, be - bs) != 0):
            return 0
        maps[tid] = entry
        r.took_map = True
        if entry.plan is False:
            r.skipped_maps += 1
        return 1

    cdef int _take_rows(self, _Run *r, object maps, int tc, Py_ssize_t pos, Py_ssize_t size, bytes buf,
                        str file, Py_ssize_t base, list sink, bytes gtid_ts) except -1:
        """Take the rows event at ``pos`` when its table's plan and body shape have a compiled
        program; 0 when the parser takes it."""
        cdef _Rows e
        cdef PyObject *hit
        cdef object entry, plan, tm, program
        if not _rows_head(r, &e, tc, pos, size):
            return 0
        hit = PyDict_GetItem(maps, e.tid)
        if hit is NULL:
            return 0
        entry = <object>hit
        if PyDict_GetItem(self.known, e.tid) != hit:
            # The parser took this table's TABLE_MAP: its next one with the same
            # bytes is taken here, with the plan and shapes the parser makes now.
            self.known[e.tid] = entry
        plan = entry.plan
        if plan is False:
            r.skipped_rows += 1
            return 1
        if plan is None or e.q >= e.be:
            return 0
        tm = entry.table_map
        program = _rows_program(&e, plan, r.b, tm.column_count)
        if program is None:
            return 0
        if sink is None and self.skip_values:
            try:
                self.counts[e.k] += (<RowProgram>program)._count(r.b, e.q, e.be)
            except Exception:
                return 0  # the parser decodes it, and the checked twin says what is wrong
            return 1
        if (<RowProgram>program).ordered and (sink is None or r.columns or r.lines):
            return self._rows_written(r, &e, <RowProgram>program, entry, tm, buf, file, base, sink, gtid_ts)
        if r.columns or r.lines:
            return 0  # images out of table order (rowplan makes none): the parser takes them
        return self._rows_events(r, &e, <RowProgram>program, tm, buf, file, base, sink)

    cdef int _rows_written(self, _Run *r, _Rows *e, RowProgram program, object entry, object tm, bytes buf,
                           str file, Py_ssize_t base, list sink, bytes gtid_ts) except -1:
        """Count the rows, or write them as lines or change-log columns (and typed images),
        straight from the body: no value tuples. 0 when the parser takes them."""
        cdef Py_ssize_t mark = r.out.size, counted
        cdef int k = e.k
        cdef object spec = None if sink is None else self._spec(e.tid, entry, tm, file)
        if sink is not None and spec is None:
            return 0  # a table whose rows the parser takes, in every kind (a versioned table's)
        try:
            if sink is None or not self.kept[k]:
                # Counted, or an operation not kept: its values checked, nothing written.
                counted = _rows_text(program, &r.out, buf, e.q, e.be, k, None, None, None, 0, None, 0, None)
                r.out.size = mark
                if sink is None:
                    self.counts[k] += counted
            elif r.columns:
                if self.chunk is None:
                    self.chunk = ChangeRows()
                    self.chunk.keep_typed = self.typed
                self.chunk._add_rows_whole(k, spec[3], None, self.chunk.meta_id(spec[2][k]), base + e.pos,
                                           <int64_t>_u32(r.b + e.pos) * 1000000, self.absent, self.fallback,
                                           program, buf, e.q, e.be)
            else:
                r.written += _rows_text(program, &r.out, buf, e.q, e.be, k, spec[2][k], spec[3], spec[4],
                                        base + e.pos, gtid_ts, _u32(r.b + e.pos), self.fallback)
        except Exception:
            r.out.size = mark
            return 0  # the parser decodes it again, and the checked twin says what is wrong
        return 1

    cdef int _rows_events(self, _Run *r, _Rows *e, RowProgram program, object tm, bytes buf, str file,
                          Py_ssize_t base, list sink) except -1:
        """Decode the rows into value tuples: counted, or put into the sink as a ``RowsEvent``;
        0 when the parser takes them."""
        cdef const uint8_t *b = r.b
        cdef Py_ssize_t pos = e.pos
        cdef object rows, header
        try:
            rows = program._decode(buf, e.q, e.be)
        except Exception:
            return 0  # the parser decodes it again, and the checked twin says what is wrong
        if sink is None:
            self.counts[e.k] += len(rows)
        else:
            header = self.build_header(
                _u32(b + pos), e.tc, _u32(b + pos + 5), e.size, _u32(b + pos + 13),
                b[pos + 17] | (b[pos + 18] << 8),
            )
            sink.append((file, base + pos, self.build_rows(
                header, _KINDS[e.k], e.tid, b[e.bs + 6] | (b[e.bs + 7] << 8), tm,
                PyLong_FromUnsignedLongLong(e.present),
                PyLong_FromUnsignedLongLong(e.after) if e.k == 1 else None,
                rows, None, None, None,
            )))
        return 1

    cdef int _finish(self, _Run *r, str file, Py_ssize_t at, list sink, object continued) except -1:
        """Put the run's lines or change-log columns into the sink (unless they went on in the
        sink's last columns, ``continued``), free its buffer, and tell the parser what the run did
        to its state."""
        cdef object p = self.parser
        cdef ChangeRows chunk = self.chunk
        self.chunk = None
        try:
            if r.out.size:
                sink.append((file, at, self.lines_of(PyBytes_FromStringAndSize(r.out.data, r.out.size),
                                                     r.written)))
            if chunk is not None and chunk.length and chunk is not continued:
                sink.append((file, at, chunk))
        finally:
            PyMem_Free(r.out.data)
        if r.took_map:
            p._last_tid = -1
            p._last_entry = None
        if r.skipped_rows:
            p.skipped_rows_events += r.skipped_rows
        if r.skipped_maps:
            p.skipped_table_maps += r.skipped_maps
        return 1
