"""One-line summaries of decoded binlog events, for ``sluice tail --events`` and ``sluice dump --events``.

Every event gets its type name, file, offset and size; ROTATE, GTID (MySQL and MariaDB), QUERY,
XID, FORMAT_DESCRIPTION and the statement events of row-based logging (ANNOTATE_ROWS,
ROWS_QUERY) also get their decoded fields, in JSON-safe form. A TABLE_MAP
gets its table id, database, table, flags, every column's type and metadata (decoded, and what
the optional metadata says of it) and its primary key; a rows event its table, flags (and their
names), row count and, with ``values``, its rows positionally (``@1``, ``@2``, … as ``mysqlbinlog
-vv`` prints them); a TRANSACTION_PAYLOAD the summaries of the events inside it.

Rows are decoded for inspection (``inspection_plan``): a value that needs a fact the binlog does
not give (a charset, a signedness), or text that does not decode, comes out marked
(``sluice.binlog.values.marked``), so no value stops the listing. Row values are left as the
decoder gives them: the caller writes the summary with the change record's value encoding.
"""

from __future__ import annotations

import base64
import dataclasses
import uuid
from enum import Enum
from typing import Any

from sluice.binlog.absent import ABSENT
from sluice.binlog.colplan import type_name
from sluice.binlog.column_info import ColumnInfo, inspection_columns
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.constants import EventType
from sluice.binlog.decoders.table_map import string_meta
from sluice.binlog.events import RowsEvent, SkippedRowsEvent, TableMapEvent, TransactionPayloadEvent
from sluice.binlog.rowplan import RowPlan, plan_for
from sluice.binlog.values.charsets import COLLATION_CHARSETS

__all__ = ["event_summary", "inspection_plan"]

_DETAILED = frozenset(
    {
        EventType.ROTATE_EVENT,
        EventType.QUERY_EVENT,
        EventType.QUERY_COMPRESSED_EVENT,
        EventType.XID_EVENT,
        EventType.GTID_LOG_EVENT,
        EventType.ANONYMOUS_GTID_LOG_EVENT,
        EventType.GTID_TAGGED_LOG_EVENT,
        EventType.GTID_EVENT,
        EventType.FORMAT_DESCRIPTION_EVENT,
        EventType.XA_PREPARE_LOG_EVENT,
        EventType.ANNOTATE_ROWS_EVENT,
        EventType.ROWS_QUERY_LOG_EVENT,
    }
)
_SKIP_FIELDS = frozenset({"header", "raw", "post_header_lengths"})

#: Rows event flags (rows_event.h ``Rows_event::enum_flag``).
ROWS_FLAGS = {1: "STMT_END_F", 2: "NO_FOREIGN_KEY_CHECKS_F", 4: "RELAXED_UNIQUE_CHECKS_F", 8: "COMPLETE_ROWS_F",
              0x80: "NO_CHECK_CONSTRAINT_CHECKS_F"}
_BLOBS = {1: "TINY_BLOB", 2: "BLOB", 3: "MEDIUM_BLOB", 4: "LONG_BLOB"}
_FSP = frozenset({T.TIME2, T.DATETIME2, T.TIMESTAMP2})
_PREFIXED = frozenset({T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.JSON, T.GEOMETRY, T.VECTOR})


def inspection_plan(table_map: TableMapEvent) -> RowPlan:
    """The row plan ``--events`` decodes with: values that need a fact the map does not give come
    out marked instead of guessed or refused (``ColumnInfo.mark_unsure``)."""
    return plan_for(table_map, inspection_columns(table_map.columns))


def event_summary(event: Any, file: str, pos: int, *, values: bool = False) -> dict[str, Any]:
    """JSON-safe summary of one event (module docstring); with ``values`` a rows event's rows too,
    as the decoder's values (to be written with the change record's encoding)."""
    header = event.header
    try:
        name = EventType(header.type_code).name
    except ValueError:
        name = f"UNKNOWN({header.type_code})"
    out: dict[str, Any] = {"type": name, "file": file, "pos": pos, "size": header.event_size}
    kind = type(event)
    if kind is TableMapEvent:
        out.update(_table_map(event))
    elif kind is RowsEvent:
        out.update(_rows(event, values))
    elif kind is SkippedRowsEvent:
        out.update({"table_id": event.table_id, "db": event.schema, "table": event.table, "skipped": True})
    elif kind is TransactionPayloadEvent:
        out.update({"compression_type": event.compression_type, "payload_size": event.payload_size,
                    "uncompressed_size": event.uncompressed_size,
                    "events": [event_summary(e, file, pos, values=values) for e in event.events]})
    elif header.type_code in _DETAILED and dataclasses.is_dataclass(event):
        for field in dataclasses.fields(event):
            if field.name in _SKIP_FIELDS:
                continue
            out[field.name] = _plain(getattr(event, field.name))
    return out


