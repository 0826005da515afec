"""Compiled row decoders: one plan per TABLE_MAP, one generated loop per row-image shape.

Everything that depends only on a TABLE_MAP — real type of STRING columns, length-prefix widths,
signedness, collation, fsp, DECIMAL layout — is decided once in :class:`RowPlan`. For each shape of
rows event body (event kind, present-column bitmaps, partial JSON) the plan generates the source of
one Python function that decodes the whole body in a single loop: per column a specialised
statement, runs of fixed-width numeric columns merged into one precompiled ``struct`` unpack when
the row's null bitmap has no NULL in it, strings sliced and decoded with the exact codec. The loop
has no type tests and no per-value dict lookups. When the fast loop fails on bad bytes, the body is
decoded again by a checked twin of the same function that tracks row and column and raises
``MalformedEventError`` (or its subclass ``CharsetDecodeError``) saying exactly what was wrong.

Values (``None`` is SQL NULL, :data:`ABSENT` a column not in a minimal row image):

==========================  ==================================================================
integers, signed/unsigned   ``int`` (``ColumnInfo.unsigned`` None -> signed)
FLOAT / DOUBLE              ``float`` (FLOAT: the float32 value)
DECIMAL                     ``decimal.Decimal`` with exactly ``scale`` fractional digits
DATE, DATETIME, TIMESTAMP,  ``str`` as in ``sluice.binlog.values.temporal``
TIME                        (TIMESTAMP as UTC ``...Z``; zero timestamp ``0000-00-00 00:00:00[.0…]``)
YEAR                        ``int`` (0 for 0000)
CHAR/VARCHAR/TEXT           ``str`` in the column's charset; collation 63 (binary) -> ``bytes``;
                            collation unknown: CHAR/VARCHAR -> UTF-8 ``str``, BLOB/TEXT -> ``bytes``
ENUM                        member ``str`` when members known, else the 1-based ``int`` (0 = '')
SET                         ``tuple`` of member ``str`` when members known, else the ``int`` mask
BIT(n)                      ``int``
JSON                        the decoded value; partial update -> ``JsonDiffs``
GEOMETRY                    ``Geometry(srid, wkb)``
VECTOR                      ``tuple`` of ``float``
NULL type                   ``None``
==========================  ==================================================================
"""

from __future__ import annotations

import struct
from typing import Any, Final

from sluice.binlog.columns import BINARY_COLLATION, ColumnInfo
from sluice.binlog.constants import ColumnType
from sluice.binlog.values.charsets import (
    CharsetDecodeError,
    charset_for_collation,
    decoder_for_charset,
    python_codec,
)
from sluice.binlog.values.decimal import decimal_decoder, decimal_size
from sluice.binlog.values.geometry import Geometry, decode_geometry, decode_vector
from sluice.binlog.values.json_binary import JsonDiff, JsonDiffs, parse_json, parse_json_diffs
from sluice.binlog.values.temporal import (
    date_decoder,
    datetime2_decoder,
    datetime2_size,
    datetime_decoder,
    time2_decoder,
    time2_size,
    time_decoder,
    timestamp2_decoder,
    timestamp2_size,
    timestamp_decoder,
)
from sluice.errors import MalformedEventError, UnsupportedError

__all__ = ["ABSENT", "Geometry", "JsonDiff", "JsonDiffs", "RowPlan", "plan_for"]


class _Absent:
    """The type of :data:`ABSENT`."""

    __slots__ = ()
    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "ABSENT"


#: A column that is not part of a (minimal) row image. SQL NULL is ``None``.
ABSENT: Final = _Absent()

_PLAN_CACHE: dict[Any, RowPlan] = {}  # key: TABLE_MAP bytes, or (bytes, column facts)
_PLAN_BY_ID: dict[tuple[bytes, int], tuple[Any, RowPlan]] = {}
_PLAN_CACHE_MAX = 4096
_SHAPE_CACHE_MAX = 256

_NO_INFO = ColumnInfo()


