"""The one error tree of sluice.

Every failure sluice reports is one of these types, and every message says what was expected,
what was found, where (file and offset, host, table) and what to do::

    SluiceError
    ├── ProtocolError              bytes that do not follow the protocol or the binlog format
    │   ├── TruncatedError         the bytes end before the structure does
    │   ├── MalformedEventError    a binlog event body that cannot be decoded
    │   │   └── CharsetDecodeError a character value that is not valid in its column's charset
    │   │                          (binlog.values.charsets)
    │   ├── ChecksumMismatchError  CRC32 of an event does not match
    │   └── UnsupportedError       a valid feature sluice does not handle (encryption, old servers)
    ├── ServerError                the server answered with ERR (errno, sqlstate)
    │   ├── AccessDeniedError      wrong user / password / missing privilege
    │   └── BinlogUnavailableError the requested binlog position is gone (purged) or never existed
    ├── TransportError             sockets, TLS, timeouts: always retried when following a server
    │   └── SourceMovedError       the address reached another server in the middle of a read
    ├── AuthError                  the authentication exchange itself failed on our side
    ├── SchemaError                the schema at an event's position is unknown or disagrees
    │   └── RouteConflictError     tables routed into one mirror disagree (key, a column's type)
    ├── ConfigError                bad DSN, option, path or missing installation
    │   └── GtidSyntaxError        a GTID set in text form that does not parse (binlog.gtid)
    ├── DataLossError              continuing would lose or duplicate data
    │   ├── LakeBusyError          another sluice writes the lake
    │   ├── SourceChangedError     another server at the address, and no GTIDs to go on by
    │   └── SourceBehindError      the server lacks transactions taken, or no longer has ones to read
    │       └── BinlogPurgedError  the stream's start was purged: names the first missing file or GTIDs
    ├── MaintenanceError           a maintenance step on a lake table failed (lake.maintenance)
    ├── StorageFullError           the lake's disk or quota is full (ENOSPC, EDQUOT): nothing committed
    └── SandboxError               a throwaway server could not start or stop (sandbox.process)

What is retried: following a server (``cdc.follow``) reconnects with backoff after a
``TransportError`` and after a ``ServerError`` whose errno says the server or the connection went
away (1053 shutdown, 1927 connection killed, 1317 query interrupted, 1184 aborted connection, 3169
session killed), resuming at the last transaction boundary. Every other error stops the run; the
pipeline re-raises an error of its Spark query as the sluice error it was, not a ``RuntimeError``.

Crossing a process: an error raised in a Spark worker reaches the driver as text only. ``carry``
writes a sluice error as one line (its type, message and fields as JSON after ``sluice-error``)
and ``carried`` builds the same error again from any text that holds such a line.
"""

from __future__ import annotations

import errno as _errno
import json
import re


class SluiceError(Exception):
    """Base of every error sluice raises on purpose."""


class ProtocolError(SluiceError):
    """The bytes on the wire or in a file do not follow the protocol."""


class TruncatedError(ProtocolError):
    """The buffer ends before the structure being decoded does (file and offset when known)."""

    def __init__(self, message: str, *, file: str | None = None, offset: int | None = None) -> None:
        self.file = file
        self.offset = offset
        super().__init__(message)


class MalformedEventError(ProtocolError):
    """A binlog event cannot be decoded.

    Carries the event header and, when known, the file and offset the event was read from.
    """

    def __init__(
        self,
        message: str,
        *,
        header: object | None = None,
        file: str | None = None,
        offset: int | None = None,
    ) -> None:
        self.header = header
        self.file = file
        self.offset = offset
        where = _where(file, offset)
        super().__init__(f"{message}{where}")


class ChecksumMismatchError(ProtocolError):
    """The CRC32 stored with an event does not match its bytes."""

    def __init__(
        self,
        message: str,
        *,
        event_type: object | None = None,
        file: str | None = None,
        offset: int | None = None,
    ) -> None:
        self.event_type = event_type
        self.file = file
        self.offset = offset
        super().__init__(f"{message}{_where(file, offset)}")


class UnsupportedError(ProtocolError):
    """A valid protocol or binlog feature that sluice does not handle."""


