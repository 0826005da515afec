"""Reading binlog files: a streaming shell around the sans-I/O ``EventParser``.

``iter_events(source, parser)`` checks the 4-byte magic ``\\xfebin`` and yields
``(offset, event)`` for every event, reading fixed-size blocks so memory stays bounded by the
largest single event, never by the file size. ``source`` is a path, ``"-"`` for standard input,
or any binary stream with ``read``. ``BinlogFile`` is the same as an iterable object that can
also start at a later event offset (the file's FORMAT_DESCRIPTION_EVENT is read first, as a
replica would). A file that is not a binlog, ends inside an event or fails its checksum raises
the typed error naming the file and the offset.
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Iterator
from typing import BinaryIO

from sluice.binlog.events import Event
from sluice.binlog.header import HEADER_LEN
from sluice.binlog.parser import EventParser
from sluice.errors import ConfigError, MalformedEventError, TruncatedError

__all__ = ["BINLOG_MAGIC", "BinlogFile", "iter_events", "iter_raw_events", "iter_raw_segment"]

BINLOG_MAGIC = b"\xfebin"
BLOCK_SIZE = 1 << 18
_SIZE_OFFSET = 9  # event size inside the common header
_U32 = struct.Struct("<I").unpack_from

Source = str | os.PathLike[str] | BinaryIO


def _open(source: Source) -> tuple[BinaryIO, str, bool]:
    if isinstance(source, str | os.PathLike):
        if os.fspath(source) == "-":
            return sys.stdin.buffer, "<stdin>", False
        path = os.fspath(source)
        try:
            return open(path, "rb"), path, True
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such file; give the path of a binlog file") from None
        except IsADirectoryError:
            raise ConfigError(f"{path} is a directory; give binlog files (e.g. {path}/binlog.0*)") from None
        except PermissionError:
            raise ConfigError(f"{path}: permission denied; sluice needs to read the file") from None
        except OSError as exc:
            raise ConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return source, getattr(source, "name", None) or "<stream>", False


def _check_magic(stream: BinaryIO, name: str) -> None:
    magic = stream.read(4)
    if magic != BINLOG_MAGIC:
        raise MalformedEventError(
            f"not a binlog file: expected the magic bytes fe 62 69 6e, found {magic.hex(' ') or 'nothing'}",
            file=name, offset=0,
        )


def _truncated(name: str, offset: int, detail: str) -> TruncatedError:
    return TruncatedError(
        f"binlog {name} ends inside the event at offset {offset} ({detail}); the file was cut "
        "short or is still being written",
        file=name,
        offset=offset,
    )


def _raw_events(stream: BinaryIO, name: str, offset: int) -> Iterator[tuple[int, bytes]]:
    buf = b""
    pos = 0  # start of the next event inside buf
    eof = False
    read = stream.read
    size_at = _U32
    while True:
        n = len(buf)
        # Every whole event in the buffer, sliced straight out of it (one copy per event).
        while n - pos >= HEADER_LEN:
            (size,) = size_at(buf, pos + _SIZE_OFFSET)
            if size < HEADER_LEN:
                raise MalformedEventError(
                    f"event header declares {size} bytes, less than the header itself",
                    file=name, offset=offset,
                )
            end = pos + size
            if end > n:
                break
            yield offset, buf[pos:end]
            pos = end
            offset += size
        avail = n - pos
        need = size - avail if avail >= HEADER_LEN else HEADER_LEN - avail  # size: the event cut off above
        if eof:
            if avail == 0:
                return
            raise _truncated(name, offset, f"{avail} bytes present, at least {avail + need} needed")
        chunk = read(max(BLOCK_SIZE, need))
        if not chunk:
            eof = True
        else:
            buf = buf[pos:] + chunk if pos < n else chunk
            pos = 0


def _events(stream: BinaryIO, name: str, parser: EventParser, offset: int) -> Iterator[tuple[int, Event]]:
    parse = parser.parse
    for at, data in _raw_events(stream, name, offset):
        yield at, parse(data, file=name, offset=at)


def iter_raw_events(source: Source) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, event bytes)`` for every event of a binlog file, stream or ``"-"``, undecoded."""
    stream, name, owned = _open(source)
    try:
        _check_magic(stream, name)
        yield from _raw_events(stream, name, 4)
    finally:
        if owned:
            stream.close()


def iter_raw_segment(source: Source, start: int = 4, end: int | None = None) -> Iterator[tuple[int, bytes]]:
    """``(offset, event bytes)`` of the file's FORMAT_DESCRIPTION_EVENT, then of its events in
    ``[start, end)``: a segment a reader can decode on its own, as a replica starting at ``start``
    reads the FDE first. ``start`` must be an event boundary; ``end`` None reads to the end."""
    stream, name, owned = _open(source)
    try:
        _check_magic(stream, name)
        events = _raw_events(stream, name, 4)
        if start > 4:
            first = next(events, None)
            if first is not None:
                yield first
            stream.seek(start)
            events = _raw_events(stream, name, start)
        for offset, data in events:
            if end is not None and offset >= end:
                return
            yield offset, data
    finally:
        if owned:
            stream.close()


def iter_events(source: Source, parser: EventParser | None = None) -> Iterator[tuple[int, Event]]:
    """Yield ``(offset, event)`` for every event of a binlog file, stream or ``"-"`` (stdin)."""
    stream, name, owned = _open(source)
    try:
        _check_magic(stream, name)
        yield from _events(stream, name, parser or EventParser(), 4)
    finally:
        if owned:
            stream.close()


class BinlogFile:
    """A binlog file as an iterable of ``(offset, event)``, optionally from ``start`` on."""

    def __init__(self, path: Source, parser: EventParser | None = None, *, start: int = 4) -> None:
        self.path = path
        self.parser = parser or EventParser()
        self.start = start

    def __iter__(self) -> Iterator[tuple[int, Event]]:
        if self.start <= 4:
            yield from iter_events(self.path, self.parser)
            return
        stream, name, owned = _open(self.path)
        try:
            _check_magic(stream, name)
            events = _events(stream, name, self.parser, 4)
            next(events, None)  # the FORMAT_DESCRIPTION_EVENT sets checksum and post-header lengths
            del events
            stream.seek(self.start)
            yield from _events(stream, name, self.parser, self.start)
        finally:
            if owned:
                stream.close()
