"""Chunks of a table's key space: the plain values a snapshot is split into, planned without I/O.

A ``Chunk`` is one half-open interval ``[lower, upper)`` of a table's snapshot key in the server's
key order (``None`` = unbounded on that side), numbered by ``index``; it pickles as plain data and
round-trips through JSON (``to_json`` / ``from_json``) for the checkpoint of completed chunks.
Bound values are the decoded values of the key columns (int, ``Decimal``, str, bytes, the
temporal text), so the same values serve as SQL literals (``chunk_predicate``) and for the order
checks of reconciliation. ``choose_key`` picks the key (the primary key, else a unique key whose
columns are all NOT NULL, else none), ``integer_chunks`` splits a single integer key by even ranges
between its MIN and MAX, and ``boundary_chunks`` turns sampled keys (taken in the server's key order,
see ``sluice.cdc.table_read.reader``) into consecutive chunks. ``ChunkRead`` is what reading one chunk
yields: its rows between a low and a high binlog watermark. Chunks have a JSON form so that the
pipeline can record the plan and the finished chunks (``sluice.spark.snapshot.driver``).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sluice.binlog.position import Checkpoint
from sluice.cdc.schema.model import ColumnDef, TableSchema
from sluice.cdc.schema.typemap import INTEGER_TYPES
from sluice.errors import ConfigError, SchemaError

__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_CHUNK_ROWS",
    "KEY_TYPES",
    "Chunk",
    "ChunkRead",
    "boundary_chunks",
    "choose_key",
    "chunk_predicate",
    "chunk_rows_for",
    "integer_chunks",
    "is_integer_key",
    "key_columns",
    "order_by",
    "sql_literal",
]

#: A chunk holds about this many bytes of the table's rows (by the server's average row length):
#: one task holds a chunk's rows a few times over (their text, its columns, their Parquet), and
#: every chunk costs Spark a task and the server a connection, which chunks of 50,000 short rows
#: do not repay: a table read in a few large chunks is read sooner than in many small ones.
CHUNK_BYTES = 64 << 20
DEFAULT_CHUNK_ROWS = 50_000  # when the server has no size statistics for the table
_CHUNK_ROWS_RANGE = (1_000, 1_000_000)

#: Column types a snapshot key may have: their decoded values are SQL literals sluice can write and
#: compare exactly (strings by the collation rule of ``sluice.cdc.table_read.reconcile``).
KEY_TYPES = frozenset({*INTEGER_TYPES, "year", "decimal", "char", "varchar", "binary", "varbinary",
                       "date", "datetime"})

Bound = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Chunk:
    """Rows of ``db.table`` whose key (columns ``key``) lies in ``[lower, upper)``; None = unbounded."""

    db: str
    table: str
    index: int
    key: tuple[str, ...]
    lower: Bound | None
    upper: Bound | None

    @property
    def id(self) -> str:
        """``db.table#index``: how progress and messages name the chunk."""
        return f"{self.db}.{self.table}#{self.index}"

    @staticmethod
    def json_id(data: Mapping[str, Any]) -> str:
        """The ``id`` of a chunk's JSON, read without its bounds (which may be sealed)."""
        return f"{data['db']}.{data['table']}#{data['index']}"

    def to_json(self) -> dict[str, Any]:
        """The chunk as a JSON object (decimal and bytes bound values as tagged objects)."""
        return {"db": self.db, "table": self.table, "index": self.index, "key": list(self.key),
                "lower": _bound_json(self.lower), "upper": _bound_json(self.upper)}

    @classmethod
    def from_json(cls, data: Any) -> Chunk:
        """Inverse of ``to_json``; another shape raises ``ConfigError``."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"a snapshot chunk must be a JSON object, found {data!r:.120}")
        try:
            db, table, index, key = data["db"], data["table"], data["index"], data["key"]
            lower, upper = _bound_from_json(data["lower"]), _bound_from_json(data["upper"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"snapshot chunk {data!r:.200} is damaged ({exc!r}): expected db, table, index, key, lower, upper; "
                "remove the snapshot progress file to snapshot the table again"
            ) from None
        if not (isinstance(db, str) and isinstance(table, str) and isinstance(index, int) and isinstance(key, list)):
            raise ConfigError(f"snapshot chunk {data!r:.200} has fields of the wrong types")
        return cls(db, table, index, tuple(str(k) for k in key), lower, upper)


@dataclass(frozen=True, slots=True)
class ChunkRead:
    """One chunk's rows as a ``SELECT`` saw them, between the ``low`` and ``high`` watermarks."""

    chunk: Chunk
    low: Checkpoint
    high: Checkpoint
    rows: list[dict[str, Any]]


