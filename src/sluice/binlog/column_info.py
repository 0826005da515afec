"""Per-column facts a row decoder needs beyond the TABLE_MAP's type and metadata bytes.

``ColumnInfo`` carries what the optional metadata block of a TABLE_MAP event (MySQL
``binlog_row_metadata=FULL``) or sluice's schema history knows about one column: its name,
signedness, collation, ENUM / SET members, geometry subtype, vector dimension and visibility, and
what only the schema knows: MariaDB's own type of a column its binlog logs as a binary string
(``mariadb_type``: UUID, INET4, INET6; a MariaDB VECTOR is a VARCHAR with a ``vector_dimension``).
Every field is optional: a ``None`` means "not known", and the row decoder then follows the
documented fallback (signed integers, UTF-8 text for VARCHAR/CHAR, bytes for the BLOB family,
ENUM index / SET bitmask as integers). ``mark_unsure`` asks for the inspection reading instead:
what depends on an unknown fact comes out marked (``sluice.binlog.values.marked``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from sluice.binlog.constants import ColumnType

__all__ = ["BINARY_COLLATION", "ColumnInfo", "TableShape", "inspection_columns", "may_mark", "string_real_type"]

#: Collation id of the ``binary`` pseudo charset: such columns decode to ``bytes``.
BINARY_COLLATION = 63


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    """What is known about one column of a table, beyond its binlog type code."""

    name: str | None = None
    unsigned: bool | None = None
    collation: int | None = None  # collation id of a character column (63 = binary)
    enum_values: tuple[str, ...] | None = None
    set_values: tuple[str, ...] | None = None
    geometry_type: int | None = None
    vector_dimension: int | None = None
    visible: bool = True
    mariadb_type: str | None = None  # "uuid" | "inet4" | "inet6": a binary STRING printed as that type
    # Decode for inspection: a value whose reading needs a fact not known here (a character
    # column's charset, an integer's signedness), or text that does not decode in its charset,
    # comes out marked (``sluice.binlog.values.marked``) instead of guessed or refused.
    mark_unsure: bool = False


def inspection_columns(columns: Sequence[ColumnInfo]) -> tuple[ColumnInfo, ...]:
    """``columns`` read positionally, for inspection: named ``@1``, ``@2``, … (as ``mysqlbinlog -vv``
    names them) and with ``mark_unsure`` set; what the binlog says of each column is kept."""
    return tuple(replace(c, name=f"@{i + 1}", mark_unsure=True) for i, c in enumerate(columns))


class TableShape(Protocol):
    """What a row plan reads of a TABLE_MAP (``TableMapEvent`` has it all): the column types and
    their metadata, the per-column facts, the map's bytes (the plan cache's key) and its names."""

    @property
    def schema(self) -> str:
        """Database of the table."""

    @property
    def table(self) -> str:
        """Name of the table."""

    @property
    def column_count(self) -> int:
        """Number of columns the TABLE_MAP describes."""

    @property
    def column_types(self) -> Sequence[int]:
        """Binlog type code of each column (``ColumnType``)."""

    @property
    def column_meta(self) -> Sequence[int]:
        """Type metadata of each column, packed as ``TableMapEvent`` documents."""

    @property
    def columns(self) -> Sequence[ColumnInfo]:
        """What the optional metadata block or the schema history knows of each column."""

    @property
    def raw(self) -> bytes:
        """The TABLE_MAP body: the key of the row plan cache."""


def string_real_type(t: int, meta: int) -> tuple[int, int]:
    """(real type, length in bytes) of a column logged as STRING, ENUM or SET: CHAR/BINARY, ENUM and
    SET all travel as STRING with the real type in the metadata, and a CHAR longer than 255 bytes
    hides the two high bits of its length in the first byte (Field_string::do_save_field_metadata)."""
    byte0, byte1 = meta >> 8, meta & 0xFF
    if byte0 and (byte0 & 0x30) != 0x30:
        return byte0 | 0x30, byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
    return byte0 or t, byte1


_INTEGERS = frozenset({ColumnType.TINY, ColumnType.SHORT, ColumnType.INT24, ColumnType.LONG, ColumnType.LONGLONG})
_TEXT_BLOBS = frozenset({ColumnType.TINY_BLOB, ColumnType.BLOB, ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB})


def may_mark(t: int, meta: int, info: ColumnInfo) -> bool:
    """Whether the row decoder may mark a value of this column (``mark_unsure`` and a fact missing):
    an integer of unknown signedness, or a character column that is not binary (its charset unknown,
    or bytes that do not decode in it)."""
    if not info.mark_unsure:
        return False
    if t in _INTEGERS:
        return info.unsigned is None
    if info.collation == BINARY_COLLATION:
        return False
    if t in (ColumnType.VARCHAR, ColumnType.VAR_STRING):
        return info.vector_dimension is None
    if t in (ColumnType.STRING, ColumnType.ENUM, ColumnType.SET):
        return string_real_type(t, meta)[0] == ColumnType.STRING and info.mariadb_type is None
    return t in _TEXT_BLOBS
