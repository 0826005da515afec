"""What Ctrl-C (SIGINT) and SIGTERM do to a running pipeline: stop at the next boundary, or now.

The first SIGINT or SIGTERM asks the pipeline to stop where the lake is whole and the next run
takes over cheaply (the end of the batch in flight; during a snapshot, the end of the wave of
chunks being read) and says so in one line; the run then ends as it ends on its own, with its
summary and exit status 0. A second Ctrl-C stops now: one line, the driver JVM killed
(``kill_driver``) and the process gone with exit status 130, as a shell reports an interrupted
command. Nothing is lost or written twice: a batch or chunk that was not committed is done again by
the next run, as after ``kill -9``, which every commit of the pipeline is made for. A second
SIGTERM changes nothing: a service manager that wants the process gone at once sends SIGKILL.

A handler sets a flag and writes its line with ``os.write``, nothing more: it runs in the main
thread between two bytecodes, maybe in the middle of a py4j call or of a ``print`` to standard
error, and a call into either from there fails with "reentrant call" (what PySpark's own handler,
which cancels every job, raised). ``install`` is called again once the Spark session exists, since
PySpark's ``SparkContext`` puts that handler in place of whatever was there.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["EXIT_INTERRUPTED", "StopSignals"]

EXIT_INTERRUPTED = 128 + signal.SIGINT  # what a shell reports for a command Ctrl-C ended: 130

#: By the phase the pipeline is in: where the first Ctrl-C stops it, and what a second one leaves.
_STOPPING = {
    "start": "stopping once Spark has started",
    "snapshot": "stopping after the snapshot chunks being read",
    "stream": "stopping at the end of this batch",
    "flush": "stopping once the pending changes are in the mirrors",
}
_LEFT = {
    "start": "before the pipeline started",
    "snapshot": "in the middle of the snapshot; the next run resumes it at its first unfinished chunk",
    "stream": "in the middle of a batch; the next run does that batch again, nothing lost or written twice",
    "flush": "with changes still pending for some mirrors; the next run MERGEs them, nothing lost",
}


class StopSignals:
    """SIGINT and SIGTERM handlers for one run: ``stop`` on the first, the process ended on a second
    SIGINT. ``phase()`` says where the run is (``start``, ``snapshot`` or ``stream``); ``label``
    begins each line (``sluice run``)."""

    def __init__(self, label: str, stop: Callable[[], None], phase: Callable[[], str],
                 stop_now: Callable[[], None]) -> None:
        self.label = label
        self.stop = stop
        self.phase = phase
        self.stop_now = stop_now  # ends what must not outlive the process (the driver JVM)
        self.asked = False
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        """Put the handlers in place (again, over PySpark's); the first call keeps what was there."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous = signal.signal(sig, self._handle)
            self._previous.setdefault(sig, previous)

    def restore(self) -> None:
        """Put back the handlers that were there before the first ``install``."""
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()

    def __enter__(self) -> StopSignals:
        self.install()
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        phase = self.phase()
        if not self.asked:
            self.asked = True
            again = "; Ctrl-C again to stop now" if signum == signal.SIGINT else " (SIGTERM)"
            # The line first: a second signal runs this handler again at the first Python code after it.
            self._say(f"{_STOPPING.get(phase, _STOPPING['stream'])}{again}", signum)
            self.stop()
        elif signum == signal.SIGINT:
            self._say(f"stopped now, {_LEFT.get(phase, _LEFT['stream'])}", signum)
            try:
                _silence_stderr()  # the last line said it all: not the threads' words on the JVM's end
                self.stop_now()
            finally:
                os._exit(EXIT_INTERRUPTED)  # no interpreter teardown: threads are mid-call into the JVM

    def _say(self, text: str, signum: int) -> None:
        # On a line of its own: a terminal echoes Ctrl-C as ^C where its cursor is.
        start = "\n" if signum == signal.SIGINT else ""
        data = f"{start}{self.label}: {text}\n".encode()
        try:
            while data:
                data = data[os.write(2, data):]
        except OSError:
            pass


def _silence_stderr() -> None:
    """Point standard error at /dev/null: PySpark's threads (its accumulator server, py4j) report the
    driver JVM's end with tracebacks of their own."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
    except OSError:
        pass
