"""MySQL's partial JSON updates replayed on the document they change, as the server replays them.

With ``binlog_row_value_options=PARTIAL_JSON`` MySQL logs an update of a JSON column made by
``JSON_SET`` / ``JSON_REPLACE`` / ``JSON_REMOVE`` as the changes themselves (``JsonDiff``: replace,
insert or remove at a path) instead of the new document. ``apply_json_diffs`` replays them on a
copy of the old document as ``apply_json_diffs`` in the server's sql/json_diff.cc does: a
replacement needs its path, an insertion its parent (a new member of an object, or a cell of an
array, appended when past the end), a removal its path. A member added to an object takes its
place in the order the server keeps keys in (shorter first, then by their UTF-8 bytes), so the
result is the document a full image of the row would have carried.

The paths are the server's text (``$.a``, ``$."a b"[2]``, ``$[last]``): members by name, plain or
quoted as a JSON string, array cells by index, counted from the end after ``last``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from sluice.binlog.values.json_binary import JsonDiff

__all__ = ["apply_json_diffs", "parse_path"]

Leg = tuple[str, int, bool] | str  # a member name, or (cell, index, counted from the end)

_STRING = json.JSONDecoder()
_NAME_END = frozenset(".[ \t")


def parse_path(path: str) -> list[Leg]:
    """The legs of a JSON path without wildcards or ranges; ``ValueError`` for any other text."""
    if not path.startswith("$"):
        raise ValueError(f"JSON path {path!r} does not start with $")
    legs: list[Leg] = []
    i, n = 1, len(path)
    while True:
        while i < n and path[i] in " \t":
            i += 1
        if i == n:
            return legs
        if path[i] == ".":
            i += 1
            while i < n and path[i] in " \t":
                i += 1
            if i < n and path[i] == '"':
                name, i = _STRING.raw_decode(path, i)
            else:
                start = i
                while i < n and path[i] not in _NAME_END:
                    i += 1
                name = path[start:i]
                if not name or name.startswith("*"):
                    raise ValueError(f"JSON path {path!r}: expected a member name at {start}")
            legs.append(name)
        elif path[i] == "[":
            close = path.find("]", i)
            if close < 0:
                raise ValueError(f"JSON path {path!r}: [ without ]")
            legs.append(_cell(path, path[i + 1:close]))
            i = close + 1
        else:
            raise ValueError(f"JSON path {path!r}: unexpected {path[i]!r} at {i}")


def _cell(path: str, text: str) -> tuple[str, int, bool]:
    words = text.replace("-", " - ").split()
    try:
        if words == ["last"]:
            return ("cell", 0, True)
        if len(words) == 3 and words[0] == "last" and words[1] == "-":
            return ("cell", int(words[2]), True)
        if len(words) == 1:
            return ("cell", int(words[0]), False)
    except ValueError:
        pass
    raise ValueError(f"JSON path {path!r}: array cell [{text}] is not an index")


def _position(leg: tuple[str, int, bool], size: int) -> int:
    """The cell's position in an array of ``size`` (``first_array_index``); may be out of bounds."""
    _, index, from_end = leg
    if not from_end:
        return index
    return size - 1 - index if index < size else -1


def apply_json_diffs(document: Any, diffs: Iterable[JsonDiff]) -> Any:
    """The document after ``diffs`` (``document`` itself is not changed); ``ValueError`` naming the
    diff when one does not fit it (the server would have logged the whole document instead)."""
    doc = copy.deepcopy(document)
    for diff in diffs:
        legs = parse_path(diff.path)
        if not legs:
            raise ValueError(f"a JSON diff ({diff.op}) of the whole document at {diff.path!r}")
        parent = _seek(doc, legs[:-1], diff)
        last = legs[-1]
        value = copy.deepcopy(diff.value)
        if isinstance(parent, dict) and isinstance(last, str):
            if diff.op == "insert":
                if last in parent:
                    raise ValueError(f"JSON diff insert at {diff.path!r}: the member exists already")
                parent[last] = value
                ordered = sorted(parent.items(), key=lambda kv: (len(kv[0].encode()), kv[0].encode()))
                parent.clear()
                parent.update(ordered)
            elif last not in parent:
                raise ValueError(f"JSON diff {diff.op} at {diff.path!r}: no such member")
            elif diff.op == "replace":
                parent[last] = value
            else:
                del parent[last]
        elif isinstance(parent, list) and not isinstance(last, str):
            at = _position(last, len(parent))
            if diff.op == "insert":
                parent.insert(max(at, 0), value)  # past the end: appended
            elif not 0 <= at < len(parent):
                raise ValueError(f"JSON diff {diff.op} at {diff.path!r}: no such array cell")
            elif diff.op == "replace":
                parent[at] = value
            else:
                del parent[at]
        else:
            raise ValueError(f"JSON diff {diff.op} at {diff.path!r}: the path does not fit the document")
    return doc


def _seek(doc: Any, legs: list[Leg], diff: JsonDiff) -> Any:
    for leg in legs:
        if isinstance(doc, dict) and isinstance(leg, str) and leg in doc:
            doc = doc[leg]
            continue
        if isinstance(doc, list) and not isinstance(leg, str):
            at = _position(leg, len(doc))
            if 0 <= at < len(doc):
                doc = doc[at]
                continue
        raise ValueError(f"JSON diff {diff.op} at {diff.path!r}: the path does not fit the document")
    return doc
