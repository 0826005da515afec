"""JSON-lines encoding of row changes, one rule per MySQL type (DESIGN.md, "Value encoding").

Decoded values arrive as Python objects (see ``sluice.binlog.rowplan``); most map straight onto
JSON. The rest: ``Decimal`` -> string with its exact digits, ``bytes`` -> base64, geometry ->
``{"srid", "wkb"}``, partial-JSON diffs -> a list of ``{"op", "path", "value"}``.
"""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from typing import Any

from sluice.binlog.values.geometry import Geometry
from sluice.binlog.values.json_binary import JsonDiff
from sluice.cdc.records import RowChange


def _default(value: Any) -> Any:
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


def change_line(change: RowChange) -> str:
    """The JSON line (without newline) of one row change."""
    return encode(change.as_dict())
