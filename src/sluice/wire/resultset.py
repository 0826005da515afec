"""Text result sets: the answer to a COM_QUERY that returns rows.

This module owns ColumnDefinition41, text rows (length-encoded strings, 0xFB for SQL NULL) and
``ResultSetReader``, a small state machine fed one payload at a time: the column count (or an OK /
ERR instead of a result set), the column definitions, an EOF after them unless
CLIENT_DEPRECATE_EOF was negotiated, the rows, and the terminating EOF (or, with
CLIENT_DEPRECATE_EOF, an OK packet with the 0xFE header). Values are decoded as UTF-8 text (the
connection's character set is utf8mb4); bytes that are not UTF-8 are kept as surrogate escapes.
See ``sql/protocol_classic.cc``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from sluice.errors import ProtocolError, UnsupportedError
from sluice.wire.constants import EOF_HEADER, ERR_HEADER, LOCAL_INFILE_HEADER, OK_HEADER, Capability
from sluice.wire.responses import (
    NULL_MARKER,
    Buffer,
    OkPacket,
    _need,
    parse_eof,
    parse_err,
    parse_ok,
    read_lenenc_bytes,
    read_lenenc_int,
)

_COLUMN_FIXED = struct.Struct("<HIBHB")  # character set, column length, type, flags, decimals


@dataclass(frozen=True, slots=True)
class ColumnDefinition:
    """ColumnDefinition41."""

    catalog: str
    schema: str
    table: str
    org_table: str
    name: str
    org_name: str
    character_set: int
    column_length: int
    column_type: int
    flags: int
    decimals: int


@dataclass(frozen=True, slots=True)
class ResultSet:
    """Column names and text rows of one query."""

    columns: tuple[str, ...]
    rows: list[tuple[str | None, ...]]
    definitions: tuple[ColumnDefinition, ...] = field(default=(), repr=False, compare=False)
    status: int = 0
    warnings: int = 0

    def dicts(self) -> list[dict[str, str | None]]:
        """Rows as dicts keyed by column name."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def parse_column_definition(payload: Buffer) -> ColumnDefinition:
    """Parse one ColumnDefinition41 payload."""
    offset = 0
    texts = []
    for _ in range(6):  # catalog, schema, table, org_table, name, org_name
        raw, offset = read_lenenc_bytes(payload, offset)
        texts.append(_text(raw))
    fixed_len, offset = read_lenenc_int(payload, offset)
    if fixed_len < _COLUMN_FIXED.size:
        raise ProtocolError(
            f"column definition: expected at least {_COLUMN_FIXED.size} bytes of fixed fields, "
            f"found a length of {fixed_len}"
        )
    _need(payload, offset, _COLUMN_FIXED.size, "column definition fixed fields")
    charset, length, ctype, flags, decimals = _COLUMN_FIXED.unpack_from(payload, offset)
    catalog, schema, table, org_table, name, org_name = texts
    return ColumnDefinition(
        catalog, schema, table, org_table, name, org_name, charset, length, ctype, flags, decimals
    )


def parse_text_row(payload: Buffer, ncolumns: int) -> tuple[str | None, ...]:
    """Parse one text row of ``ncolumns`` values."""
    values: list[str | None] = []
    append = values.append
    raw = payload if isinstance(payload, bytes) else bytes(payload)
    offset = 0
    n = len(raw)
    for _ in range(ncolumns):
        if offset >= n:
            raise ProtocolError(f"text row: expected {ncolumns} values, found {len(values)}")
        first = raw[offset]
        if first < 0xFB:
            end = offset + 1 + first
            if end > n:
                raise ProtocolError(f"text row: value of {first} bytes at offset {offset} runs past the row")
            append(raw[offset + 1 : end].decode("utf-8", "surrogateescape"))
            offset = end
        elif first == NULL_MARKER:
            append(None)
            offset += 1
        else:
            value, offset = read_lenenc_bytes(raw, offset)
            append(_text(value))
    if offset != n:
        raise ProtocolError(f"text row: {n - offset} bytes left after {ncolumns} values")
    return tuple(values)


