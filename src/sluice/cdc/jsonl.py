"""JSON-lines encoding of row changes, one rule per MySQL type (DESIGN.md, "Value encoding").

Decoded values arrive as Python objects (see ``sluice.binlog.rowplan``); most map straight onto
JSON. The rest: ``Decimal`` -> string with its exact digits, ``bytes`` -> base64, geometry ->
``{"srid", "wkb"}``, a DECIMAL inside a JSON document -> a JSON number, partial-JSON diffs -> a
list of ``{"op", "path", "value"}``.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from decimal import Decimal
from typing import Any

from sluice.binlog.values.geometry import Geometry
from sluice.binlog.values.json_binary import JsonDecimal, JsonDiff
from sluice.cdc.records import RowChange

# A DECIMAL inside a JSON document must print as a bare number with its exact digits, which the
# json module cannot emit: it is written as a marked string, and the marks are removed afterwards.
_MARK = f"\x00sluice-{secrets.token_hex(4)}:"
_MARKED = json.dumps(_MARK)[1:-1]
_UNMARK = re.compile('"' + re.escape(_MARKED) + r'(-?[0-9.]+)"')


def _default(value: Any) -> Any:
    if isinstance(value, JsonDecimal):
        return _MARK + format(value, "f")
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Geometry):
        return {"srid": value.srid, "wkb": base64.b64encode(value.wkb).decode("ascii")}
    if isinstance(value, JsonDiff):
        if value.op == "remove":
            return {"op": value.op, "path": value.path}
        return {"op": value.op, "path": value.path, "value": value.value}
    raise TypeError(f"no JSON encoding for {type(value).__name__}")


_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_default, allow_nan=True)
encode = _encoder.encode


def unmark(text: str) -> str:
    """Turn the marked DECIMALs of an ``encode`` result into bare JSON numbers."""
    if _MARKED in text:
        text = _UNMARK.sub(r"\1", text)
    return text


def change_line(change: RowChange) -> str:
    """The JSON line (without newline) of one row change."""
    text = encode(change.as_dict())
    if _MARKED in text:
        text = _UNMARK.sub(r"\1", text)
    return text


def record_line(record: Any) -> str:
    """The JSON line of a change record: a ``RowChange`` or anything with ``as_dict()`` (DDL)."""
    if type(record) is RowChange:
        return change_line(record)
    return encode(record.as_dict())