def _value_json(value: Any) -> Any:
    if isinstance(value, bool):
        raise ConfigError(f"a key bound cannot be a boolean, found {value!r}")
    if isinstance(value, (int, str)):
        return value
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    raise ConfigError(f"a key bound must be an int, Decimal, str or bytes, found {type(value).__name__}")


def _bound_json(bound: Bound | None) -> list[Any] | None:
    return None if bound is None else [_value_json(v) for v in bound]


def _value_from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"decimal"}:
            return Decimal(value["decimal"])
        if set(value) == {"base64"}:
            return base64.b64decode(value["base64"], validate=True)
        raise ValueError(f"unknown tagged value {value!r}")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"not a key value: {value!r}")
    return value


def _bound_from_json(bound: Any) -> Bound | None:
    if bound is None:
        return None
    if not isinstance(bound, list):
        raise ValueError(f"a bound is a list or null, found {bound!r}")
    return tuple(_value_from_json(v) for v in bound)


# ---------------------------------------------------------------------------------------------- keys
def key_columns(schema: TableSchema, names: Sequence[str]) -> tuple[ColumnDef, ...]:
    """The ``ColumnDef`` of each key column, in key order."""
    by_name = {c.name.lower(): c for c in schema.columns}
    out = []
    for name in names:
        column = by_name.get(name.lower())
        if column is None:
            raise SchemaError(f"{schema.db}.{schema.name} has no column `{name}` of its key {list(names)}")
        out.append(column)
    return tuple(out)


def _usable(schema: TableSchema, names: Sequence[str]) -> bool:
    try:
        columns = key_columns(schema, names)
    except SchemaError:
        return False
    return bool(columns) and all(c.data_type in KEY_TYPES and not c.nullable for c in columns)


def choose_key(schema: TableSchema, unique_keys: Sequence[Sequence[str]] = ()) -> tuple[str, ...]:
    """The snapshot key of ``schema``: its primary key, else the first of ``unique_keys`` (column lists
    of UNIQUE indexes) whose columns are all NOT NULL, else ``()`` — no usable key, the table is read
    in one consistent scan. A key with a column of a type outside ``KEY_TYPES`` is not usable."""
    candidates = [schema.primary_key, *unique_keys] if schema.primary_key else list(unique_keys)
    for names in candidates:
        if names and _usable(schema, names):
            return tuple(key_columns(schema, names)[i].name for i in range(len(names)))
    return ()


def is_integer_key(schema: TableSchema, key: Sequence[str]) -> bool:
    """A single key column of an integer type: split by range, compared in Python."""
    return len(key) == 1 and key_columns(schema, key)[0].data_type in INTEGER_TYPES