def plan_for(table_map: Any, columns: tuple[ColumnInfo, ...] | None = None) -> RowPlan:
    """The row plan of a TABLE_MAP, built once per (TABLE_MAP bytes, column facts).

    ``table_map`` needs ``column_count``, ``column_types``, ``column_meta``, ``columns`` and
    ``raw``. ``columns`` overrides ``table_map.columns`` (schema history knows more than the map).
    Raises ``UnsupportedError`` for a column type or character set sluice cannot decode.
    """
    raw = table_map.raw
    if type(raw) is not bytes:
        raw = bytes(raw)
    if columns is None:
        # Without outside column facts the columns follow from the map's bytes, so the bytes alone
        # are the key.
        plan = _PLAN_CACHE.get(raw)
        if plan is None:
            plan = _PLAN_CACHE[raw] = _new_plan(table_map, tuple(table_map.columns))
        return plan
    # A schema source hands the same tuple of column facts for every TABLE_MAP of a table until
    # the schema changes: look it up by identity first, since hashing a tuple of ColumnInfo on
    # every TABLE_MAP (once per transaction and table) costs more than decoding a small row.
    if type(columns) is not tuple:  # a mutable sequence may change under the same identity
        columns = tuple(columns)
    hit = _PLAN_BY_ID.get((raw, id(columns)))
    if hit is not None and hit[0] is columns:
        return hit[1]
    cols = columns
    key = (raw, cols)
    plan = _PLAN_CACHE.get(key)
    if plan is None:
        plan = _PLAN_CACHE[key] = _new_plan(table_map, cols)
    if len(_PLAN_BY_ID) >= _PLAN_CACHE_MAX:
        _PLAN_BY_ID.clear()
    _PLAN_BY_ID[(raw, id(columns))] = (columns, plan)  # holds ``columns``: its id stays unique
    return plan


def _new_plan(table_map: Any, columns: tuple[ColumnInfo, ...]) -> RowPlan:
    if len(_PLAN_CACHE) >= _PLAN_CACHE_MAX:
        _PLAN_CACHE.clear()
    return RowPlan(table_map, columns)


class _Short(Exception):
    """Raised by generated code when a value or row runs past the end of the body."""


class _Col:
    """How one column is decoded; pure plan-time data used by the code generator."""

    __slots__ = ("bind", "charset", "desc", "fmt", "helper", "index", "is_json", "kind", "post",
                 "prefix", "size", "slice_expr")

    def __init__(self, index: int, desc: str) -> None:
        self.index = index
        self.desc = desc
        self.kind = "fixed"  # fixed | var | helper | null
        self.fmt = ""  # struct format chars of a fixed column
        self.post: str | None = None  # expression over {0}, {1} temps; None = the temp itself
        self.size = 0
        self.prefix = 0  # length-prefix width of a var column
        self.slice_expr = "{s}"  # expression turning the slice {s} into the value
        self.helper: Any = None  # (buf, pos) -> value for helper columns
        self.bind: dict[str, Any] = {}
        self.is_json = False
        self.charset: str | None = None


def _type_name(t: int) -> str:
    try:
        return ColumnType(t).name
    except ValueError:
        return f"type {t}"