def _table_map(tm: TableMapEvent) -> dict[str, Any]:
    columns = [
        column_summary(code, meta, tm.nullable[i], tm.columns[i])
        for i, (code, meta) in enumerate(zip(tm.column_types, tm.column_meta, strict=True))
    ]
    out: dict[str, Any] = {"table_id": tm.table_id, "db": tm.schema, "table": tm.table, "flags": tm.flags,
                           "column_count": tm.column_count, "columns": columns}
    if tm.primary_key is not None:
        out["primary_key"] = [f"@{i + 1}" for i, _prefix in tm.primary_key]
        prefixes = {f"@{i + 1}": prefix for i, prefix in tm.primary_key if prefix}
        if prefixes:
            out["primary_key_prefixes"] = prefixes  # key parts on a column's first N characters
    return out


def column_summary(code: int, meta: int, nullable: bool, info: ColumnInfo) -> dict[str, Any]:
    """One TABLE_MAP column: its type (the real one of a STRING column), its metadata as logged and
    decoded, whether it may be NULL, and whatever the optional metadata says of it."""
    out: dict[str, Any] = {}
    if info.name is not None:
        out["name"] = info.name
    out.update(_type_and_meta(code, meta))
    out["nullable"] = nullable
    if info.unsigned is not None:
        out["unsigned"] = info.unsigned
    if info.collation is not None:
        out["collation_id"] = info.collation
        out["charset"] = "binary" if info.collation == 63 else COLLATION_CHARSETS.get(info.collation)
    for key in ("enum_values", "set_values"):
        members = getattr(info, key)
        if members is not None:
            out[key] = list(members)
    if info.geometry_type is not None:
        out["geometry_type"] = info.geometry_type
    if info.vector_dimension is not None:
        out["vector_dimension"] = info.vector_dimension
    if not info.visible:
        out["visible"] = False
    return out


def _type_and_meta(code: int, meta: int) -> dict[str, Any]:
    """The type name and the metadata decoded as the server packs it (``TableMapEvent``)."""
    out: dict[str, Any] = {"type": type_name(code), "meta": meta}
    if code in (T.VARCHAR, T.VAR_STRING):
        out["max_bytes"] = meta
    elif code in (T.STRING, T.ENUM, T.SET):
        real, length = string_meta(meta) if meta else (code, 0)
        out["type"] = type_name(real)
        out["pack_bytes" if real in (T.ENUM, T.SET) else "max_bytes"] = length
    elif code == T.NEWDECIMAL:
        out["precision"], out["scale"] = meta >> 8, meta & 0xFF
    elif code in _FSP:
        out["fsp"] = meta
    elif code == T.BIT:
        out["bits"] = (meta & 0xFF) * 8 + (meta >> 8)
    elif code in (T.FLOAT, T.DOUBLE):
        out["pack_bytes"] = meta
    elif code in _PREFIXED:
        out["length_bytes"] = meta
        if code == T.BLOB and meta in _BLOBS:
            out["blob"] = _BLOBS[meta]  # TINY/…/LONG: TEXT or BLOB by the charset
    return out


def _rows(event: RowsEvent, values: bool) -> dict[str, Any]:
    tm = event.table
    out: dict[str, Any] = {
        "table_id": event.table_id, "db": tm.schema, "table": tm.table, "flags": event.flags,
        "flag_names": [n for bit, n in ROWS_FLAGS.items() if event.flags & bit], "row_count": len(event.rows),
    }
    if event.partition_id is not None:
        out["partition_id"] = event.partition_id
    if event.source_partition_id is not None:
        out["source_partition_id"] = event.source_partition_id
    if values:
        if event.kind == "update":
            out["rows"] = [{"before": _image(b), "after": _image(a)} for b, a in event.rows]
        else:
            out["rows"] = [_image(row) for row in event.rows]
    return out


def _image(row: tuple[Any, ...]) -> dict[str, Any]:
    """A row image by position, ``@1`` first; columns not in a minimal image are left out."""
    return {f"@{i + 1}": v for i, v in enumerate(row) if v is not ABSENT}


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(raw).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)
