"""JSON-lines encoding of row changes, one rule per MySQL type (DESIGN.md, "Value encoding").

Decoded values arrive as Python objects (see ``sluice.binlog.rowplan``); most map straight onto
JSON. The rest: ``Decimal`` -> string with its exact digits, ``bytes`` -> base64, geometry ->
``{"srid", "wkb"}``, a DECIMAL inside a JSON document -> a JSON number, partial-JSON diffs -> a
list of ``{"op", "path", "value"}``, a marked value (``binlog.values.marked``) -> its object.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
from collections.abc import Sequence
from decimal import Decimal
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

from sluice.binlog.absent import ABSENT
from sluice.binlog.values.geometry import Geometry
from sluice.binlog.values.json_binary import JsonDecimal, JsonDiff
from sluice.binlog.values.marked import marked_json
from sluice.cdc.records import OP_OF_KIND, RowChange

# A DECIMAL inside a JSON document must print as a bare number with its exact digits, which the
# json module cannot emit: it is written as a marked string, and the marks are removed afterwards.
_MARK = f"\x00sluice-{secrets.token_hex(4)}:"
_MARKED = json.dumps(_MARK)[1:-1]
_b2a_base64 = binascii.b2a_base64
_UNMARK = re.compile('"' + re.escape(_MARKED) + r'(-?[0-9.]+)"')


def _default(value: Any) -> Any:
    kind = type(value)  # the two common cases first, by exact type
    if kind is Decimal:
        return format(value, "f")
    if kind is bytes:
        return _b2a_base64(value, newline=False).decode("ascii")  # = base64.b64encode
    if isinstance(value, JsonDecimal):
        return _MARK + format(value, "f")
    marked = marked_json(value)
    if marked is not None:
        return marked
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
# One C encoder for every value, with the options of ``_encoder`` (whose ``encode`` builds a new one
# per call) but no check for circular references, which decoded values cannot have.
_c_encode = c_make_encoder(None, _default, encode_basestring, None, ":", ",", False, False, True)


def encode(value: Any) -> str:
    """Compact JSON text of ``value`` (DECIMALs inside JSON documents still marked)."""
    return "".join(_c_encode(value, 0))


def unmark(text: str) -> str:
    """Turn the marked DECIMALs of an ``encode`` result into bare JSON numbers."""
    if _MARKED in text:
        text = _UNMARK.sub(r"\1", text)
    return text


def json_text(value: Any) -> str | None:
    """The JSON text of a value as the change log and the mirrors keep it (a row image, a JSON
    document, ``json_diffs``): compact, DECIMALs inside JSON as bare numbers; None (and a value the
    image does not carry, ``ABSENT``) stays None."""
    if value is None or value is ABSENT:
        return None
    return unmark(encode(value))


def json_texts(values: Sequence[Any]) -> list[str | None]:
    """``json_text`` of many values (a column of images), with one encoder for all of them."""
    enc, join, marked, unmark_all = _c_encode, "".join, _MARKED, _UNMARK.sub
    out: list[str | None] = []
    for v in values:
        if v is None or v is ABSENT:
            out.append(None)
            continue
        text = join(enc(v, 0))
        out.append(unmark_all(r"\1", text) if marked in text else text)
    return out


# Encoded pieces that repeat from change to change: '{"op":..,"db":..,"table":..,"before":', pk, file.
_heads: dict[tuple[str, str, str], str] = {}
_pks: dict[tuple[str, ...], str] = {}
_files: dict[str, str] = {}
_CACHE_MAX = 4096


def _head(op: str, db: str, table: str) -> str:
    head = _heads.get((op, db, table))
    if head is None:
        if len(_heads) >= _CACHE_MAX:
            _heads.clear()
        head = _heads[(op, db, table)] = (
            f'{{"op":{encode(op)},"db":{encode(db)},"table":{encode(table)},"before":'
        )
    return head


def _pk_file(pk: tuple[str, ...], file: str) -> str:
    """``,"pk":[...],"file":"..."`` of a change."""
    pk_text = _pks.get(pk)
    if pk_text is None:
        if len(_pks) >= _CACHE_MAX:
            _pks.clear()
        pk_text = _pks[pk] = encode(list(pk))
    file_text = _files.get(file)
    if file_text is None:
        if len(_files) >= _CACHE_MAX:
            _files.clear()
        file_text = _files[file] = encode(file)
    return f',"pk":{pk_text},"file":{file_text}'


def change_line(change: RowChange) -> str:
    """The JSON line (without newline) of one row change: ``encode(change.as_dict())``, unmarked."""
    op, db, table, pk, file, gtid = change.op, change.db, change.table, change.pk, change.file, change.gtid
    pos, row, ts = change.pos, change.row, change.ts
    if (type(op) is not str or type(db) is not str or type(table) is not str or type(file) is not str
            or type(pk) is not tuple or type(pos) is not int or type(row) is not int or type(ts) is not int
            or (gtid is not None and type(gtid) is not str)):
        return unmark(encode(change.as_dict()))
    before, after = change.before, change.after
    text = (
        f'{_head(op, db, table)}{"null" if before is None else encode(before)},'
        f'"after":{"null" if after is None else encode(after)}{_pk_file(pk, file)},"pos":{pos},"row":{row}'
        f',"gtid":{"null" if gtid is None else encode_basestring(gtid)},"ts":{ts}'
    )
    diffs = change.json_diffs
    text = f'{text},"json_diffs":{encode(diffs)}}}' if diffs else text + "}"
    if _MARKED in text:
        text = _UNMARK.sub(r"\1", text)
    return text


def record_line(record: Any) -> str:
    """The JSON line of a change record: a ``RowChange`` or anything with ``as_dict()`` (DDL)."""
    if type(record) is RowChange:
        return change_line(record)
    return encode(record.as_dict())


#: The compiled core's number of each rows-event kind.
KIND_CODES = {"write": 0, "update": 1, "delete": 2}
_keys: dict[tuple[str, ...], tuple[bytes, ...]] = {}


def line_parts(kind: str, db: str, table: str, names: tuple[str, ...], pk: tuple[str, ...], file: str,
               ) -> tuple[bytes, tuple[bytes, ...], bytes]:
    """The pieces of a row change's JSON line the compiled writer (``rows_jsonl``) puts around the
    images: the head up to ``"before":``, each column's ``"name":``, and ``,"pk":…,"file":…,"pos":``."""
    keys = _keys.get(names)
    if keys is None:
        if len(_keys) >= _CACHE_MAX:
            _keys.clear()
        keys = _keys[names] = tuple(f"{encode(name)}:".encode() for name in names)
    return _head(OP_OF_KIND[kind], db, table).encode(), keys, f'{_pk_file(pk, file)},"pos":'.encode()


def gtid_ts(gtid: str | None) -> bytes:
    """``,"gtid":…,"ts":`` of a row change's JSON line."""
    return f',"gtid":{"null" if gtid is None else encode_basestring(gtid)},"ts":'.encode()


def value_bytes(value: Any) -> bytes:
    """The JSON text of one value as ``change_line`` writes it, UTF-8."""
    return unmark(encode(value)).encode("utf-8")


def rows_event_lines(
    write_rows: Any, event: Any, names: tuple[str, ...], pk: tuple[str, ...], file: str, pos: int,
    gtid: str | None,
) -> bytes:
    """The JSON lines (UTF-8, each ending in a newline) of every row of a decoded rows event, byte
    for byte the ``change_line`` of each of its ``RowChange`` records, written by the compiled
    core's ``rows_jsonl`` (passed as ``write_rows``). Not for partial JSON updates (their diffs
    go to ``json_diffs``): those take the records' path."""
    kind = event.kind
    table = event.table
    head, keys, mid = line_parts(kind, table.schema, table.table, names, pk, file)
    data: bytes = write_rows(KIND_CODES[kind], head, keys, event.rows, mid, pos, gtid_ts(gtid),
                             event.header.timestamp, ABSENT, value_bytes)
    return data