class ServerError(SluiceError):
    """The server answered a command with an ERR packet."""

    def __init__(self, errno: int, sqlstate: str, message: str, *, hint: str = "") -> None:
        self.errno = errno
        self.sqlstate = sqlstate
        self.server_message = message
        self.hint = hint
        text = f"server error {errno} ({sqlstate}): {message}"
        if hint:
            text += f" — {hint}"
        super().__init__(text)


class AccessDeniedError(ServerError):
    """Wrong user or password, or a privilege the command needs is missing."""


class BinlogUnavailableError(ServerError):
    """The binlog position asked for is not on the server any more (purged) or never existed."""


class TransportError(SluiceError):
    """The connection failed: refused, reset, timed out, TLS failure. Retryable."""


class SourceMovedError(TransportError):
    """The source's address reached another server in the middle of a read whose positions must all
    be one server's (a snapshot chunk and its watermarks): the read is done again, there. Retryable."""


class AuthError(SluiceError):
    """The authentication exchange could not be completed on the client side."""


class SchemaError(SluiceError):
    """The schema of a table at an event's position is unknown or disagrees with the binlog."""


class RouteConflictError(SchemaError):
    """Tables ``--route`` sends to one mirror cannot share it: their primary keys differ, or one
    defines a column with a type the mirror does not hold for the others (both are named)."""


class ConfigError(SluiceError):
    """A DSN, option or installation is wrong or missing; the message says what to change."""


class DataLossError(SluiceError):
    """Going on would lose or duplicate committed changes."""


class SourceChangedError(DataLossError):
    """The server at the source's address is not the one whose binlog file and offset sluice holds,
    and no GTID set says where to go on there."""


class LakeBusyError(DataLossError):
    """Another sluice writes the lake (or took it over): two writers would commit changes twice."""


class SourceBehindError(DataLossError):
    """The server lacks transactions a GTID position has taken, or its binlog no longer holds ones
    the stream has yet to read."""


class BinlogPurgedError(SourceBehindError):
    """The stream's start is no longer on the server: the binlog files from it on (``file``, the first
    one missing) or the transactions after it (``gtids``) were purged. The changes in between are
    gone, so the way on is a new snapshot of every captured table (``PURGED_REMEDY``)."""

    def __init__(self, message: str, *, file: str | None = None, gtids: str | None = None,
                 remedy: str = "") -> None:
        self.file = file
        self.gtids = gtids
        self.facts = message
        super().__init__(f"{message}. {remedy or PURGED_REMEDY}")

    def with_remedy(self, remedy: str) -> BinlogPurgedError:
        """The same facts, with the remedy of the command that met them."""
        return BinlogPurgedError(getattr(self, "facts", str(self)), file=self.file, gtids=self.gtids, remedy=remedy)


PURGED_REMEDY = ("The changes in between are gone: take a new snapshot of every captured table (sluice snapshot "
                 "--source DSN --lake LAKE --tables REGEX, then sluice run goes on from it, or sluice run "
                 "--snapshot when-needed, which does both), or start again from a position the server still has")


class MaintenanceError(SluiceError):
    """A compaction, checkpoint or VACUUM of a lake table failed; what its readers see is unchanged."""