class RowPlan:
    """Decoders for the rows events of one table, as described by one TABLE_MAP."""

    def __init__(self, table_map: Any, columns: tuple[ColumnInfo, ...]) -> None:
        self.column_count: int = table_map.column_count
        types = tuple(table_map.column_types)
        metas = tuple(table_map.column_meta)
        if len(types) != self.column_count or len(metas) != self.column_count:
            raise MalformedEventError(
                f"TABLE_MAP has {self.column_count} columns but {len(types)} types and "
                f"{len(metas)} metadata entries"
            )
        if columns and len(columns) != self.column_count:
            raise MalformedEventError(
                f"{len(columns)} column descriptions given for a table of {self.column_count} columns"
            )
        schema = getattr(table_map, "schema", None)
        table = getattr(table_map, "table", None)
        self.table_name = f"{schema}.{table}" if schema or table else "table"
        self.columns = columns
        self.types = types
        self.cols: list[_Col] = []
        json_index = 0
        self.json_bit: dict[int, int] = {}  # column index -> bit in the partial_bits bitmap
        for i in range(self.column_count):
            info = columns[i] if columns else _NO_INFO
            col = _column(i, types[i], metas[i], info, self.table_name)
            if col.is_json:
                self.json_bit[i] = json_index
                json_index += 1
            self.cols.append(col)
        self.json_count = json_index
        self._shapes: dict[tuple[str, int, int | None, bool], tuple[Any, Any]] = {}

    def decode_rows(
        self,
        kind: str,
        buf: bytes | memoryview,
        start: int,
        end: int,
        present: int,
        present_after: int | None,
        partial: bool,
    ) -> list[Any]:
        """Decode the rows of a rows-event body ``buf[start:end]``.

        ``kind`` is ``"write"``, ``"delete"`` (a list of value tuples) or ``"update"`` (a list of
        ``(before, after)`` tuples). ``present``/``present_after`` are the column bitmaps as ints
        (bit i = column i present). ``partial`` marks a PARTIAL_UPDATE_ROWS_EVENT. Consumes exactly
        ``end - start`` bytes or raises ``MalformedEventError``.
        """
        if type(buf) is not bytes:
            buf = bytes(buf[start:end])
            end -= start
            start = 0
        if end > len(buf) or start < 0 or start > end:
            raise MalformedEventError(
                f"rows of {self.table_name}: body [{start}:{end}] is outside a buffer of {len(buf)} bytes"
            )
        if kind == "update":
            if present_after is None:
                present_after = present
        elif kind in ("write", "delete"):
            present_after = None
            partial = False
        else:
            raise ValueError(f"unknown rows event kind {kind!r}")
        mask = (1 << self.column_count) - 1
        present &= mask
        if present_after is not None:
            present_after &= mask
        key = (kind, present, present_after, partial)
        fns = self._shapes.get(key)
        if fns is None:
            if len(self._shapes) >= _SHAPE_CACHE_MAX:
                self._shapes.clear()
            fns = self._compile(present, present_after, partial)
            self._shapes[key] = fns
        fast, checked = fns
        if fast is None:  # images without any column: the body must be empty
            if start != end:
                raise MalformedEventError(
                    f"rows of {self.table_name}: {end - start} bytes of rows but no column is in the image"
                )
            return []
        try:
            return fast(buf, start, end)
        except Exception as exc:
            checked(buf, start, end)  # raises the precise error
            raise MalformedEventError(f"rows of {self.table_name}: cannot decode ({exc!r})") from exc

    # -- code generation ------------------------------------------------------------------

    def _compile(self, present: int, present_after: int | None, partial: bool) -> tuple[Any, Any]:
        images = [present] if present_after is None else [present, present_after]
        if all(p == 0 for p in images):
            return None, None
        bind: dict[str, Any] = {
            "_ABSENT": ABSENT,
            "_Short": _Short,
            "_U32": struct.Struct("<I").unpack_from,
            "_lenenc": _lenenc,
            "_jdiffs": _json_diffs,
            "_fail": self._fail,
        }
        fast = self._source("_fast", images, partial, False, bind)
        checked = self._source("_checked", images, partial, True, bind)
        args = "".join(f", {n}={n}" for n in sorted(bind))
        src = "\n".join(fast + checked).replace("(__ARGS__)", f"(buf, pos, end{args})") + "\n"
        namespace: dict[str, Any] = dict(bind)
        exec(compile(src, f"<sluice rowplan {self.table_name}>", "exec"), namespace)
        self.last_source = src
        return namespace["_fast"], namespace["_checked"]

    def _source(self, name: str, images: list[int], partial: bool, checked: bool,
                bind: dict[str, Any]) -> list[str]:
        lines = [f"def {name}(__ARGS__):", "    rows = []", "    append = rows.append"]
        body: list[str] = []
        tuples = []
        for n, present in enumerate(images):
            after = n == 1
            if after and partial:
                body += self._shared_image(checked)
            prefix = "ab"[n]
            body += self._image(present, prefix, checked, after and partial, bind)
            tuples.append(
                "(" + "".join(
                    (f"{prefix}{i}, " if present >> i & 1 else "_ABSENT, ")
                    for i in range(self.column_count)
                ) + ")"
            )
        body.append("if pos > end: raise _Short('the last value runs past the end of the body')")
        row = tuples[0] if len(tuples) == 1 else f"({tuples[0]}, {tuples[1]})"
        body.append(f"append({row})")
        if checked:
            lines += ["    row = 0", "    c = -1", "    try:", "        while pos < end:"]
            lines += _indent(body, 3)
            lines += ["            row += 1", "    except Exception as e:",
                      "        raise _fail(e, row, c, pos) from e"]
        else:
            lines.append("    while pos < end:")
            lines += _indent(body, 2)
        lines.append("    return rows")
        return lines

    def _shared_image(self, checked: bool) -> list[str]:
        nb = (self.json_count + 7) // 8
        lines = ["c = -2"] if checked else []
        lines += [
            "vo = buf[pos]",
            "if vo < 251: pos += 1",
            "else: vo, pos = _lenenc(buf, pos)",
            "if vo & 1:",
            f"    pb = int.from_bytes(buf[pos:pos + {nb}], 'little')",
            f"    pos += {nb}",
            "else: pb = 0",
        ]
        return lines

    def _image(self, present: int, prefix: str, checked: bool, partial_after: bool,
               bind: dict[str, Any]) -> list[str]:
        cols = [c for c in self.cols if present >> c.index & 1]
        for c in cols:
            bind.update(c.bind)
        nbytes = (len(cols) + 7) // 8
        lines = []
        if checked:
            lines.append("c = -1")
        if nbytes == 1:
            lines.append("nb = buf[pos]")
        else:
            lines.append(f"nb = int.from_bytes(buf[pos:pos + {nbytes}], 'little')")
        lines.append(f"pos += {nbytes}")
        if checked:
            lines.append("if pos > end: raise _Short('the null bitmap runs past the end of the body')")
        slow: list[str] = []
        for j, c in enumerate(cols):
            var = f"{prefix}{c.index}"
            if checked:
                slow.append(f"c = {c.index}")
            slow.append(f"if nb & {1 << j}: {var} = None")
            slow.append("else:")
            slow += _indent(self._column_code(c, var, checked, partial_after, bind), 1)
        if checked:
            return lines + slow
        fast: list[str] = []
        run: list[_Col] = []
        for c in cols:
            if c.kind == "fixed":
                run.append(c)
                continue
            fast += self._run_code(run, prefix, bind)
            run = []
            fast += self._column_code(c, f"{prefix}{c.index}", False, partial_after, bind)
        fast += self._run_code(run, prefix, bind)
        mask = (1 << len(cols)) - 1
        cond = "not nb" if len(cols) % 8 == 0 else f"not nb & {mask}"
        lines.append(f"if {cond}:")
        lines += _indent(fast or ["pass"], 1)
        lines.append("else:")
        lines += _indent(slow or ["pass"], 1)
        return lines

    def _run_code(self, run: list[_Col], prefix: str, bind: dict[str, Any]) -> list[str]:
        if not run:
            return []
        if len(run) == 1:
            return self._column_code(run[0], f"{prefix}{run[0].index}", False, False, bind)
        fmt = "<" + "".join(c.fmt for c in run)
        sname = "_R" + fmt[1:]
        bind[sname] = struct.Struct(fmt).unpack_from
        targets: list[str] = []
        posts: list[str] = []
        for c in run:
            var = f"{prefix}{c.index}"
            if c.post is None:
                targets.append(var)
            else:
                temps = [f"t{c.index}_{k}" for k in range(len(c.fmt))]
                targets += temps
                posts.append(f"{var} = " + c.post.format(*temps))
        size = sum(c.size for c in run)
        return [f"{', '.join(targets)}, = {sname}(buf, pos)", f"pos += {size}", *posts]

    def _column_code(self, c: _Col, var: str, checked: bool, partial_after: bool,
                     bind: dict[str, Any]) -> list[str]:
        if c.kind == "null":
            return [f"{var} = None"]
        if c.kind == "helper":
            lines = [f"{var} = _h{c.index}(buf, pos)", f"pos += {c.size}"]
        elif c.kind == "fixed":
            if c.fmt == "B" and c.post is None:
                lines = [f"{var} = buf[pos]", "pos += 1"]
            else:
                sname = "_R" + c.fmt
                bind[sname] = struct.Struct("<" + c.fmt).unpack_from
                if c.post is None:
                    lines = [f"{var}, = {sname}(buf, pos)"]
                else:
                    temps = [f"t{c.index}_{k}" for k in range(len(c.fmt))]
                    lines = [f"{', '.join(temps)}, = {sname}(buf, pos)",
                             f"{var} = " + c.post.format(*temps)]
                lines.append(f"pos += {c.size}")
        else:
            w = c.prefix
            length = {
                1: "buf[pos]",
                2: "(buf[pos] | buf[pos + 1] << 8)",
                3: "(buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16)",
                4: "_U32(buf, pos)[0]",
            }[w]
            lines = [f"q = pos + {w} + {length}"]
            if checked:
                lines.append(
                    f"if q > end: raise _Short(f'a value of {{q - pos - {w}}} bytes runs past the end "
                    f"of the body ({{end - pos - {w}}} bytes left)')"
                )
            s = f"buf[pos + {w}:q]"
            value = c.slice_expr.format(s=s)
            if partial_after and c.is_json:
                bit = 1 << self.json_bit[c.index]
                lines += [f"if pb & {bit}: {var} = _jdiffs({s})", f"else: {var} = {value}"]
            else:
                lines.append(f"{var} = {value}")
            lines.append("pos = q")
        if checked and c.kind != "var":
            lines.append("if pos > end: raise _Short('the value runs past the end of the body')")
        return lines

    def _fail(self, exc: Exception, row: int, col: int, pos: int) -> MalformedEventError:
        where = f"rows of {self.table_name}, row {row}"
        if col >= 0:
            c = self.cols[col]
            where += f", column {c.desc}"
            if isinstance(exc, UnicodeDecodeError):
                return CharsetDecodeError(
                    f"{where}: the value is not valid {c.charset or 'UTF-8'} text ({exc.reason} at byte "
                    f"{exc.start} of {len(exc.object)})",
                    column=c.desc,
                    charset=c.charset or "utf8mb4",
                )
        elif col == -2:
            where += ", shared image (value_options)"
        else:
            where += ", null bitmap"
        if isinstance(exc, _Short | IndexError | struct.error):
            return MalformedEventError(f"{where}: truncated: {exc}")
        return MalformedEventError(f"{where}: bad value: {exc}")


