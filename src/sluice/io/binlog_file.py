"""Reading binlog files: a streaming shell around the sans-I/O ``EventParser``.

``iter_events(source, parser)`` checks the 4-byte magic ``\\xfebin`` and yields
``(offset, event)`` for every event, reading fixed-size blocks so memory stays bounded by the
largest single event, never by the file size. ``source`` is a path, ``"-"`` for standard input,
or any binary stream with ``read``. ``iter_raw_spans`` yields the undecoded events in blocks of
whole events, each with where its whole events end, for a reader that takes many at once
(``ChangeCapture.feed_file``).
``BinlogFile`` is the same as an iterable object that can also start at a later event offset (the
file's FORMAT_DESCRIPTION_EVENT is read first, as a replica would). A file that is not a binlog,
ends inside an event or fails its checksum raises the typed error naming the file and the offset.
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Iterator
from typing import BinaryIO

from sluice.binlog.events import Event
from sluice.binlog.framing import whole_events
from sluice.binlog.header import HEADER_LEN
from sluice.binlog.parser import EventParser
from sluice.errors import ConfigError, MalformedEventError, TruncatedError

__all__ = ["BINLOG_MAGIC", "BinlogFile", "iter_events", "iter_raw_spans"]

BINLOG_MAGIC = b"\xfebin"
BLOCK_SIZE = 1 << 20
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
    while 0 < len(magic) < 4:  # a pipe may give less than asked
        more = stream.read(4 - len(magic))
        if not more:
            break
        magic += more
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


def _raw_spans(stream: BinaryIO, name: str, offset: int, stop: int | None = None) -> Iterator[tuple[int, bytes, int]]:
    """``(offset, buf, end)``: the stream's bytes from ``offset`` on, whole events in ``buf[:end]``,
    up to the first event that starts at or after ``stop`` (an event boundary; None: the end).

    Each read's bytes are handed on as they are, with the end of their last whole event: cutting a
    large ``bytes`` or joining one to the next read costs a fresh allocation and a copy of it, which
    for megabyte blocks took several times as long as the read. An event cut by a read's end is
    completed by itself (its remaining bytes only) and handed on alone."""
    read = stream.read
    carry = b""  # the start of an event cut by the last read's end
    while True:
        if carry:
            have = len(carry)
            known = have >= HEADER_LEN
            want = _U32(carry, _SIZE_OFFSET)[0] if known else HEADER_LEN
            if want > have:
                piece = read(want - have)
                if not piece:
                    raise _truncated(name, offset, f"{have} bytes present, at least {want} needed")
                carry += piece
                if not known or len(carry) < want:
                    continue  # only the header so far, or a pipe gave less than asked
            buf = carry
        else:
            buf = read(BLOCK_SIZE)
            if not buf:
                return
        limit = len(buf) if stop is None else stop - offset
        end, bad = whole_events(buf, 0, limit)
        if end:
            yield offset, buf, end
            offset += end
        if bad >= 0:
            raise MalformedEventError(
                f"event header declares {_U32(buf, bad + _SIZE_OFFSET)[0]} bytes, less than the header itself",
                file=name, offset=offset,
            )
        if stop is not None and offset >= stop:
            return
        carry = buf[end:] if end < len(buf) else b""


def _raw_events(stream: BinaryIO, name: str, offset: int) -> Iterator[tuple[int, bytes]]:
    size_at = _U32
    for at, block, n in _raw_spans(stream, name, offset):
        pos = 0
        while pos < n:
            (size,) = size_at(block, pos + _SIZE_OFFSET)
            yield at + pos, block[pos : pos + size]
            pos += size


def _events(stream: BinaryIO, name: str, parser: EventParser, offset: int) -> Iterator[tuple[int, Event]]:
    parse = parser.parse
    for at, data in _raw_events(stream, name, offset):
        yield at, parse(data, file=name, offset=at)


def iter_raw_spans(source: Source, start: int = 4, end: int | None = None) -> Iterator[tuple[int, bytes, int]]:
    """``(offset, buf, stop)``: a binlog file's events in blocks of whole events, undecoded, each
    block uncut: its whole events are ``buf[:stop]`` (the rest of ``buf`` is the start of the next
    one, handed on again). From ``start`` on (an event boundary after 4), the first block is the
    file's FORMAT_DESCRIPTION_EVENT alone, as a replica starting there reads it first; ``end``
    None reads to the end, else the events that start before ``end``."""
    stream, name, owned = _open(source)
    try:
        _check_magic(stream, name)
        if start > 4:
            first = next(_raw_events(stream, name, 4), None)
            if first is not None:
                yield first[0], first[1], len(first[1])
            stream.seek(start)
        yield from _raw_spans(stream, name, max(start, 4), end)
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
