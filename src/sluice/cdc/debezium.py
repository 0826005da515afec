"""Debezium's change event, written from sluice's JSON lines (``sluice tail`` / ``dump --format debezium``).

A consumer written for Debezium's MySQL (or MariaDB) connector reads these lines unchanged: each
is the ``payload`` of a change event as Kafka Connect's JSON converter writes it with schemas off::

    {"before": {...} | null, "after": {...} | null,
     "source": {"version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "table",
                "server_id", "gtid", "file", "pos", "row", "thread", "query"},
     "op": "c" | "u" | "d", "ts_ms": ..., "transaction": null}

Values follow the connector's defaults (``decimal.handling.mode=precise``,
``time.precision.mode=adaptive_time_microseconds``, ``binary.handling.mode=bytes``, bytes written
as base64 by the JSON converter); ``docs/debezium.md`` has the table. Each column's rule is
chosen once per table layout from its TABLE_MAP type, metadata and ``ColumnInfo``, and applied to
the values of sluice's JSON line, whose encoding is lossless. ``ts_ms`` (both) is the event's
header time in milliseconds, so a replay prints the same lines. A value Debezium has no exact form
for is a ``SchemaError``: a column read by position (its type facts unknown) and an integer of
unknown signedness. A minimal image's absent columns, and a column a partial JSON update changed,
are left out of ``after``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

from sluice import __version__
from sluice.binlog.column_info import ColumnInfo, may_mark, string_real_type
from sluice.binlog.constants import ColumnType as T
from sluice.binlog.values.json_binary import JsonDecimal
from sluice.cdc.jsonl import json_text
from sluice.errors import SchemaError

__all__ = ["DEBEZIUM_OPS", "DebeziumLines", "column_rules", "transaction_source"]

#: sluice's op -> Debezium's: MariaDB's system-versioned history rows are writes and deletes of rows.
DEBEZIUM_OPS = {"insert": "c", "update": "u", "delete": "d", "history": "c", "delete_history": "d"}

Rule = Callable[[Any], Any]  # a value of sluice's JSON line -> its Debezium value (never given None)

_EPOCH = date(1970, 1, 1).toordinal()
_INTEGERS = frozenset({T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG})
_BLOBS = frozenset({T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.BLOB})


def _same(v: Any) -> Any:
    return v


def _number(v: Any) -> float:
    return float(v)  # a JSON number read as JsonDecimal: its digits give the float exactly


def _days(text: str) -> int | None:
    """``io.debezium.time.Date``: days since the epoch; None for a zero or partial date."""
    y, m, d = int(text[0:4]), int(text[5:7]), int(text[8:10])
    if not (y and m and d):
        return None
    return date(y, m, d).toordinal() - _EPOCH


def _micros(text: str) -> int | None:
    """Microseconds since the epoch of ``YYYY-MM-DD[ T]HH:MM:SS[.ffffff]`` read as UTC; None when zero."""
    days = _days(text)
    if days is None:
        return None
    clock = text[11:].rstrip("Z")
    hms, _, fraction = clock.partition(".")
    h, m, s = (int(x) for x in hms.split(":"))
    return (days * 86_400 + h * 3600 + m * 60 + s) * 1_000_000 + int((fraction + "000000")[:6])


def _time_micros(text: str) -> int:
    """``io.debezium.time.MicroTime``: a TIME's signed microseconds (hours up to 838)."""
    sign = -1 if text.startswith("-") else 1
    hms, _, fraction = text.lstrip("-").partition(".")
    h, m, s = (int(x) for x in hms.split(":"))
    return sign * ((h * 3600 + m * 60 + s) * 1_000_000 + int((fraction + "000000")[:6]))


def _zero(rule: Rule, nullable: bool, zero: Any) -> Rule:
    """A temporal rule whose zero value is null in a nullable column and the epoch otherwise."""
    if nullable:
        return rule

    def or_epoch(v: Any) -> Any:
        out = rule(v)
        return zero if out is None else out

    return or_epoch