def _indent(lines: list[str], n: int) -> list[str]:
    pad = "    " * n
    return [pad + line for line in lines]


def _lenenc(buf: bytes, pos: int) -> tuple[int, int]:
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    width = {252: 2, 253: 3, 254: 8}.get(first)
    if width is None:
        raise ValueError(f"bad length-encoded integer prefix 0x{first:02x}")
    raw = buf[pos + 1 : pos + 1 + width]
    if len(raw) != width:
        raise _Short("length-encoded integer cut short")
    return int.from_bytes(raw, "little"), pos + 1 + width


def _json_diffs(data: bytes) -> JsonDiffs:
    return parse_json_diffs(data)


# -- per column plan ---------------------------------------------------------------------------

_INT_FMT = {
    ColumnType.TINY: ("b", "B", 1),
    ColumnType.SHORT: ("h", "H", 2),
    ColumnType.LONG: ("i", "I", 4),
    ColumnType.LONGLONG: ("q", "Q", 8),
}

_BLOB_PREFIX = {
    ColumnType.TINY_BLOB: 1,
    ColumnType.BLOB: 2,
    ColumnType.MEDIUM_BLOB: 3,
    ColumnType.LONG_BLOB: 4,
}


def _column(i: int, t: int, meta: int, info: ColumnInfo, table: str) -> _Col:
    desc = f"#{i}" + (f" {info.name!r}" if info.name else "") + f" ({_type_name(t)})"
    c = _Col(i, desc)
    unsigned = bool(info.unsigned)

    def unsupported(what: str) -> UnsupportedError:
        return UnsupportedError(f"{table} column {desc}: {what}")

    if t in _INT_FMT:
        signed_fmt, unsigned_fmt, size = _INT_FMT[ColumnType(t)]
        c.fmt = unsigned_fmt if unsigned else signed_fmt
        c.size = size
    elif t == ColumnType.INT24:
        c.fmt = "HB" if unsigned else "Hb"
        c.post = "{0} | {1} << 16"
        c.size = 3
    elif t == ColumnType.FLOAT:
        c.fmt, c.size = "f", 4
    elif t == ColumnType.DOUBLE:
        c.fmt, c.size = "d", 8
    elif t == ColumnType.YEAR:
        c.fmt, c.size, c.post = "B", 1, "({0} + 1900 if {0} else 0)"
    elif t == ColumnType.NULL:
        c.kind = "null"
    elif t == ColumnType.NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        try:
            _helper(c, decimal_decoder(precision, scale), decimal_size(precision, scale))
        except ValueError as exc:
            raise MalformedEventError(f"{table} column {desc}: {exc}") from None
    elif t in (ColumnType.DATE, ColumnType.NEWDATE):
        _helper(c, date_decoder(), 3)
    elif t == ColumnType.TIME:
        _helper(c, time_decoder(), 3)
    elif t == ColumnType.DATETIME:
        _helper(c, datetime_decoder(), 8)
    elif t == ColumnType.TIMESTAMP:
        _helper(c, timestamp_decoder(), 4)
    elif t in (ColumnType.DATETIME2, ColumnType.TIMESTAMP2, ColumnType.TIME2):
        fsp = meta
        if not 0 <= fsp <= 6:
            raise MalformedEventError(f"{table} column {desc}: fractional precision {fsp} is not 0..6")
        if t == ColumnType.DATETIME2:
            _helper(c, datetime2_decoder(fsp), datetime2_size(fsp))
        elif t == ColumnType.TIMESTAMP2:
            _helper(c, timestamp2_decoder(fsp), timestamp2_size(fsp))
        else:
            _helper(c, time2_decoder(fsp), time2_size(fsp))
    elif t == ColumnType.BIT:
        nbytes = (meta & 0xFF) + (1 if meta >> 8 else 0)
        if not 1 <= nbytes <= 8:
            raise MalformedEventError(f"{table} column {desc}: BIT metadata 0x{meta:04x} is not 1..64 bits")
        if nbytes == 1:
            c.fmt, c.size = "B", 1
        else:
            _helper(c, _bit_decoder(nbytes), nbytes)
    elif t in (ColumnType.VARCHAR, ColumnType.VAR_STRING):
        c.kind = "var"
        c.prefix = 1 if meta < 256 else 2
        _text(c, info, default_text=True, unsupported=unsupported)
    elif t in (ColumnType.STRING, ColumnType.ENUM, ColumnType.SET):
        byte0, byte1 = meta >> 8, meta & 0xFF
        if byte0 and (byte0 & 0x30) != 0x30:
            # CHAR longer than 255 bytes: the two high bits of the length hide in byte0
            # (Field_string::do_save_field_metadata, sql/field.cc).
            length = byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
            real = byte0 | 0x30
        else:
            length = byte1
            real = byte0 or t
        if real == ColumnType.STRING:
            c.kind = "var"
            c.prefix = 1 if length < 256 else 2
            _text(c, info, default_text=True, unsupported=unsupported)
            if info.collation == BINARY_COLLATION:
                # BINARY(n) is logged without its trailing zero bytes (Field_string::pack trims the
                # pad character, 0x00 for the binary charset); SELECT returns all n bytes.
                c.slice_expr = f"{{s}}.ljust({length}, b'\\x00')"
        elif real == ColumnType.ENUM:
            _enum(c, length, info, table)
        elif real == ColumnType.SET:
            _set(c, length, info, table)
        else:
            raise unsupported(f"STRING column with real type {real} (metadata 0x{meta:04x})")
    elif t in _BLOB_PREFIX or t in (ColumnType.JSON, ColumnType.GEOMETRY, ColumnType.VECTOR):
        c.kind = "var"
        prefix = meta or _BLOB_PREFIX.get(ColumnType(t), 4)
        if not 1 <= prefix <= 4:
            raise MalformedEventError(f"{table} column {desc}: length prefix of {prefix} bytes")
        c.prefix = prefix
        if t == ColumnType.JSON:
            c.is_json = True
            c.bind = {f"_h{i}": parse_json}
            c.slice_expr = f"_h{i}({{s}})"
        elif t == ColumnType.GEOMETRY:
            c.bind = {f"_h{i}": decode_geometry}
            c.slice_expr = f"_h{i}({{s}})"
        elif t == ColumnType.VECTOR:
            c.bind = {f"_h{i}": decode_vector}
            c.slice_expr = f"_h{i}({{s}})"
        else:
            _text(c, info, default_text=False, unsupported=unsupported)
    elif t == ColumnType.DECIMAL:
        raise unsupported("the pre-5.0 DECIMAL type has no length in the binlog; ALTER the column to "
                          "a current DECIMAL")
    else:
        raise unsupported(f"column type {t} cannot appear in a row image sluice can decode")
    if c.kind == "fixed" and not c.size:
        c.size = struct.calcsize("<" + c.fmt)
    return c


