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

cdef enum:
    T_TABLE_MAP = 19
    T_WRITE_V1 = 23
    T_DELETE_V1 = 25
    T_WRITE_V2 = 30
    T_DELETE_V2 = 32
    T_ANNOTATE_ROWS = 160

_KINDS = ("write", "update", "delete")

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
        cdef const uint8_t *b = <const uint8_t *>PyBytes_AS_STRING(buf)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(buf)
        cdef Py_ssize_t size, be, bs, q, tail
        cdef int tc, k, ncols, colcount, nb, i
        cdef bint crc, verify, tm_ok, v1_ok, v2_ok, took_map = False
        cdef uint64_t present, after, mask
        cdef long long tid
        cdef Py_ssize_t skipped_rows = 0, skipped_maps = 0
        cdef PyObject *hit
        cdef object entry, plan, tm, raw, fns, program, rows, maps, key, after_obj, present_obj, header, spec
        cdef bytes phl
        cdef bint lines = sink is not None and self.line_spec is not None and gtid_ts is not None
        cdef bint columns = sink is not None and self.line_spec is not None and self.columns
        cdef ChangeRows chunk = None
        cdef _Buf out
        cdef Py_ssize_t written = 0, counted, mark, start = pos
        out.data = NULL
        out.size = out.cap = 0
        if pos < 0:
            return pos
        if end < n:
            n = end
        alg = p.checksum_alg
        if alg is None or (alg != 0 and alg != 1):
            return pos
        crc = alg == 1
        tail = 4 if crc else 0
        verify = bool(p._verify)
        phl = p._phl
        tm_ok = _phl(phl, T_TABLE_MAP, 8) == 8
        v1_ok = _phl(phl, T_WRITE_V1, 8) == 8 and _phl(phl, T_WRITE_V1 + 1, 8) == 8 and _phl(phl, T_DELETE_V1, 8) == 8
        v2_ok = _phl(phl, T_WRITE_V2, 10) == 10 and _phl(phl, T_WRITE_V2 + 1, 10) == 10 and _phl(phl, T_DELETE_V2, 10) == 10
        maps = p._maps
        if version != self.version:
            self.known.clear()
            if self.specs is not None:
                self.specs.clear()
            self.version = version
        try:
            while n - pos >= 19:
                tc = b[pos + 4]
                size = _u32(b + pos + 9)
                if size < 19 + tail or size > n - pos:
                    break
                be = pos + size - tail
                bs = pos + 19
                if tc == T_TABLE_MAP:
                    if not tm_ok or be - bs < 8:
                        break
                    if crc and verify and _crc32(b + pos, size - 4) != _u32(b + be):
                        break
                    tid = _u32(b + bs) | (<long long>b[bs + 4] << 32) | (<long long>b[bs + 5] << 40)
                    hit = PyDict_GetItem(self.known, tid)
                    if hit is NULL:
                        break
                    entry = <object>hit
                    raw = entry.table_map.raw
                    if (type(raw) is not bytes or PyBytes_GET_SIZE(raw) != be - bs
                            or memcmp(PyBytes_AS_STRING(raw), b + bs, be - bs) != 0):
                        break
                    maps[tid] = entry
                    took_map = True
                    if entry.plan is False:
                        skipped_maps += 1
                elif tc == T_ANNOTATE_ROWS:
                    # The statement text of the rows that follow (MariaDB): nothing reads it.
                    if crc and verify and _crc32(b + pos, size - 4) != _u32(b + be):
                        break
                elif T_WRITE_V1 <= tc <= T_DELETE_V1 or T_WRITE_V2 <= tc <= T_DELETE_V2:
                    if tc >= T_WRITE_V2:
                        k = tc - T_WRITE_V2
                        if not v2_ok or be - bs < 10 or b[bs + 8] != 2 or b[bs + 9] != 0:
                            break  # extra data (partition ids, NDB info): the parser reads it
                        q = bs + 10
                    else:
                        k = tc - T_WRITE_V1
                        if not v1_ok or be - bs < 8:
                            break
                        q = bs + 8
                    if crc and verify and _crc32(b + pos, size - 4) != _u32(b + be):
                        break
                    tid = _u32(b + bs) | (<long long>b[bs + 4] << 32) | (<long long>b[bs + 5] << 40)
                    hit = PyDict_GetItem(maps, tid)
                    if hit is NULL:
                        break
                    entry = <object>hit
                    if PyDict_GetItem(self.known, tid) != hit:
                        # The parser took this table's TABLE_MAP: its next one with the same
                        # bytes is taken here, with the plan and shapes the parser makes now.
                        self.known[tid] = entry
                    plan = entry.plan
                    if plan is False:
                        skipped_rows += 1
                        pos += size
                        self.taken += 1
                        continue
                    if plan is None or q >= be:
                        break
                    tm = entry.table_map
                    colcount = tm.column_count
                    ncols = b[q]
                    q += 1
                    if ncols >= 251 or ncols > colcount or colcount > 64:
                        break
                    nb = (ncols + 7) >> 3
                    if q + nb * (2 if k == 1 else 1) > be:
                        break
                    mask = ~(<uint64_t>0) if colcount == 64 else ((<uint64_t>1 << colcount) - 1)
                    present = 0
                    for i in range(nb):
                        present |= <uint64_t>b[q + i] << (8 * i)
                    q += nb
                    present_obj = PyLong_FromUnsignedLongLong(present)
                    after_obj = None
                    if k == 1:
                        after = 0
                        for i in range(nb):
                            after |= <uint64_t>b[q + i] << (8 * i)
                        q += nb
                        after_obj = PyLong_FromUnsignedLongLong(after)
                        key = (_KINDS[k], PyLong_FromUnsignedLongLong(present & mask),
                               PyLong_FromUnsignedLongLong(after & mask), False)
                    else:
                        key = (_KINDS[k], PyLong_FromUnsignedLongLong(present & mask), None, False)
                    fns = plan._shapes.get(key)
                    if fns is None:
                        break
                    program = fns[2]
                    if type(program) is not RowProgram:
                        break
                    if sink is None and self.skip_values:
                        try:
                            self.counts[k] += (<RowProgram>program)._count(b, q, be)
                        except Exception:
                            break  # the parser decodes it, and the checked twin says what is wrong
                        pos += size
                        self.taken += 1
                        continue
                    if (<RowProgram>program).ordered and (sink is None or columns or lines):
                        # Counted, or written as lines or change-log columns (and typed images),
                        # straight from the body: no value tuples.
                        mark = out.size
                        spec = None if sink is None else self._spec(tid, entry, tm, file)
                        if sink is not None and spec is None:
                            break  # a table whose rows the parser takes, in every kind (a versioned table's)
                        try:
                            if sink is None or not self.kept[k]:
                                # Counted, or an operation not kept: its values checked, nothing written.
                                counted = _rows_text(program, &out, buf, q, be, k, None, None, None, 0, None, 0, None)
                                out.size = mark
                                if sink is None:
                                    self.counts[k] += counted
                            elif columns:
                                if chunk is None:
                                    chunk = ChangeRows()
                                    chunk.keep_typed = self.typed
                                chunk._add_rows_whole(k, spec[3], None, chunk.meta_id(spec[2][k]), base + pos,
                                                      <int64_t>_u32(b + pos) * 1000000, self.absent, self.fallback,
                                                      program, buf, q, be)
                            else:
                                written += _rows_text(program, &out, buf, q, be, k, spec[2][k], spec[3], spec[4],
                                                      base + pos, gtid_ts, _u32(b + pos), self.fallback)
                        except Exception:
                            out.size = mark
                            break  # the parser decodes it again, and the checked twin says what is wrong
                        pos += size
                        self.taken += 1
                        continue
                    if columns or lines:
                        break  # images out of table order (rowplan makes none): the parser takes them
                    try:
                        rows = (<RowProgram>program)._decode(buf, q, be)
                    except Exception:
                        break  # the parser decodes it again, and the checked twin says what is wrong
                    if sink is None:
                        self.counts[k] += len(rows)
                    else:
                        header = self.build_header(
                            _u32(b + pos), tc, _u32(b + pos + 5), size, _u32(b + pos + 13),
                            b[pos + 17] | (b[pos + 18] << 8),
                        )
                        sink.append((file, base + pos, self.build_rows(
                            header, _KINDS[k], tid, b[bs + 6] | (b[bs + 7] << 8), tm, present_obj, after_obj,
                            rows, None, None, None,
                        )))
                else:
                    break
                pos += size
                self.taken += 1
        finally:
            try:
                if out.size:
                    sink.append((file, base + start, self.lines_of(
                        PyBytes_FromStringAndSize(out.data, out.size), written)))
                if chunk is not None and chunk.length:
                    sink.append((file, base + start, chunk))
            finally:
                PyMem_Free(out.data)
            if took_map:
                p._last_tid = -1
                p._last_entry = None
            if skipped_rows:
                p.skipped_rows_events += skipped_rows
            if skipped_maps:
                p.skipped_table_maps += skipped_maps
        return pos
