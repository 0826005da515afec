"""Following a live server: replication connections, reconnect with backoff, resume at a boundary.

``follow(config, capture)`` opens a ``ReplicationStream`` at the capture's last transaction
boundary, feeds every event to the ``ChangeCapture`` (the stream's blocks of ordinary events as a
file's blocks are fed) and yields committed transactions. When the
connection breaks (a transport error, or the server shutting down or killing the replica thread)
the partial transaction is dropped and a new connection resumes from the boundary after the last
committed transaction, after a delay that doubles from ``backoff_initial`` up to ``backoff_max``.
Each connection starts at the boundary's file and offset on the server they were read on, and at
its GTID set on another server (a failover: ``sluice.io.replication``), which is logged once as
``source changed: server A → B, resuming at GTID set G``; every boundary then names the new server.
Every retry is logged with its reason; after ``retries`` failures in a row (None = never give up)
the last error is raised. ``retrying`` applies the same policy to one piece of work on an SQL
connection of its own (the planner's reads of positions and schema).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from sluice.cdc.capture import ChangeCapture, CommittedTransaction
from sluice.dsn import ConnectionConfig
from sluice.errors import ServerError, TransportError
from sluice.io.replication import RawBlock, ReplicationStream, StreamConfig

__all__ = ["FollowConfig", "follow", "retryable", "retrying"]

T = TypeVar("T")

log = logging.getLogger(__name__)

# ER_SERVER_SHUTDOWN, ER_CONNECTION_KILLED (MariaDB), ER_QUERY_INTERRUPTED, ER_NEW_ABORTING_CONNECTION,
# ER_MASTER_FATAL_ERROR_READING_BINLOG is *not* here: it means the position is gone (BinlogUnavailableError).
_RETRYABLE_ERRNOS = frozenset({1053, 1927, 1317, 1184, 3169})


@dataclass(frozen=True, slots=True)
class FollowConfig:
    """How to connect and how hard to try again."""

    connection: ConnectionConfig
    until_end: bool = False
    heartbeat_period: float = 5.0
    server_id: int = 0
    retries: int | None = None  # failures in a row before giving up; None = keep trying
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    # Log "source changed" when a connection finds another server; False where the caller reports
    # it itself (sluice run says it once, when the lake commits the first batch read there).
    say_moved: bool = True


def retryable(exc: BaseException) -> bool:
    """Errors after which a new connection may well succeed."""
    if isinstance(exc, TransportError):
        return True
    return isinstance(exc, ServerError) and exc.errno in _RETRYABLE_ERRNOS


def _backoff(config: FollowConfig, failures: int) -> float:
    return min(config.backoff_max, config.backoff_initial * 2 ** (failures - 1))


def retrying(config: FollowConfig, what: str, work: Callable[[], T], *,
             sleep: Callable[[float], None] = time.sleep) -> T:
    """``work()`` (which opens its own connection), done again after a delay that doubles while it
    fails with a ``retryable`` error, up to ``config.retries`` times; ``what`` names it in the log."""
    failures = 0
    while True:
        try:
            return work()
        except (TransportError, ServerError) as exc:
            if not retryable(exc):
                raise
            failures += 1
            if config.retries is not None and failures > config.retries:
                log.error("giving up %s after %d failed attempts in a row: %s", what, failures, exc)
                raise
            delay = _backoff(config, failures)
            log.warning("connection lost %s (%s); trying again in %.1fs (attempt %d%s)", what, exc, delay,
                        failures, "" if config.retries is None else f" of {config.retries}")
            sleep(delay)


def follow(
    config: FollowConfig,
    capture: ChangeCapture,
    *,
    sleep: Callable[[float], None] = time.sleep,
    on_connect: Callable[[ReplicationStream], None] | None = None,
    on_retry: Callable[[BaseException], None] | None = None,
) -> Iterator[CommittedTransaction]:
    """Committed transactions from the server, from ``capture.boundary`` on, across reconnects;
    ``on_retry`` hears of each error that a reconnect follows."""
    failures = 0
    while True:
        start = capture.boundary
        stream_config = StreamConfig(
            connection=config.connection,
            file=start.file or None,
            pos=start.pos if start.file else 4,
            gtid=start.gtid_set,
            source=start.source,
            until_end=config.until_end,
            heartbeat_period=config.heartbeat_period,
            server_id=config.server_id,
        )
        try:
            with ReplicationStream(stream_config) as stream:
                fresh = True
                feed, feed_block = capture.feed, capture.feed_block
                for chunk in stream.chunks():
                    if fresh:
                        capture.restart(stream.checksum_algorithm)
                        capture.assembler.read_on(stream.source, moved=stream.moved_from is not None)
                        if stream.moved_from is not None and config.say_moved:
                            log.warning("source changed: server %s → %s, resuming at GTID set %s",
                                        stream.moved_from, stream.source, start.gtid_set)
                        fresh = False
                        if on_connect is not None:
                            on_connect(stream)
                        if failures:
                            log.warning("reconnected; resuming at %s", start)
                    if type(chunk) is RawBlock:
                        # One transaction at a time: a consumer that stops leaves the capture there.
                        for committed in feed_block(chunk.file, chunk.pos, chunk.data):
                            failures = 0
                            yield committed
                        continue
                    single = feed(chunk.file, chunk.pos, stream.next_pos, chunk.data)
                    if single is not None:
                        failures = 0
                        yield single
            if config.until_end:
                capture.cut_off()
                return
            # Without BINLOG_DUMP_NON_BLOCK the server ends a dump only when it goes away (shutdown).
            raise TransportError(f"the server ended the binlog dump at {stream.file}:{stream.next_pos}")
        except (TransportError, ServerError) as exc:
            if not retryable(exc):
                raise
            failures += 1
            if config.retries is not None and failures > config.retries:
                log.error("giving up after %d failed attempts in a row: %s", failures, exc)
                raise
            delay = _backoff(config, failures)
            log.warning(
                "replication connection lost (%s); reconnecting in %.1fs from %s (attempt %d%s)",
                exc,
                delay,
                capture.boundary,
                failures,
                "" if config.retries is None else f" of {config.retries}",
            )
            if on_retry is not None:
                on_retry(exc)
            sleep(delay)
