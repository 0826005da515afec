"""How each column of a table's mirror is read column-wise, and when it cannot be.

A column's values come either from the change log's JSON images, parsed by Arrow's JSON reader as
one type and then converted to the mirror's (``read_plan``: integers, text, ENUM, TIME, DECIMAL
from its digits, DATE / DATETIME / TIMESTAMP from their text, zero and partial dates to NULL as
``sluice.lake.types.mirror_columns`` does), or from the images the compiled core typed as it wrote them
(``sluice.lake.types.typed_images``), read the same way (``as_read``). ``column_plans`` adds the
conversions that are exact for more types (FLOAT and DOUBLE, binary strings, SET, and JSON
documents from the typed images). A plan's conversion returns None, never a guess, where a value does not convert
exactly; its caller then takes the per-row path, which also raises the errors for bad data.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from sluice.lake.types import mirror_columns as t
from sluice.lake.types.mirror_columns import MirrorColumn

__all__ = ["ReadPlan", "as_read", "column_plans", "read_plan"]

_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TIME = r"[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?"
# What datetime.fromisoformat accepts of the well-formed texts: other values are None in the mirror.
_VALID_YEAR = r"([0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})"  # not 0000
_VALID_DATE = _VALID_YEAR + r"-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
_VALID_TIME = r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?"

_Finish = Callable[[pa.Array], "pa.Array | None"]
ReadPlan = tuple[pa.DataType, _Finish]


def _checked(texts: pa.Array, wellformed: str, valid: str, target: pa.DataType,
             zero_only: str | None = None) -> pa.Array | None:
    """Temporal texts -> ``target``: texts of the well-formed shape that are not valid -> NULL, valid
    ones cast (an impossible day such as Feb 30 makes Arrow fail: None). ``zero_only``: a second
    shape whose texts must all be invalid (the zero TIMESTAMP), else None."""
    present = pc.is_valid(texts)
    shaped = pc.match_substring_regex(texts, f"^(?:{wellformed})$")
    if zero_only is not None:
        zero = pc.match_substring_regex(texts, f"^(?:{zero_only})$")
        if pc.any(pc.and_(zero, pc.match_substring_regex(texts, f"^(?:{_VALID_DATE}) {_VALID_TIME}$"))).as_py():
            return None
        shaped = pc.or_(shaped, zero)
    if not pc.all(pc.or_kleene(pc.invert(present), shaped), min_count=0).as_py():  # none at all: every one
        return None
    good = pc.match_substring_regex(texts, f"^(?:{valid})$")
    kept = pc.if_else(good, texts, pa.scalar(None, pa.string()))
    try:
        return pc.cast(kept, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _cast_to(target: pa.DataType) -> _Finish:
    def finish(values: pa.Array) -> pa.Array | None:
        try:
            return pc.cast(values, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None

    return finish


def read_plan(col: MirrorColumn) -> tuple[pa.DataType, _Finish] | None:
    """(the type to read the column's JSON values as, JSON values -> mirror values), None when the
    column has no exact column-wise conversion."""
    at, mt, convert = col.arrow_type, col.mysql_type, col.convert
    if convert is t._identity:
        if pa.types.is_integer(at):
            return pa.int64(), _cast_to(at)
        if at == pa.string():
            return pa.string(), _cast_to(at)
        if pa.types.is_decimal(at):
            if mt.startswith("decimal("):
                return pa.string(), _cast_to(at)
            if at.scale == 0:  # BIGINT UNSIGNED, BIT(64), a SET bitmask: a JSON integer
                return pa.uint64(), _cast_to(at)
        return None
    if convert is t._to_date and at == pa.date32():
        return pa.string(), lambda v: _checked(v, _DATE, _VALID_DATE, at)
    if convert is t._to_datetime and pa.types.is_timestamp(at):
        if at.tz is None:
            return pa.string(), lambda v: _checked(v, f"{_DATE} {_TIME}", f"{_VALID_DATE} {_VALID_TIME}", at)
        if at.tz == "UTC":
            return pa.string(), lambda v: _checked(
                v, f"{_DATE}T{_TIME}Z", f"{_VALID_DATE}T{_VALID_TIME}Z", at, zero_only=f"{_DATE} {_TIME}"
            )
    return None


def as_read(values: pa.Array, kind: pa.DataType) -> pa.Array | None:
    """Typed values as the JSON reader would have read them as ``kind``, or None: integers as the
    integer types, texts as text, NULLs as anything; never a text as a number."""
    if values.type == pa.null():
        return pa.nulls(len(values), kind)
    if pa.types.is_string(kind) != pa.types.is_string(values.type):
        return None
    try:
        return pc.cast(values, kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def column_plans(col: MirrorColumn) -> tuple[ReadPlan | None, ReadPlan | None]:
    """How a column is read column-wise: (from the JSON images, from the typed images); None for a
    way there is not. Beyond ``read_plan``: a DOUBLE or FLOAT from its JSON number (the shortest
    text of the double, which parses back to it) or the typed double, binary from base64 (JSON
    images) or the typed bytes, SET members from their array (JSON images) or their text joined by
    commas (typed images), and a JSON document's text (typed images only)."""
    plan = read_plan(col)
    if plan is not None:
        return plan, plan
    if col.convert is t.json_text and col.mysql_type == "json":
        return None, (pa.string(), _same)
    if col.convert is not t._identity:
        return None, None
    at = col.arrow_type
    if col.mysql_type in ("double", "float"):
        def number(values: pa.Array) -> pa.Array | None:
            try:
                return pc.cast(pc.cast(values, pa.float64()), at)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None
        return (pa.float64(), number), (pa.float64(), number)
    if pa.types.is_binary(at):
        return (pa.string(), _from_base64), (pa.binary(), _same)
    if pa.types.is_list(at) and pa.types.is_string(at.value_type) and not col.mysql_type.startswith("vector"):
        return (at, _same), (pa.string(), _set_members)
    return None, None


def _same(values: pa.Array) -> pa.Array:
    return values


def _from_base64(values: pa.Array) -> pa.Array | None:
    decode = binascii.a2b_base64
    try:
        return pa.array([None if v is None else decode(v, strict_mode=True) for v in values.to_pylist()], pa.binary())
    except (binascii.Error, ValueError):
        return None


def _set_members(values: pa.Array) -> pa.Array | None:
    """A SET's members from their text joined by commas, as the core types them and the server
    prints them (a member never holds a comma, and the core leaves a SET with an empty member
    untyped): the empty text is the empty set."""
    at = pa.list_(pa.string())
    try:
        members = pc.split_pattern(values, ",")
        return pc.if_else(pc.equal(values, ""), pa.scalar([], at), members).cast(at)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