# ------------------------------------------------------------------------------------------ planning
def chunk_rows_for(average_row_bytes: int, *, merged: bool = False) -> int:
    """Rows per chunk for a table whose rows take ``average_row_bytes`` on average (0 when unknown):
    ``CHUNK_BYTES`` worth, within 1,000 to 1,000,000 rows. A ``merged`` chunk (into a mirror that
    already holds rows) comes back to the driver as row objects: at most ``DEFAULT_CHUNK_ROWS``."""
    if average_row_bytes <= 0:
        return DEFAULT_CHUNK_ROWS
    low, high = _CHUNK_ROWS_RANGE
    rows = max(low, min(high, CHUNK_BYTES // average_row_bytes))
    return min(rows, DEFAULT_CHUNK_ROWS) if merged else rows


def integer_chunks(db: str, table: str, key: str, low: int | None, high: int | None, rows: int,
                   chunk_rows: int = DEFAULT_CHUNK_ROWS) -> list[Chunk]:
    """Chunks of a single integer key from its MIN (``low``) and MAX (``high``) and a row estimate:
    about ``rows / chunk_rows`` even ranges (skew is allowed). The first chunk is unbounded below
    and the last unbounded above, so rows inserted outside ``[low, high]`` meanwhile are covered.
    An empty table (``low``/``high`` None) is one unbounded chunk."""
    if chunk_rows < 1:
        raise ConfigError(f"the snapshot chunk size must be at least 1 row, found {chunk_rows}")
    if low is None or high is None or high <= low:
        return [Chunk(db, table, 0, (key,), None, None)]
    count = max(1, math.ceil(max(rows, 1) / chunk_rows))
    count = min(count, high - low + 1)
    step = math.ceil((high - low + 1) / count)
    cuts = [low + step * i for i in range(1, count) if low + step * i <= high]
    return boundary_chunks(db, table, (key,), [(c,) for c in cuts])


def boundary_chunks(db: str, table: str, key: Sequence[str], boundaries: Sequence[Bound]) -> list[Chunk]:
    """Consecutive chunks cut at ``boundaries`` (ascending in the server's key order, each the first
    key of the next chunk): ``[None, b0), [b0, b1), ..., [bn, None)``."""
    key = tuple(key)
    edges: list[Bound | None] = [None, *(tuple(b) for b in boundaries), None]
    for b in boundaries:
        if len(b) != len(key):
            raise SchemaError(f"{db}.{table}: boundary {b!r} has {len(b)} values, the key {list(key)} {len(key)}")
    return [Chunk(db, table, i, key, edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


# ------------------------------------------------------------------------------------------------ SQL
def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_literal(column: ColumnDef, value: Any) -> str:
    """``value`` of ``column`` as an SQL literal compared in the column's own type and collation:
    integers and DECIMALs unquoted (a quoted number would compare as a double), binary strings as
    ``X'..'``, character strings as hex in utf8mb4 converted to the column's character set with its
    collation (no escaping rules of the session's sql_mode apply), dates as quoted text."""
    dt = column.data_type
    if dt in INTEGER_TYPES or dt == "year":
        return str(int(value))
    if dt == "decimal":
        return str(Decimal(value))
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if dt in ("date", "datetime"):
        text = str(value)
        if not all(ch.isdigit() or ch in "-: ." for ch in text):
            raise SchemaError(f"column `{column.name}`: {text!r} is not a {dt} value")
        return f"'{text}'"
    if dt in ("char", "varchar"):
        hexed = f"_utf8mb4 X'{str(value).encode('utf-8').hex()}'"
        if column.charset and column.charset not in ("utf8mb4", "binary"):
            hexed = f"CONVERT({hexed} USING {column.charset})"
        return f"{hexed} COLLATE {column.collation}" if column.collation else hexed
    raise SchemaError(f"column `{column.name}` of type {column.sql_type()} cannot be a snapshot key")


def _row(columns: Sequence[ColumnDef], values: Bound) -> tuple[str, str]:
    names = [_quote(c.name) for c in columns]
    literals = [sql_literal(c, v) for c, v in zip(columns, values, strict=True)]
    if len(names) == 1:
        return names[0], literals[0]
    return "(" + ", ".join(names) + ")", "(" + ", ".join(literals) + ")"


def chunk_predicate(schema: TableSchema, chunk: Chunk) -> str:
    """The WHERE condition of ``chunk`` (``TRUE`` for an unbounded one), a row comparison evaluated by
    the server in its key order: ``(a, b) >= (..) AND (a, b) < (..)``."""
    columns = key_columns(schema, chunk.key)
    parts = []
    if chunk.lower is not None:
        lhs, rhs = _row(columns, chunk.lower)
        parts.append(f"{lhs} >= {rhs}")
    if chunk.upper is not None:
        lhs, rhs = _row(columns, chunk.upper)
        parts.append(f"{lhs} < {rhs}")
    return " AND ".join(parts) if parts else "TRUE"


def order_by(chunk: Chunk) -> str:
    """``ORDER BY`` list of the chunk's key."""
    return ", ".join(_quote(k) for k in chunk.key)
