"""The pipeline's hold on its lake: the writer lease it keeps while it runs (``BatchFence.take``,
``sluice.lake.lease``), and the fence of every batch's commit: a batch commits only where the
lake's last batch ended.

A writer that lost the lake (it paused past its lease while another took over) may wake up in the
middle of a batch. Before the batch's first commit, ``BatchFence.check`` asks the lease whether a
successor took the lake (``sluice.lake.lease``) and compares the batch with the change log: the
batch's first change must not lie before the end of the lake's last committed batch (the position
its change-log commit records, ``committed_position``). The change log's commit then lands on the
version the check read, or fails (``DeltaLake.write_batch``'s ``fence``). So a change is in the
change log once whatever the scheduler did; every failure is a ``LakeBusyError``. The position the
check read is kept (``BatchFence.before``): where the batch goes on from, which tells the pipeline
that a batch was read on another server than the lake's last (a failover).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice.binlog.position import Checkpoint, SourceIdentity, position_key
from sluice.errors import LakeBusyError
from sluice.lake.changelog.schema import committed_position
from sluice.lake.layout import Lake
from sluice.lake.lease import LeaseKeeper, WriterLease

__all__ = ["BatchFence"]


class BatchFence:
    """Checks each batch of one writer before its first commit (module docstring)."""

    def __init__(self, lease: WriterLease | None = None) -> None:
        self.lease = lease
        self._keeper: LeaseKeeper | None = None
        # (the change log's version after this writer's last commit, the position it recorded)
        self._mine: tuple[int, Checkpoint | None] | None = None
        self._read: int = -1  # the change log's version the last check read
        # The lake's last committed position when the last check ran: where the batch goes on from.
        self.before: Checkpoint | None = None

    def take(self, lake: Lake, ttl: float, on_lost: Callable[[LakeBusyError], None]) -> None:
        """Take ``lake`` for this writer (``WriterLease.acquire``, ``LakeBusyError`` when another
        holds it) and keep the lease renewed; ``on_lost`` hears when another writer took it over."""
        if self._keeper is None:
            self.lease = WriterLease.acquire(lake, ttl)
            self._keeper = LeaseKeeper(self.lease, on_lost)

    def release(self) -> None:
        """Stop renewing the lease and release it."""
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.close()

    def check(self, log: Any, first: tuple[str, int], source: SourceIdentity | None = None) -> None:
        """Raise ``LakeBusyError`` unless the batch whose first change is at ``first`` (on the binlog
        of ``source``, when known) may commit on the change log ``log`` (a ``DeltaTable`` as of its
        newest version; None: none yet). A batch on another server's binlog than the lake's last
        batch (a failover) is not compared by position: the change log's version still fences it."""
        if self.lease is not None:
            self.lease.check()
        self._read = -1 if log is None else log.version()
        self.before = None
        if log is None:
            return
        if self._mine is not None and self._mine[0] == self._read:
            end = self._mine[1]  # nobody committed after this writer: its own last position
        else:
            end = committed_position(log, look_back=20) or committed_position(log)
        self.before = end
        if end is None or (end.source is not None and source is not None and end.source != source):
            return
        if position_key(first[0], first[1]) < position_key(end.file, end.pos):
            raise LakeBusyError(
                f"this batch starts at {first[0]}:{first[1]}, before the end of the lake's last committed batch "
                f"({end.file}:{end.pos}): another sluice committed it. Nothing of this batch is committed; "
                "one writer at a time, stop the other one"
            )

    def lost(self, exc: BaseException) -> BaseException:
        """The error a failed batch reports: ``LakeBusyError`` when another writer took the lake (its
        staged files may be gone, its commits refused), else ``exc``."""
        if self.lease is None or isinstance(exc, LakeBusyError):
            return exc
        try:
            self.lease.check()
        except LakeBusyError as busy:
            return busy
        except Exception:  # the store unreachable: the batch's own error says more
            return exc
        return exc

    def committed(self, position: Checkpoint | None) -> None:
        """After the batch checked last committed to the change log (on the version after the one read)."""
        self._mine = (self._read + 1, position)