def _helper(c: _Col, fn: Any, size: int) -> None:
    c.kind = "helper"
    c.size = size
    c.bind = {f"_h{c.index}": fn}


def _text(c: _Col, info: ColumnInfo, *, default_text: bool, unsupported: Any) -> None:
    """Slice expression of a character column: bytes, or text in the column's charset."""
    collation = info.collation
    if collation is None:
        if not default_text:
            return  # BLOB family without a known collation: bytes
        c.charset = "utf8mb4"
        c.slice_expr = "{s}.decode('utf-8')"
        return
    if collation == BINARY_COLLATION:
        return
    try:
        charset = charset_for_collation(collation)
        decode = decoder_for_charset(charset)
    except UnsupportedError as exc:
        raise unsupported(str(exc)) from None
    c.charset = charset
    codec = python_codec(charset)
    if codec is not None:
        c.slice_expr = f"{{s}}.decode({codec!r})"
    else:
        c.bind = {f"_h{c.index}": decode}
        c.slice_expr = f"_h{c.index}({{s}})"


def _enum(c: _Col, pack: int, info: ColumnInfo, table: str) -> None:
    if pack not in (1, 2):
        raise MalformedEventError(f"{table} column {c.desc}: ENUM of {pack} bytes (expected 1 or 2)")
    c.fmt, c.size = ("B", 1) if pack == 1 else ("H", 2)
    if info.enum_values is not None:
        c.bind = {f"_h{c.index}": ("", *info.enum_values)}
        c.post = f"_h{c.index}[{{0}}]"


