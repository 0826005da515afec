"""Typed row images from the change records: JSON image text back to the values the row decoder made.

The pipeline's driver receives row images as JSON text in sluice's JSON-lines value encoding
(DESIGN.md, "Value encoding"). ``decode_image`` turns that text back into the values the row
decoder (``sluice.binlog.rowplan``) produced, which is what ``MirrorColumn.convert`` accepts:
DECIMAL strings to ``Decimal``, base64 to ``bytes``, SET arrays to tuples, ``{"srid", "wkb"}`` to
``Geometry``, VECTOR arrays to tuples of floats, and numbers inside JSON documents kept exact (a
number whose text is not the shortest text of a double is a ``JsonDecimal``). One decoder is
compiled per column layout and cached; the per-image loop touches only the columns that need a
conversion. ``row_change_from_record`` rebuilds a ``RowChange`` from a change-DataFrame row.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa

from sluice.binlog.values.geometry import Geometry
from sluice.binlog.values.json_binary import JsonDecimal, JsonDiff, JsonDiffs
from sluice.cdc.records import ROW_OPS, RowChange
from sluice.errors import ProtocolError, SchemaError
from sluice.lake.types.mirror_columns import GEOMETRY_TYPE, MirrorColumn

__all__ = ["ImageDecoder", "decode_image", "image_decoder", "json_document", "row_change_from_record"]

ImageDecoder = Callable[[str | None], dict[str, Any] | None]


# -- JSON image -> decoded values ---------------------------------------------------------------

def _exact_number(text: str) -> float | JsonDecimal:
    """A non-integer number inside a JSON document: a double when the text is that double's own
    (shortest) text, otherwise a DECIMAL written with its exact digits."""
    value = float(text)
    if repr(value) == text:
        return value
    return JsonDecimal(text)


_loads = json.loads
_loads_exact = json.JSONDecoder(parse_float=_exact_number).decode


def json_document(text: str) -> Any:
    """A JSON document from its text in sluice's encoding (an image's JSON column, a mirror's JSON
    value), numbers kept exact: ``json_text`` of it writes the same text again."""
    return _loads_exact(text)


def _decimal(v: Any) -> Decimal:
    if v.__class__ is str:
        return Decimal(v)
    raise TypeError("not a string")


def _binary(v: Any) -> bytes:
    if v.__class__ is str:
        return binascii.a2b_base64(v, strict_mode=True)
    raise TypeError("not a string")


def _number(v: Any) -> float:
    cls = v.__class__
    if cls is float:
        return v
    if cls is int or cls is JsonDecimal:
        return float(v)
    raise TypeError("not a number")


def _members(v: Any) -> tuple[str, ...]:
    if v.__class__ is list and all(m.__class__ is str for m in v):
        return tuple(v)
    raise TypeError("not an array of strings")


def _vector(v: Any) -> tuple[float, ...]:
    if v.__class__ is list:
        return tuple(_number(x) for x in v)
    raise TypeError("not an array")


def _geometry(v: Any) -> Geometry:
    if v.__class__ is dict and v.keys() == {"srid", "wkb"} and v["srid"].__class__ is int:
        return Geometry(v["srid"], _binary(v["wkb"]))
    raise TypeError("not a geometry object")


_EXPECTED: dict[Callable[[Any], Any], str] = {
    _decimal: "a string with the exact digits",
    _binary: "base64 text",
    _number: "a number",
    _members: "an array of member strings",
    _vector: "an array of numbers",
    _geometry: 'an object {"srid": n, "wkb": "<base64>"}',
}
_VALUE_ERRORS = (TypeError, ValueError, ArithmeticError, AttributeError, KeyError)


def _value_decoder(col: MirrorColumn) -> Callable[[Any], Any] | None:
    """The function from a column's JSON value to its decoded value; None when they are the same
    (integers, BIT, YEAR, text, ENUM, temporal text, JSON documents)."""
    mysql_type, arrow_type = col.mysql_type, col.arrow_type
    if mysql_type.startswith("decimal("):
        return _decimal
    if mysql_type in ("float", "double"):
        return _number
    if mysql_type.startswith("vector"):
        return _vector
    if arrow_type == GEOMETRY_TYPE:
        return _geometry
    if pa.types.is_binary(arrow_type):
        return _binary
    if pa.types.is_list(arrow_type) and pa.types.is_string(arrow_type.value_type):
        return _members
    return None


def _compile(cols: tuple[MirrorColumn, ...]) -> ImageDecoder:
    names = frozenset(c.name for c in cols)
    by_lower = {c.name.lower(): c.name for c in cols}
    steps = tuple((c.name, f, c) for c in cols if (f := _value_decoder(c)) is not None)
    loads = _loads_exact if any(c.mysql_type == "json" for c in cols) else _loads

    def decode(text: str | None) -> dict[str, Any] | None:
        if text is None:
            return None
        try:
            image = loads(text)
        except (ValueError, TypeError) as exc:
            raise ProtocolError(
                f"a row image is not JSON ({exc}): found {text!r:.120}; row images must be JSON objects in "
                "sluice's JSON-lines encoding — check that the column holds the change record's before/after"
            ) from exc
        if image.__class__ is not dict:
            if image is None:
                return None
            raise ProtocolError(
                f"a row image must be a JSON object of column values, found {text!r:.120}; check that the "
                "column holds the change record's before/after"
            )
        if not image.keys() <= names:
            image = _rekey(image, names, by_lower)
        for name, f, col in steps:
            v = image.get(name)
            if v is not None:
                try:
                    image[name] = f(v)
                except _VALUE_ERRORS as exc:
                    raise SchemaError(
                        f"column {name!r} ({col.mysql_type}) of a row image holds {v!r:.120}, but its JSON-lines "
                        f"encoding is {_EXPECTED[f]} ({exc}); the schema sluice holds for the table disagrees "
                        "with the change records — re-read the table's schema"
                    ) from exc
        return image

    return decode


def _rekey(image: dict[str, Any], names: frozenset[str], by_lower: dict[str, str]) -> dict[str, Any]:
    """Keep the image's columns that are in the layout, matching names without case as the server
    does (a column renamed only in case); drop the others (columns dropped since)."""
    out: dict[str, Any] = {}
    for key, value in image.items():
        if key in names:
            out[key] = value
        else:
            name = by_lower.get(key.lower())
            if name is not None and name not in image:
                out[name] = value
    return out


_MAX_CACHED = 1024
_by_identity: dict[int, tuple[tuple[MirrorColumn, ...], ImageDecoder]] = {}
_by_value: dict[tuple[MirrorColumn, ...], ImageDecoder] = {}


def image_decoder(columns: Sequence[MirrorColumn]) -> ImageDecoder:
    """The compiled ``decode_image`` of one column layout (cached): hoist it out of a loop."""
    if columns.__class__ is tuple:
        hit = _by_identity.get(id(columns))
        if hit is not None and hit[0] is columns:
            return hit[1]
    key = tuple(columns)
    decoder = _by_value.get(key)
    if decoder is None:
        if len(_by_value) >= _MAX_CACHED:
            _by_value.clear()
        decoder = _by_value[key] = _compile(key)
    if columns.__class__ is tuple:
        if len(_by_identity) >= _MAX_CACHED:
            _by_identity.clear()
        _by_identity[id(columns)] = (key, decoder)  # holds the tuple: its id stays its own
    return decoder


def decode_image(columns: Sequence[MirrorColumn], text: str | None) -> dict[str, Any] | None:
    """A row image's JSON text -> ``{column: decoded value}``, what ``MirrorColumn.convert`` takes.

    Columns of the image that are not in ``columns`` (dropped since) are left out; columns missing
    from the image (minimal images) stay missing; SQL NULL stays None. ``ProtocolError`` when the
    text is not a JSON object, ``SchemaError`` naming the column when a value does not have its
    type's encoding.
    """
    return image_decoder(columns)(text)


# -- change record -> RowChange -----------------------------------------------------------------

_OPS = frozenset(ROW_OPS)
_MISSING = object()


def _field(record: Any, name: str, default: Any = _MISSING) -> Any:
    """``record[name]`` of a Mapping or a pyspark ``Row`` (which raises ValueError when absent)."""
    try:
        return record[name]
    except (KeyError, ValueError, IndexError):
        if default is _MISSING:
            raise ProtocolError(
                f"a change record has no field {name!r} (fields: {_keys(record)}); give the rows of the change "
                "DataFrame (op, db, table, before, after, pk, file, pos, row, gtid, ts)"
            ) from None
        return default


def _keys(record: Any) -> str:
    keys = record.keys() if hasattr(record, "keys") else getattr(record, "__fields__", ())
    return ", ".join(map(str, keys))


def _seconds(ts: Any) -> int:
    """The record's ``ts`` as epoch seconds: an int, or a datetime (a naive one is local time, as
    pyspark returns Spark timestamps)."""
    if isinstance(ts, datetime):
        return int(ts.timestamp())
    if isinstance(ts, int) and not isinstance(ts, bool):
        return ts
    if isinstance(ts, float):
        return int(ts)
    raise TypeError(f"ts must be a datetime or epoch seconds, found {ts!r}")


def _json_diffs(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    doc = _loads_exact(value) if isinstance(value, str) else value
    if not doc:
        return None
    return {
        column: JsonDiffs(JsonDiff(d["op"], d["path"], d.get("value")) for d in diffs)
        for column, diffs in doc.items()
    }


def row_change_from_record(columns: Sequence[MirrorColumn], record: Mapping[str, Any]) -> RowChange:
    """A ``RowChange`` with decoded images from one row of the change DataFrame (a Mapping or a
    pyspark ``Row``: op, db, table, before and after as JSON text, pk, file, pos, row, gtid, ts,
    optionally json_diffs as JSON text)."""
    decode = image_decoder(columns)
    op = _field(record, "op")
    db, table = _field(record, "db"), _field(record, "table")
    file, pos, row = _field(record, "file"), _field(record, "pos"), _field(record, "row")
    where = f"{db}.{table} at {file}:{pos} row {row}"
    if op not in _OPS:
        raise ProtocolError(
            f"the change record of {where} has op {op!r}, expected one of {', '.join(ROW_OPS)}; leave DDL records "
            "out of mirror batches"
        )
    try:
        before = decode(_field(record, "before", None))
        after = decode(_field(record, "after", None))
        pk_names = _field(record, "pk", None) or ()
        if isinstance(pk_names, str):
            raise TypeError(f"pk must be a list of column names, found {pk_names!r}")
        pk = tuple(pk_names)
        ts = _seconds(_field(record, "ts"))
        diffs = _json_diffs(_field(record, "json_diffs", None))
        return RowChange(op, db, table, before, after, pk, file, int(pos), int(row),
                         _field(record, "gtid", None), ts, diffs)
    except (ProtocolError, SchemaError) as exc:
        raise type(exc)(f"change record of {where}: {exc}") from exc
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ProtocolError(
            f"the change record of {where} does not follow the change-record contract ({exc}); give the rows "
            "of the change DataFrame as sluice writes them"
        ) from exc
