"""Compiled row decoders: one plan per TABLE_MAP, one generated loop per row-image shape.

Everything that depends only on a TABLE_MAP — real type of STRING columns, length-prefix widths,
signedness, collation, fsp, DECIMAL layout — is decided once in :class:`RowPlan` (one
``colplan.Col`` per column). For each shape of rows event body (event kind, present-column bitmaps,
partial JSON) the plan generates (``rowgen``) one Python function that decodes the whole body in a
single loop with no type tests, and a checked twin of it that tracks row and column and raises
``MalformedEventError`` (or its subclass ``CharsetDecodeError``) saying exactly what was wrong when
the fast loop fails on bad bytes. This module keeps the plans, their caches and the dispatch.

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
VECTOR                      ``tuple`` of ``float``; also MariaDB's (a binary VARCHAR) when the
                            schema gives its ``vector_dimension``
MariaDB UUID, INET4, INET6  ``str`` as the server prints it, when the schema names the type
                            (``ColumnInfo.mariadb_type``; else the BINARY(n) ``bytes`` logged)
NULL type                   ``None``
==========================  ==================================================================
"""

from __future__ import annotations

import os
from typing import Any

from sluice.binlog.absent import ABSENT
from sluice.binlog.colplan import Col, column
from sluice.binlog.column_info import ColumnInfo, TableShape
from sluice.binlog.rowgen import compile_loops
from sluice.binlog.values.geometry import Geometry
from sluice.binlog.values.json_binary import JsonDiff, JsonDiffs
from sluice.errors import MalformedEventError

_compiled_core: Any
try:
    import sluice.binlog._rowcore as _compiled_core
except ImportError:  # built without the extension: the Python loops below do all the work
    _compiled_core = None

__all__ = ["ABSENT", "Geometry", "JsonDiff", "JsonDiffs", "RowPlan", "compiled", "core", "plan_for", "use_compiled"]

#: The compiled core in use: None when the extension is absent or ``SLUICE_NO_EXTENSIONS`` is set.
_core: Any = None if os.environ.get("SLUICE_NO_EXTENSIONS", "") not in ("", "0") else _compiled_core


#: Bodies the compiled core handed to the Python twin (malformed ones, or a bug: tests watch it).
handed_over = 0


def compiled() -> bool:
    """Whether rows are decoded by the compiled core (else by the generated Python loops)."""
    return _core is not None


def core() -> Any:
    """The compiled core module in use (``sluice.binlog._rowcore``), or None for the Python twins."""
    return _core


def use_compiled(enabled: bool) -> bool:
    """Decode with the compiled core (when it was built) or the Python twin; returns the previous
    setting. The two give the same values; tests run both."""
    global _core
    previous = _core is not None
    _core = _compiled_core if enabled else None
    return previous



_PLAN_CACHE: dict[Any, RowPlan] = {}  # key: TABLE_MAP bytes, or (bytes, column facts)
_PLAN_BY_ID: dict[tuple[bytes, int], tuple[Any, RowPlan]] = {}
_PLAN_CACHE_MAX = 4096
_SHAPE_CACHE_MAX = 256

_NO_INFO = ColumnInfo()
_LATER: Any = object()  # a shape's Python loops, not generated yet


def plan_for(table_map: TableShape, columns: tuple[ColumnInfo, ...] | None = None) -> RowPlan:
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


def _new_plan(table_map: TableShape, columns: tuple[ColumnInfo, ...]) -> RowPlan:
    if len(_PLAN_CACHE) >= _PLAN_CACHE_MAX:
        _PLAN_CACHE.clear()
    return RowPlan(table_map, columns)


class RowPlan:
    """Decoders for the rows events of one table, as described by one TABLE_MAP."""

    def __init__(self, table_map: TableShape, columns: tuple[ColumnInfo, ...]) -> None:
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
        global handed_over
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
                handed_over += 1
        if fast is _LATER:
            fast, checked = compile_loops(self, present, present_after, partial)
            self._shapes[key] = (fast, checked, program)
        if program is not None and _core is not None:
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
        if program is not None:
            # The Python loops of a shape the core decodes are generated when first needed (a body
            # the core hands over, or the twin chosen): compiling them costs more than most runs.
            return _LATER, _LATER, program
        fast, checked = compile_loops(self, present, present_after, partial)
        return fast, checked, program
