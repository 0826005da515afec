"""The event parser: one whole event (header, body, checksum) in, one typed event out.

``EventParser`` keeps the state a replica keeps while reading: the current
FORMAT_DESCRIPTION_EVENT (post-header lengths, server flavour, checksum algorithm) and the
table maps of the current transaction (table id -> TABLE_MAP, a one-entry fast path for the
common single-table case, cleared at GTID / BEGIN / COMMIT / XID / ROTATE). Before the first
FDE of a stream the checksum algorithm is not known yet: the fake ROTATE a server sends first
(``log_pos`` 0) carries a CRC32 when the replica announced ``@master_binlog_checksum`` (MySQL
``Binlog_sender::fake_rotate_event``, MariaDB alike), so unless ``ParserConfig.initial_checksum``
says otherwise such events are checked for a valid trailing CRC32 and stripped when it matches.
Tables rejected by ``ParserConfig.table_filter`` are dropped at their TABLE_MAP; their rows
events become ``SkippedRowsEvent`` without any row decoding, counted in
``skipped_rows_events``.
"""

from __future__ import annotations

import importlib
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import zstandard

from sluice.binlog.checksum import CHECKSUM_LEN, crc32_matches, verify_crc32
from sluice.binlog.constants import ChecksumAlgorithm, EventType
from sluice.binlog.decoders.context import TableEntry
from sluice.binlog.decoders.control import check_supported, server_version_of
from sluice.binlog.decoders.registry import DECODERS
from sluice.binlog.decoders.table_map import decode_table_map_fields
from sluice.binlog.events import Event, FormatDescriptionEvent, TableMapEvent, UnknownEvent
from sluice.binlog.header import (
    HEADER,
    HEADER_LEN,
    LOG_EVENT_BINLOG_IN_USE_F,
    EventHeader,
    build_header,
    frozen_builder,
)
from sluice.binlog.statements import is_boundary_query
from sluice.errors import MalformedEventError, SluiceError, TruncatedError

__all__ = ["EventParser", "ParserConfig"]

_HDR = HEADER.unpack_from
_build_header = build_header
_build_table_map = frozen_builder(TableMapEvent)
_U32 = struct.Struct("<I").unpack_from
_crc32 = zlib.crc32
_FDE = int(EventType.FORMAT_DESCRIPTION_EVENT)
_QUERY = int(EventType.QUERY_EVENT)
_AUTODETECT = frozenset({int(EventType.HEARTBEAT_LOG_EVENT), int(EventType.HEARTBEAT_LOG_EVENT_V2)})
_BOUNDARY = frozenset(int(t) for t in (
    EventType.XID_EVENT, EventType.GTID_LOG_EVENT, EventType.ANONYMOUS_GTID_LOG_EVENT,
    EventType.GTID_TAGGED_LOG_EVENT, EventType.GTID_EVENT, EventType.XA_PREPARE_LOG_EVENT,
    EventType.ROTATE_EVENT, EventType.STOP_EVENT,
))
_DECODE_ERRORS = (ValueError, IndexError, KeyError, OverflowError, struct.error, zlib.error,
                  zstandard.ZstdError)
_TM_CACHE_MAX = 4096
_FLAGS_OFFSET = 17


@dataclass(frozen=True, slots=True)
class ParserConfig:
    """``verify_checksum``: check CRC32 of every event (on by default). ``table_filter``:
    ``(schema, table) -> captured?``; rows of other tables are never decoded.
    ``initial_checksum``: the algorithm of events that arrive before the first
    FORMAT_DESCRIPTION_EVENT; None detects it per event. ``plan_for``: the row-plan factory
    (default ``sluice.binlog.rowplan.plan_for``)."""

    verify_checksum: bool = True
    table_filter: Callable[[str, str], bool] | None = None
    initial_checksum: ChecksumAlgorithm | None = None
    plan_for: Callable[..., Any] | None = None


class _TableEntry:
    __slots__ = ("plan", "table_map")

    def __init__(self, table_map: TableMapEvent, plan: Any) -> None:
        self.table_map = table_map
        self.plan = plan  # None: not compiled yet; False: table filtered out


