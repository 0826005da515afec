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

Where the compiled core was built (``sluice.binlog._rowcore``, Cython), each shape also gets a
``RowProgram`` that decodes the same values in C from the columns' specs (``colplan``); a body it
does not take whole goes to the checked twin. The generated Python loops stay the reference and are
used alone when the extension is absent or ``SLUICE_NO_EXTENSIONS=1`` is set.

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

import os
import struct
from typing import Any, Final

from sluice.binlog.colplan import Col, column
from sluice.binlog.columns import ColumnInfo
from sluice.binlog.values.charsets import CharsetDecodeError
from sluice.binlog.values.geometry import Geometry
from sluice.binlog.values.json_binary import JsonDiff, JsonDiffs, parse_json_diffs
from sluice.errors import MalformedEventError

_compiled_core: Any
try:
    import sluice.binlog._rowcore as _compiled_core
except ImportError:  # built without the extension: the Python loops below do all the work
    _compiled_core = None

__all__ = ["ABSENT", "Geometry", "JsonDiff", "JsonDiffs", "RowPlan", "compiled", "plan_for", "use_compiled"]

#: The compiled core in use: None when the extension is absent or ``SLUICE_NO_EXTENSIONS`` is set.
_core: Any = None if os.environ.get("SLUICE_NO_EXTENSIONS", "") not in ("", "0") else _compiled_core


#: Bodies the compiled core handed to the Python twin (malformed ones, or a bug: tests watch it).
handed_over = 0


def compiled() -> bool:
    """Whether rows are decoded by the compiled core (else by the generated Python loops)."""
    return _core is not None


def use_compiled(enabled: bool) -> bool:
    """Decode with the compiled core (when it was built) or the Python twin; returns the previous
    setting. The two give the same values; tests run both."""
    global _core
    previous = _core is not None
    _core = _compiled_core if enabled else None
    return previous


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
        self.cols: list[Col] = []
        json_index = 0
        self.json_bit: dict[int, int] = {}  # column index -> bit in the partial_bits bitmap
        for i in range(self.column_count):
            info = columns[i] if columns else _NO_INFO
            col = column(i, types[i], metas[i], info, self.table_name)
            if col.is_json:
                self.json_bit[i] = json_index
                json_index += 1
            self.cols.append(col)
        self.json_count = json_index
        self._shapes: dict[tuple[str, int, int | None, bool], tuple[Any, Any, Any]] = {}

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
        fast, checked, program = fns
        if fast is None:  # images without any column: the body must be empty
            if start != end:
                raise MalformedEventError(
                    f"rows of {self.table_name}: {end - start} bytes of rows but no column is in the image"
                )
            return []
        if program is not None and _core is not None:
            try:
                return program.decode(buf, start, end)
            except Exception:
                # The compiled loop takes no body it cannot decode whole; the Python twin says
                # precisely what is wrong, or decodes what the compiled loop leaves to it.
                global handed_over
                handed_over += 1
                return checked(buf, start, end)
        try:
            return fast(buf, start, end)
        except Exception as exc:
            checked(buf, start, end)  # raises the precise error
            raise MalformedEventError(f"rows of {self.table_name}: cannot decode ({exc!r})") from exc

    # -- code generation ------------------------------------------------------------------

    def _compile(self, present: int, present_after: int | None, partial: bool) -> tuple[Any, Any, Any]:
        images = [present] if present_after is None else [present, present_after]
        if all(p == 0 for p in images):
            return None, None, None
        program = None
        if _compiled_core is not None and not partial:  # partial JSON updates stay in Python
            program = _compiled_core.RowProgram(
                self.column_count,
                [[(c.index, c.spec) for c in self.cols if image >> c.index & 1] for image in images],
                ABSENT,
            )
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
        return namespace["_fast"], namespace["_checked"], program

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
        run: list[Col] = []
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

    def _run_code(self, run: list[Col], prefix: str, bind: dict[str, Any]) -> list[str]:
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

    def _column_code(self, c: Col, var: str, checked: bool, partial_after: bool,
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