class StorageFullError(SluiceError):
    """The lake's volume or quota is full: a write was refused, and nothing of the batch was committed."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


def _where(file: str | None, offset: int | None) -> str:
    if file is None and offset is None:
        return ""
    if file is None:
        return f" (at offset {offset})"
    if offset is None:
        return f" (in {file})"
    return f" (in {file} at offset {offset})"


# Server errnos that get their own type; see include/mysqld_error.h and the MariaDB equivalent.
ER_DBACCESS_DENIED_ERROR = 1044
ER_ACCESS_DENIED_ERROR = 1045
ER_SPECIFIC_ACCESS_DENIED_ERROR = 1227
ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236
ER_ACCESS_DENIED_NO_PASSWORD_ERROR = 1698
ER_UNKNOWN_TARGET_BINLOG = 1373

_ACCESS_ERRNOS = frozenset(
    {ER_DBACCESS_DENIED_ERROR, ER_ACCESS_DENIED_ERROR, ER_SPECIFIC_ACCESS_DENIED_ERROR,
     ER_ACCESS_DENIED_NO_PASSWORD_ERROR, 1142, 1143}
)

_BINLOG_HINT = (
    "the binlog position asked for is not on the server any more (purged by expire_logs / "
    "binlog_expire_logs_seconds, or never written). Start again from a position the server still has "
    "(see SHOW BINARY LOGS), or take a new snapshot of the tables and stream from there"
)


# ER_MASTER_FATAL_ERROR_READING_BINLOG is the dump thread's one errno for every failure; its message
# says which (sql/sql_repl.cc, MySQL sql/rpl_binlog_sender.cc). Only these mean the start is gone.
_GONE_MESSAGES = ("could not find first log file name", "purged", "could not find gtid state",
                  "not in the master's binlog", "not in the source's binlog", "position > file size",
                  "could not find target log", "could not open log file", "file not found")
_NOT_AN_EVENT_HINT = (
    "the server could not read an event at the position asked for: it is probably not the start of "
    "an event in that file (a position sluice did not write, or one counted wrongly). Start from a "
    "transaction boundary: a checkpoint of sluice, a file's offset 4, or a GTID"
)


def server_error(errno: int, sqlstate: str, message: str) -> ServerError:
    """Map an ERR packet to the most specific error type."""
    if errno in _ACCESS_ERRNOS:
        return AccessDeniedError(
            errno, sqlstate, message,
            hint="check the user, the password and that the user holds REPLICATION SLAVE, "
                 "REPLICATION CLIENT and SELECT",
        )
    if errno == ER_UNKNOWN_TARGET_BINLOG or (
            errno == ER_MASTER_FATAL_ERROR_READING_BINLOG
            and any(words in message.lower() for words in _GONE_MESSAGES)):
        return BinlogUnavailableError(errno, sqlstate, message, hint=_BINLOG_HINT)
    if errno == ER_MASTER_FATAL_ERROR_READING_BINLOG and "bogus data" in message.lower():
        return ServerError(errno, sqlstate, message, hint=_NOT_AN_EVENT_HINT)
    return ServerError(errno, sqlstate, message)


_CARRY_MARK = "sluice-error "
_FIELDS = ("errno", "sqlstate", "server_message", "hint", "file", "offset", "path", "gtids", "facts")
_FULL_ERRNOS = (_errno.ENOSPC, _errno.EDQUOT)
# How a full volume reads in the text of an error from Rust (delta-rs, object_store), Java or Python.
_FULL_TEXT = re.compile(r"no space left on device|disk quota exceeded|os error (?:28|122)\b", re.IGNORECASE)


def carry(exc: SluiceError) -> str:
    """``exc`` as one line of text that ``carried`` reads back (the module docstring)."""
    fields = {k: getattr(exc, k) for k in _FIELDS
              if isinstance(getattr(exc, k, None), (str, int))}
    return _CARRY_MARK + json.dumps({"type": type(exc).__name__, "message": str(exc), **fields})


def carried(text: str) -> SluiceError | None:
    """The sluice error that ``carry`` wrote somewhere in ``text``, or None when there is none."""
    at = text.find(_CARRY_MARK + "{")
    while at >= 0:
        try:
            doc, _ = json.JSONDecoder().raw_decode(text, at + len(_CARRY_MARK))
        except ValueError:
            doc = None
        kind = globals().get(doc.get("type", "")) if isinstance(doc, dict) else None
        if isinstance(kind, type) and issubclass(kind, SluiceError) and isinstance(doc, dict):
            error = kind.__new__(kind)
            Exception.__init__(error, str(doc.get("message", "")))
            for key in _FIELDS:
                if key in doc:
                    setattr(error, key, doc[key])
            return error
        at = text.find(_CARRY_MARK + "{", at + 1)
    return None


def storage_full(exc: BaseException, where: str) -> StorageFullError | None:
    """A ``StorageFullError`` when ``exc`` (an ``OSError``, or any error whose text says so, as
    delta-rs's and Spark's do) says the volume or quota under ``where`` is full; None otherwise."""
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        path = str(exc.filename) if exc.filename else where
        reason = exc.strerror or "no space left on device"
    elif not isinstance(exc, SluiceError) and _FULL_TEXT.search(str(exc)):
        path, reason = where, _FULL_TEXT.search(str(exc)).group(0)  # type: ignore[union-attr]
    else:
        return None
    return StorageFullError(
        f"the lake's disk is full ({reason}) writing {path}: nothing was lost, the batch in flight was "
        "not committed and the next run goes on exactly from the lake's last commit. Free space on that "
        "volume (or grow it, or raise its quota) and run again", path=path)