def _millis(text: str) -> int | None:
    micros = _micros(text)
    return None if micros is None else micros // 1000


def _zoned(text: str) -> str | None:
    """``io.debezium.time.ZonedTimestamp``: the UTC instant as ISO-8601 text (sluice's TIMESTAMP text
    is that already, with the column's fractional digits); None for the zero timestamp."""
    if _days(text) is None:
        return None
    return text

def _decimal(scale: int) -> Rule:
    """``org.apache.kafka.connect.data.Decimal``: the unscaled value's two's-complement bytes,
    big-endian and minimal (Java's ``BigInteger.toByteArray``), in base64."""

    def precise(text: str) -> str:
        sign, digits, exponent = Decimal(text).as_tuple()  # exact: no context rounds it
        shift = int(exponent) + scale
        unscaled = int("".join(map(str, digits)) or "0")
        unscaled = unscaled * 10**shift if shift >= 0 else unscaled // 10**-shift
        unscaled = -unscaled if sign else unscaled
        size = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
        return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode("ascii")

    return precise


def _bits(bits: int) -> Rule:
    """BIT(1) is a boolean; a wider BIT is ``io.debezium.data.Bits``: its bytes little-endian."""
    if bits == 1:
        return bool
    size = (bits + 7) // 8
    return lambda v: base64.b64encode(int(v).to_bytes(size, "little")).decode("ascii")


def _json_document(v: Any) -> str | None:
    """``io.debezium.data.Json``: the document's JSON text."""
    return json_text(v)


def _members(v: Any) -> str:
    """``io.debezium.data.EnumSet``: a SET's members joined by commas."""
    return ",".join(v)


def _rule(t: int, meta: int, info: ColumnInfo, nullable: bool, where: str) -> Rule:
    """The Debezium rule of one column (its TABLE_MAP type, metadata and what else is known of it)."""
    if may_mark(t, meta, info):
        raise SchemaError(
            f"{where}: Debezium's format needs each column's type, and this one was read by position "
            "(its signedness or character set unknown); give sluice the table's schema (--schema, or "
            "binlog_row_metadata=FULL on the server)")
    if t in _INTEGERS or t == T.YEAR:
        return _same
    if t in (T.FLOAT, T.DOUBLE):
        return _number
    if t == T.NEWDECIMAL:
        return _decimal(meta & 0xFF)
    if t in (T.DATE, T.NEWDATE):
        return _zero(_days, nullable, 0)
    if t in (T.DATETIME, T.DATETIME2):
        fsp = meta if t == T.DATETIME2 else 0
        return _zero(_millis if fsp <= 3 else _micros, nullable, 0)
    if t in (T.TIMESTAMP, T.TIMESTAMP2):
        return _zero(_zoned, nullable, "1970-01-01T00:00:00Z")
    if t in (T.TIME, T.TIME2):
        return _time_micros
    if t == T.BIT:
        return _bits((meta & 0xFF) * 8 + (meta >> 8))
    if t == T.JSON:
        return _json_document
    if t in (T.STRING, T.ENUM, T.SET):
        real, _ = string_real_type(t, meta)
        if real == T.SET:
            if info.set_values is None:
                raise SchemaError(f"{where}: a SET column whose members the binlog does not name; give sluice "
                                  "the table's schema")
            return _members
        if real == T.ENUM and info.enum_values is None:
            raise SchemaError(f"{where}: an ENUM column whose members the binlog does not name; give sluice "
                              "the table's schema")
        return _same  # text, an ENUM member, MariaDB's UUID / INET text, or base64 bytes already
    if t in (T.VARCHAR, T.VAR_STRING) or t in _BLOBS or t in (T.GEOMETRY, T.VECTOR, T.NULL):
        return _same  # text, base64 bytes, {"srid", "wkb"} (Debezium's Geometry) or a float vector
    raise SchemaError(f"{where}: column type {t} has no Debezium form")