def _set(c: _Col, pack: int, info: ColumnInfo, table: str) -> None:
    if not 1 <= pack <= 8:
        raise MalformedEventError(f"{table} column {c.desc}: SET of {pack} bytes (expected 1..8)")
    members = info.set_values
    if members is None:
        if pack in (1, 2, 4, 8):
            c.fmt, c.size = {1: "B", 2: "H", 4: "I", 8: "Q"}[pack], pack
        else:
            _helper(c, _uint_le_decoder(pack), pack)
        return
    _helper(c, _set_decoder(pack, tuple(members)), pack)


def _bit_decoder(nbytes: int) -> Any:
    def decode(buf: bytes, pos: int) -> int:
        return int.from_bytes(buf[pos : pos + nbytes], "big")

    return decode


def _uint_le_decoder(nbytes: int) -> Any:
    def decode(buf: bytes, pos: int) -> int:
        return int.from_bytes(buf[pos : pos + nbytes], "little")

    return decode


def _set_decoder(nbytes: int, members: tuple[str, ...]) -> Any:
    limit = 1 << len(members)
    bits = tuple(enumerate(members))
    seen: dict[int, tuple[str, ...]] = {}  # mask -> members: a column holds few distinct sets

    def decode(buf: bytes, pos: int) -> tuple[str, ...]:
        mask = int.from_bytes(buf[pos : pos + nbytes], "little")
        value = seen.get(mask)
        if value is not None:
            return value
        if mask >= limit:
            raise ValueError(f"SET bitmask 0x{mask:x} names members beyond the {len(members)} defined")
        value = tuple(m for k, m in bits if mask >> k & 1)
        if len(seen) < 4096:
            seen[mask] = value
        return value

    return decode