class EventParser:
    """Stateful, sans-I/O binlog event parser. Feed it events in binlog order."""

    def __init__(self, config: ParserConfig | None = None) -> None:
        self.config = config or ParserConfig()
        self._verify = self.config.verify_checksum
        self._plan_for = self.config.plan_for
        self._tm_cache: dict[bytes, tuple[Any, ...]] = {}
        self._filter_cache: dict[tuple[str, str], bool] = {}
        self.skipped_rows_events = 0
        self.skipped_table_maps = 0
        self.reset()

    def reset(self) -> None:
        """Forget the stream state (FDE, checksum algorithm, table maps), e.g. after a reconnect."""
        self.fde: FormatDescriptionEvent | None = None
        self.checksum_alg: int | None = (
            None if self.config.initial_checksum is None else int(self.config.initial_checksum)
        )
        self._phl = b""
        self._maps: dict[int, _TableEntry] = {}
        self._last_tid = -1
        self._last_entry: _TableEntry | None = None
        self._file: str | None = None
        self._offset = 0

    # -- entry points ------------------------------------------------------------------------
    def parse(self, data: bytes | memoryview, *, file: str | None = None, offset: int = 0) -> Event:
        """Decode one whole event: 19-byte header, body and (when enabled) the 4-byte CRC32."""
        self._file = file
        self._offset = offset
        return self._parse(data, False)

    def parse_inner(self, data: bytes | memoryview) -> Event:
        """Decode an event embedded in another one (TRANSACTION_PAYLOAD); checksum detected."""
        return self._parse(data, True)

    def _parse(self, data: bytes | memoryview, inner: bool) -> Event:
        n = len(data)
        try:
            header = _build_header(*_HDR(data, 0))
        except struct.error as e:
            raise MalformedEventError(
                f"event of {n} bytes is shorter than the 19-byte common header",
                file=self._file, offset=self._offset,
            ) from e
        tc = header.type_code
        if header.event_size != n:
            raise MalformedEventError(
                f"event header declares {header.event_size} bytes but {n} were given (truncated or misframed "
                "event)",
                header=header, file=self._file, offset=self._offset,
            )
        if tc == _FDE:
            return self._parse_fde(header, data if isinstance(data, memoryview) else memoryview(data))
        alg = self.checksum_alg
        if alg is None or inner or tc in _AUTODETECT:
            has_crc = n >= HEADER_LEN + CHECKSUM_LEN and crc32_matches(data)
        elif alg:
            if n < HEADER_LEN + CHECKSUM_LEN:
                raise MalformedEventError(
                    f"event of {n} bytes cannot hold a header and a CRC32",
                    header=header, file=self._file, offset=self._offset,
                )
            if self._verify and _crc32(data[: n - CHECKSUM_LEN]) != _U32(data, n - CHECKSUM_LEN)[0]:
                verify_crc32(data, tc, file=self._file, offset=self._offset)  # raises, saying why
            has_crc = True
        else:
            has_crc = False
        # A bytes event gets a bytes body (one copy, which the row decoders would make anyway);
        # a memoryview stays a view.
        body = data[HEADER_LEN : n - CHECKSUM_LEN] if has_crc else data[HEADER_LEN:]
        dec = DECODERS.get(tc)
        if dec is None:
            return UnknownEvent(header, bytes(body))
        try:
            event = dec(header, body, self)
        except Exception as e:
            err = self._error(e, header, len(body))
            if err is e:
                raise
            raise err from e
        if tc in _BOUNDARY or (tc == _QUERY and is_boundary_query(event.query)):
            self._end_transaction()
        return event

    def _run(self, dec: Callable[..., Any], header: EventHeader, body: bytes | memoryview) -> Any:
        try:
            return dec(header, body, self)
        except Exception as e:
            err = self._error(e, header, len(body))
            if err is e:
                raise
            raise err from e

    def _error(self, e: Exception, header: EventHeader, size: int) -> Exception:
        """The error to raise for ``e`` from a decoder: ``e`` itself, or ``MalformedEventError``
        with the event's header, file and offset."""
        if isinstance(e, MalformedEventError):
            if e.header is None:
                return MalformedEventError(str(e), header=header, file=self._file, offset=self._offset)
            return e
        if isinstance(e, SluiceError):
            if isinstance(e, TruncatedError):
                return MalformedEventError(
                    f"{_name(header.type_code)}: {e}", header=header, file=self._file, offset=self._offset
                )
            return e
        if isinstance(e, _DECODE_ERRORS):
            return MalformedEventError(
                f"cannot decode {_name(header.type_code)} ({size}-byte body): {e}",
                header=header, file=self._file, offset=self._offset,
            )
        return e

    def _parse_fde(self, header: EventHeader, mv: memoryview) -> FormatDescriptionEvent:
        n = len(mv)
        try:
            text, is_mariadb, version = server_version_of(mv[HEADER_LEN:])
        except ValueError as e:
            raise MalformedEventError(str(e), header=header, file=self._file, offset=self._offset) from e
        check_supported(text, is_mariadb, version)
        if n < HEADER_LEN + 58 + CHECKSUM_LEN:
            raise MalformedEventError(
                f"FORMAT_DESCRIPTION_EVENT of {n} bytes is too short", header=header,
                file=self._file, offset=self._offset,
            )
        alg = mv[n - CHECKSUM_LEN - 1]
        if alg == ChecksumAlgorithm.CRC32:
            if self._verify:
                # The FDE is checksummed with LOG_EVENT_BINLOG_IN_USE_F clear: the server sets
                # the flag in a file it is writing and clears it on close without re-summing
                # (Log_event_footer::event_checksum_test in libbinlogevents).
                checked: bytes | bytearray | memoryview = mv
                if header.flags & LOG_EVENT_BINLOG_IN_USE_F:
                    checked = bytearray(mv)
                    checked[_FLAGS_OFFSET] &= ~LOG_EVENT_BINLOG_IN_USE_F & 0xFF
                verify_crc32(checked, header.type_code, file=self._file, offset=self._offset)
        elif alg != ChecksumAlgorithm.OFF:
            raise MalformedEventError(
                f"FORMAT_DESCRIPTION_EVENT names unknown checksum algorithm {alg}",
                header=header, file=self._file, offset=self._offset,
            )
        fde: FormatDescriptionEvent = self._run(DECODERS[_FDE], header, mv[HEADER_LEN : n - CHECKSUM_LEN])
        self.fde = fde
        self.checksum_alg = fde.checksum_alg
        self._phl = fde.post_header_lengths
        self._end_transaction()
        return fde

    # -- services for decoders (decoders.context.DecodeContext) --------------------------------
    def post_header_len(self, type_code: int, default: int) -> int:
        """The post-header length the FORMAT_DESCRIPTION gives this event type, or ``default``."""
        i = type_code - 1
        phl = self._phl
        if 0 <= i < len(phl) and phl[i]:
            return phl[i]
        return default

    def on_table_map(self, header: EventHeader, body: bytes | memoryview) -> TableMapEvent:
        """Decode a TABLE_MAP body (cached by its bytes), apply the table filter, make it current."""
        key = bytes(body)
        fields = self._tm_cache.get(key)
        if fields is None:
            fields = decode_table_map_fields(body, self)
            if len(self._tm_cache) >= _TM_CACHE_MAX:
                self._tm_cache.clear()
            self._tm_cache[key] = fields
        tm = _build_table_map(header, *fields)
        plan: Any = None
        filt = self.config.table_filter
        if filt is not None:
            name = (tm.schema, tm.table)
            captured = self._filter_cache.get(name)
            if captured is None:
                captured = self._filter_cache[name] = bool(filt(tm.schema, tm.table))
            if not captured:
                plan = False
                self.skipped_table_maps += 1
        entry = _TableEntry(tm, plan)
        self._maps[tm.table_id] = entry
        self._last_tid = tm.table_id
        self._last_entry = entry
        return tm

    def table_entry(self, table_id: int, header: EventHeader) -> _TableEntry:
        """The current TABLE_MAP of ``table_id``; ``MalformedEventError`` when there is none."""
        if table_id == self._last_tid and self._last_entry is not None:
            return self._last_entry
        entry = self._maps.get(table_id)
        if entry is None:
            raise MalformedEventError(
                f"{_name(header.type_code)} for table id {table_id} without a TABLE_MAP earlier in "
                "its transaction; start reading at a transaction boundary (GTID or BEGIN event)",
                header=header, file=self._file, offset=self._offset,
            )
        self._last_tid = table_id
        self._last_entry = entry
        return entry

    def skip_rows(self) -> None:
        """Count a rows event of a table that is not captured."""
        self.skipped_rows_events += 1

    def plan_of(self, entry: TableEntry) -> Any:
        """Build the row plan of a TABLE_MAP entry and keep it on the entry."""
        pf = self._plan_for
        if pf is None:
            pf = self._plan_for = importlib.import_module("sluice.binlog.rowplan").plan_for
        entry.plan = plan = pf(entry.table_map)
        return plan

    def _end_transaction(self) -> None:
        if self._maps:
            self._maps.clear()
        self._last_tid = -1
        self._last_entry = None

    @property
    def table_maps(self) -> dict[int, TableMapEvent]:
        """The table maps of the current transaction (captured and filtered ones)."""
        return {tid: e.table_map for tid, e in self._maps.items()}


def _name(type_code: int) -> str:
    try:
        return EventType(type_code).name
    except ValueError:
        return f"event type {type_code}"