def column_rules(table_map: Any, columns: Sequence[ColumnInfo]) -> dict[str, Rule]:
    """Each column's Debezium rule, by name, for one TABLE_MAP layout."""
    where = f"{table_map.schema}.{table_map.table}"
    nullable = getattr(table_map, "nullable", None) or (True,) * len(columns)
    return {
        info.name or f"@{i + 1}": _rule(t, meta, info, nullable[i], f"{where}, column {info.name or i + 1}")
        for i, (t, meta, info) in enumerate(zip(table_map.column_types, table_map.column_meta, columns,
                                                 strict=True))
    }


class DebeziumLines:
    """Turns sluice's JSON lines into Debezium's change events, one table layout at a time.

    ``layouts`` is the capture's ``(db, table) -> (TableMapEvent, ResolvedTable)``: the layout the
    lines of a committed transaction were decoded in. ``name`` is Debezium's ``topic.prefix``, the
    ``source.name`` of every event; ``connector`` ``"mysql"`` or ``"mariadb"``. ``columns``: the
    capture's ``ColumnRules``: a hashed column's value is its hash, a string, whatever its type.
    """

    def __init__(self, layouts: Any, *, name: str, connector: str, columns: Any = None) -> None:
        self.layouts = layouts
        self.name = name
        self.connector = connector
        self.columns = columns
        self._rules: dict[tuple[str, str], tuple[Any, dict[str, Rule]]] = {}

    def _table_rules(self, db: str, table: str) -> dict[str, Rule]:
        table_map, resolved = self.layouts[(db, table)]
        cached = self._rules.get((db, table))
        if cached is not None and cached[0] is resolved:
            return cached[1]
        rules = column_rules(table_map, resolved.columns)
        if self.columns is not None:
            rules.update(dict.fromkeys(self.columns.of(db, table, tuple(rules), "hash"), _same))
        self._rules[(db, table)] = (resolved, rules)
        return rules

    def convert(self, line: bytes, server_id: int | None, thread: int | None) -> bytes:
        """One JSON line of a row change as a Debezium event line (newline-ended)."""
        change = json.loads(line, parse_float=JsonDecimal)
        rules = self._table_rules(change["db"], change["table"])
        ts_ms = change["ts"] * 1000
        event = {
            "before": _image(change["before"], rules),
            "after": _image(change["after"], rules),
            "source": {
                "version": __version__, "connector": self.connector, "name": self.name, "ts_ms": ts_ms,
                "snapshot": "false", "db": change["db"], "sequence": None, "table": change["table"],
                "server_id": server_id, "gtid": change.get("gtid"), "file": change["file"], "pos": change["pos"],
                "row": change["row"], "thread": thread, "query": None,
            },
            "op": DEBEZIUM_OPS[change["op"]],
            "ts_ms": ts_ms,
            "transaction": None,
        }
        return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    def convert_chunk(self, chunk: bytes, server_id: int | None, thread: int | None) -> bytes:
        """Every line of a chunk of JSON lines (DDL lines are not change events: left out)."""
        out = []
        for line in chunk.splitlines():
            if line and not line.startswith(b'{"op":"ddl"'):
                out.append(self.convert(line, server_id, thread))
        return b"".join(out)


def _image(image: dict[str, Any] | None, rules: dict[str, Rule]) -> dict[str, Any] | None:
    if image is None:
        return None
    return {name: None if value is None else rules[name](value) for name, value in image.items()}


def transaction_source(events: Sequence[Any]) -> tuple[int | None, int | None]:
    """``(server_id, thread)`` of a transaction from its events: the first event's header server id
    and the BEGIN query's thread id; None where its events are not kept."""
    server_id = thread = None
    for _file, _pos, event in events[:3]:
        if server_id is None:
            server_id = event.header.server_id
        thread_id = getattr(event, "thread_id", None)
        if thread_id is not None:
            thread = thread_id
            break
    return server_id, thread
