"""The stream planner's read-ahead thread at the binlog's end: following on between batches.

Once the thread has read to the binlog's end, ``FollowOn.run`` asks the server where its binlog
ends every ``IDLE_POLL`` seconds (one query on a connection of its own) and reads again whenever it
moved, so that a transaction committed between two triggers is read before the next trigger asks
for it. The planner's next ``latestOffset`` asks it to finish (``finish``): a read under way goes on
to the binlog's end, and no read begins after. Between reads the thread is ``idle``: it touches
nothing of the planner, and the planner need not wait for it (a query stalled on a silent network
path keeps no batch waiting). A failure to ask the server ends the following quietly: the next
batch's own read meets it, and says so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sluice.io.connection import Connection, ConnectionConfig
from sluice.io.replication import server_binlog_status

__all__ = ["IDLE_POLL", "FollowOn"]

log = logging.getLogger(__name__)

#: Seconds between two looks at the server's binlog end.
IDLE_POLL = 0.1


class FollowOn:
    """One read-ahead thread's following on; ``lock`` is the planner's, under which a read begins."""

    def __init__(self, connection: ConnectionConfig, lock: threading.Condition) -> None:
        self.connection = connection
        self.lock = lock
        self.asked = threading.Event()
        self.idle = False  # between reads: the planner need not wait for the thread

    def finish(self) -> None:
        """No read begins after this; one under way goes on."""
        with self.lock:
            self.asked.set()

    def run(self, at_end: Callable[[], bool], stopping: Callable[[], bool], read: Callable[[], None]) -> None:
        """While ``at_end()`` and not ``stopping()`` or asked to finish: ``read()`` whenever the
        server's binlog end moved."""
        conn: Connection | None = None
        seen: tuple[str, int] | None = None
        try:
            while at_end() and not stopping():
                with self.lock:
                    if self.asked.is_set():
                        return
                    self.idle = True
                try:
                    if conn is None:
                        conn = Connection.open(self.connection)
                    status = server_binlog_status(conn)
                except Exception as exc:  # see the module docstring
                    log.debug("binlog planner: looking at the binlog's end failed: %s", exc)
                    return
                if seen is not None and (status.file, status.pos) != seen:
                    with self.lock:
                        if self.asked.is_set():
                            return
                        self.idle = False
                    read()
                seen = (status.file, status.pos)
                if self.asked.wait(IDLE_POLL):
                    return
        finally:
            if conn is not None:
                conn.close()
