"""Where a binlog stream stands, as ``TransactionAssembler`` hands it out: the last transaction
boundary, with the executed GTIDs there and the server it is read on.

``StreamPoint`` keeps the file and offset the stream reached between transactions, the GTIDs the
binlog has consumed (``ExecutedGtids``: seeded by the start's set, ``PREVIOUS_GTIDS`` or
``GTID_LIST``, grown by every GTID, rolled-back ones included), the furthest boundary ever passed
(``Horizon``: what is read again after a reconnect is recognised by it), and the XA transactions
prepared and not yet resolved. While one is prepared, the boundary it exports stays at the start of
the oldest, with the executed GTIDs less the prepared parts', so that a resume reads its rows again
(the prepared part is held in memory only). Events the server makes up for a replica (flagged
``LOG_EVENT_ARTIFICIAL_F``, a ``FORMAT_DESCRIPTION`` re-sent anywhere but at offset 4) do not move it.
"""

from __future__ import annotations

from typing import Any

from sluice.binlog.events import FormatDescriptionEvent
from sluice.binlog.gtid import Gtid, MariadbGtid
from sluice.binlog.header import LOG_EVENT_ARTIFICIAL_F
from sluice.binlog.position import Checkpoint, SourceIdentity
from sluice.cdc.executed import ExecutedGtids
from sluice.cdc.horizon import Horizon
from sluice.cdc.txstate import PreparedXa

__all__ = ["StreamPoint"]


class StreamPoint:
    """The stream's last transaction boundary and what a resume from it needs (module docstring)."""

    def __init__(self, start: Checkpoint) -> None:
        self.file = start.file
        self.pos = start.pos
        self.gtids = ExecutedGtids(start.gtid_set, where=str(start))
        self.prepared: dict[bytes, PreparedXa] = {}  # by xid_key, oldest first
        self.source = start.source  # the server the positions are read on (stamped on every boundary)
        self._boundary: Checkpoint | None = None
        self._horizon = Horizon(start.file, start.pos)

    @property
    def boundary(self) -> Checkpoint:
        """The last transaction boundary: a resume that starts here loses nothing."""
        b = self._boundary
        if b is None:
            b = self._boundary = self._export()
        return b

    def move(self, file: str, pos: int) -> None:
        """The stream reached ``file:pos`` between transactions."""
        self.file = file
        self.pos = pos
        self._boundary = None
        self._horizon.reach(file, pos)

    def move_past(self, file: str, pos: int, next_pos: int, event: Any) -> None:
        """An event outside transactions was read: past it, unless the server made it up."""
        if event.header.flags & LOG_EVENT_ARTIFICIAL_F or (type(event) is FormatDescriptionEvent and pos != 4):
            # Made up by the server for this connection, not in the binlog file: a fake GTID_LIST, or
            # the FORMAT_DESCRIPTION re-sent for a start inside a file. A log_pos of 0 alone says
            # nothing: MariaDB 11.4+ writes it inside transactions (binlog_legacy_event_pos=OFF).
            return
        self.move(file, next_pos)

    def passed(self, file: str, end: int) -> bool:
        """Whether a transaction ending at ``file:end`` was passed before (read again after a reconnect)."""
        return self._horizon.passed(file, end)

    def executed(self, gtid: Gtid | MariadbGtid | None) -> bool:
        """Record ``gtid`` as executed; False when it was executed before (a transaction to skip)."""
        fresh = self.gtids.add(gtid)
        if fresh and gtid is not None:
            self._boundary = None
        return fresh

    def seeded(self, changed: bool) -> None:
        """``PREVIOUS_GTIDS`` / ``GTID_LIST`` seeded the executed GTIDs (``changed``: they differ now)."""
        if changed:
            self._boundary = None

    def prepare(self, key: bytes, xa: PreparedXa) -> None:
        """An XA transaction was prepared; read again after a reconnect, it keeps its place in line."""
        self.prepared.setdefault(key, xa)

    def resolve(self, key: bytes) -> PreparedXa | None:
        """An XA transaction was committed or rolled back: its prepared part, if it was read."""
        return self.prepared.pop(key, None)

    def read_on(self, source: SourceIdentity | None, *, moved: bool) -> None:
        """The stream is read on ``source`` now; ``moved``: another server than before (its
        positions are other positions, so none of the old ones says what was passed)."""
        self.source = source
        self._boundary = None
        if moved:
            self._horizon.forget()

    def _export(self) -> Checkpoint:
        """The checkpoint here, held back to the oldest prepared XA while there is one."""
        if not self.prepared:
            return Checkpoint(self.file, self.pos, self.gtids.text(), self.source)
        oldest = next(iter(self.prepared.values()))
        return Checkpoint(oldest.file, oldest.pos, self.gtids.without(p.gtid_obj for p in self.prepared.values()),
                          self.source)
