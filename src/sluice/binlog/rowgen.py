"""The generated Python loops of a row plan: the reference decoder, and the compiled core's twin.

For one shape of rows-event body (event kind, present-column bitmaps, partial JSON) of a
:class:`~sluice.binlog.rowplan.RowPlan`, ``compile_loops`` writes the source of two functions and
compiles them: a fast loop (per column a specialised statement, runs of fixed-width columns merged
into one precompiled ``struct`` unpack when the row's null bitmap has no NULL in it) and a checked
twin of the same loop that tracks row and column and raises ``MalformedEventError`` (or its
subclass ``CharsetDecodeError``) saying exactly what was wrong.
"""

from __future__ import annotations

import functools
import struct
from typing import Any, Protocol

from sluice.binlog.absent import ABSENT
from sluice.binlog.colplan import Col
from sluice.binlog.values.charsets import CharsetDecodeError
from sluice.binlog.values.json_binary import JsonDiffs, parse_json_diffs
from sluice.codegen import define
from sluice.errors import MalformedEventError

__all__ = ["LoopPlan", "compile_loops"]


class LoopPlan(Protocol):
    """What the generated loops need of a table's row plan (``sluice.binlog.rowplan.RowPlan``)."""

    table_name: str  # db.table, for the errors the loops raise
    column_count: int
    json_count: int  # JSON columns: the width of a partial update's bitmap
    cols: list[Col]  # one decoding step per column, in column order
    json_bit: dict[int, int]  # column index -> its bit in the partial update's bitmap


class _Short(Exception):
    """Raised by generated code when a value or row runs past the end of the body."""


def compile_loops(plan: LoopPlan, present: int, present_after: int | None, partial: bool) -> tuple[Any, Any]:
    """The generated fast loop and its checked twin for one body shape of ``plan``."""
    images = [present] if present_after is None else [present, present_after]
    bind: dict[str, Any] = {
        "_ABSENT": ABSENT,
        "_Short": _Short,
        "_U32": struct.Struct("<I").unpack_from,
        "_lenenc": _lenenc,
        "_jdiffs": _json_diffs,
        "_fail": functools.partial(fail, plan),
    }
    fast = _source(plan, "_fast", images, partial, False, bind)
    checked = _source(plan, "_checked", images, partial, True, bind)
    args = "".join(f", {n}={n}" for n in sorted(bind))
    src = "\n".join(fast + checked).replace("(__ARGS__)", f"(buf, pos, end{args})") + "\n"
    fast_fn, checked_fn = define(src, ("_fast", "_checked"), bind, f"rowplan {plan.table_name}")
    return fast_fn, checked_fn


def _source(plan: LoopPlan, name: str, images: list[int], partial: bool, checked: bool,
            bind: dict[str, Any]) -> list[str]:
    lines = [f"def {name}(__ARGS__):", "    rows = []", "    append = rows.append"]
    body: list[str] = []
    tuples = []
    for n, present in enumerate(images):
        after = n == 1
        if after and partial:
            body += _shared_image(plan, checked)
        prefix = "ab"[n]
        body += _image(plan, present, prefix, checked, after and partial, bind)
        tuples.append(
            "(" + "".join(
                (f"{prefix}{i}, " if present >> i & 1 else "_ABSENT, ")
                for i in range(plan.column_count)
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

def _shared_image(plan: LoopPlan, checked: bool) -> list[str]:
    nb = (plan.json_count + 7) // 8
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

def _image(plan: LoopPlan, present: int, prefix: str, checked: bool, partial_after: bool,
           bind: dict[str, Any]) -> list[str]:
    cols = [c for c in plan.cols if present >> c.index & 1]
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
        slow += _indent(_column_code(plan, c, var, checked, partial_after, bind), 1)
    if checked:
        return lines + slow
    fast: list[str] = []
    run: list[Col] = []
    for c in cols:
        if c.kind == "fixed":
            run.append(c)
            continue
        fast += _run_code(plan, run, prefix, bind)
        run = []
        fast += _column_code(plan, c, f"{prefix}{c.index}", False, partial_after, bind)
    fast += _run_code(plan, run, prefix, bind)
    mask = (1 << len(cols)) - 1
    cond = "not nb" if len(cols) % 8 == 0 else f"not nb & {mask}"
    lines.append(f"if {cond}:")
    lines += _indent(fast or ["pass"], 1)
    lines.append("else:")
    lines += _indent(slow or ["pass"], 1)
    return lines

def _run_code(plan: LoopPlan, run: list[Col], prefix: str, bind: dict[str, Any]) -> list[str]:
    if not run:
        return []
    if len(run) == 1:
        return _column_code(plan, run[0], f"{prefix}{run[0].index}", False, False, bind)
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

def _column_code(plan: LoopPlan, c: Col, var: str, checked: bool, partial_after: bool,
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
            bit = 1 << plan.json_bit[c.index]
            lines += [f"if pb & {bit}: {var} = _jdiffs({s})", f"else: {var} = {value}"]
        else:
            lines.append(f"{var} = {value}")
        lines.append("pos = q")
    if checked and c.kind != "var":
        lines.append("if pos > end: raise _Short('the value runs past the end of the body')")
    return lines

def fail(plan: LoopPlan, exc: Exception, row: int, col: int, pos: int) -> MalformedEventError:
    """The typed error for a failure decoding ``row``: where it happened (column, null bitmap) and why."""
    where = f"rows of {plan.table_name}, row {row}"
    if col >= 0:
        c = plan.cols[col]
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