class ResultSetReader:
    """Feed the payloads that answer a COM_QUERY; ``feed`` returns True once the answer is complete.

    Then ``result`` is a ``ResultSet``, or an ``OkPacket`` for statements without rows. ERR packets
    raise the typed ``ServerError``.
    """

    __slots__ = ("_defs", "_deprecate_eof", "_end_limit", "_ncolumns", "_rows", "_state", "capabilities",
                 "result")

    def __init__(self, capabilities: int) -> None:
        self.capabilities = capabilities
        self._deprecate_eof = bool(capabilities & Capability.CLIENT_DEPRECATE_EOF)
        self._end_limit = 0xFFFFFF if self._deprecate_eof else 9
        self._state = "head"
        self._ncolumns = 0
        self._defs: list[ColumnDefinition] = []
        self._rows: list[tuple[str | None, ...]] = []
        self.result: ResultSet | OkPacket | None = None

    def feed(self, payload: bytes) -> bool:
        """Take the next payload of the answer; True when it completed ``result``."""
        if not payload:
            raise ProtocolError(f"expected a result set packet ({self._state}), found an empty packet")
        head = payload[0]
        if head == ERR_HEADER:
            self._state = "done"
            raise parse_err(payload).to_error()
        state = self._state
        if state == "rows":
            # A row may start with 0xFE too (an 8-byte length prefix); only a short packet ends the rows.
            if head == EOF_HEADER and len(payload) < self._end_limit:
                if self._deprecate_eof:
                    end = parse_ok(payload, self.capabilities)
                    status, warnings = end.status, end.warnings
                else:
                    eof = parse_eof(payload)
                    status, warnings = eof.status, eof.warnings
                self._finish(status, warnings)
                return True
            self._row(payload)
            return False
        if state == "head":
            if head == OK_HEADER:
                self.result = parse_ok(payload, self.capabilities)
                self._state = "done"
                return True
            if head == LOCAL_INFILE_HEADER:
                raise UnsupportedError(
                    "the server asked for LOAD DATA LOCAL INFILE, which sluice never sends"
                )
            self._ncolumns, _ = read_lenenc_int(payload, 0)
            if self._ncolumns == 0:
                raise ProtocolError("result set header: expected a column count above 0, found 0")
            self._state = "columns"
            return False
        if state == "columns":
            self._defs.append(parse_column_definition(payload))
            if len(self._defs) == self._ncolumns:
                self._state = "rows" if self._deprecate_eof else "columns_eof"
            return False
        if state == "columns_eof":
            parse_eof(payload)
            self._state = "rows"
            return False
        raise ProtocolError("the result set is already complete; no more packets were expected")

    def _row(self, payload: bytes) -> None:
        self._rows.append(parse_text_row(payload, self._ncolumns))

    @property
    def pending(self) -> int:
        """Rows fed since the last ``take_rows``."""
        return len(self._rows)

    def take_rows(self) -> list[tuple[str | None, ...]]:
        """The rows fed so far, handed over and forgotten: a caller streaming a large result set
        takes them in chunks, and the final ``result`` then holds only rows not taken."""
        rows, self._rows = self._rows, []
        return rows

    def _finish(self, status: int, warnings: int) -> None:
        self._state = "done"
        self.result = ResultSet(
            columns=tuple(d.name for d in self._defs),
            rows=self._rows,
            definitions=tuple(self._defs),
            status=status,
            warnings=warnings,
        )


_ROW_END = struct.Struct("<q")


@dataclass(frozen=True, slots=True)
class RawResultSet:
    """Column definitions and the undecoded text rows of one query, in blocks: each block holds
    rows' payloads back to back, with the offset where each ends (little-endian int64s), as
    ``Connection.read_rows`` takes them off the socket (``parse_text_row`` decodes one row; bulk
    readers split a block's rows all at once)."""

    columns: tuple[str, ...]
    blocks: list[tuple[bytes, bytes]]
    definitions: tuple[ColumnDefinition, ...] = field(default=(), repr=False, compare=False)
    status: int = 0
    warnings: int = 0

    @property
    def payloads(self) -> list[bytes]:
        """Every row's payload as bytes of its own (a row at a time: for tests and small answers)."""
        out = []
        for block, ends in self.blocks:
            start = 0
            for (stop,) in _ROW_END.iter_unpack(ends):
                out.append(block[start:stop])
                start = stop
        return out


#: What ``read_rows(eof_limit)`` gives ``RawResultSetReader.read_blocks``: rows in a block, or one
#: payload for the reader to look at.
RowsOrPayload = tuple[bytes, bytes] | bytes


class RawResultSetReader(ResultSetReader):
    """A ``ResultSetReader`` that keeps the text rows as they came, in blocks: ``result`` is a
    ``RawResultSet`` (or an ``OkPacket`` for statements without rows)."""

    __slots__ = ()

    def _row(self, payload: bytes) -> None:
        self._rows.append((payload, _ROW_END.pack(len(payload))))  # type: ignore[arg-type]

    def read_blocks(self, read_rows: Callable[[int], RowsOrPayload]) -> RawResultSet | OkPacket:
        """Read the answer with ``read_rows(eof_limit)`` (``Connection.read_rows``) until it is
        complete, and return it. While rows are due, ``read_rows`` hands over every row already
        received as one block (no object per row), stopping before a packet that may end them: a
        0xFE payload shorter than ``eof_limit``, an ERR, an empty or a 16 MiB one. Those, and the
        packets before the rows, come one payload at a time (``eof_limit`` -1) through ``feed``'s
        checks."""
        blocks = self._rows
        while True:
            got = read_rows(self._end_limit if self._state == "rows" else -1)
            if type(got) is tuple:
                if self._state != "rows":
                    raise ProtocolError("read_rows gave rows where the result set expects none")
                if got[0]:
                    blocks.append(got)  # type: ignore[arg-type]
                continue
            if self.feed(got):  # type: ignore[arg-type]
                return self.result  # type: ignore[return-value]

    def _finish(self, status: int, warnings: int) -> None:
        self._state = "done"
        self.result = RawResultSet(  # type: ignore[assignment]
            columns=tuple(d.name for d in self._defs),
            blocks=self._rows,  # type: ignore[arg-type]
            definitions=tuple(self._defs),
            status=status,
            warnings=warnings,
        )


__all__ = ["ColumnDefinition", "RawResultSet", "RawResultSetReader", "ResultSet", "ResultSetReader", "RowsOrPayload",
           "parse_column_definition", "parse_text_row"]
