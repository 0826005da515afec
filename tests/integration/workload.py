"""A steady writer for the kill and lease tests: inserts, updates and deletes on one table of
``(id, v)`` rows, in a thread, each counted by op, so a test can check the change log's counts."""

from __future__ import annotations

import collections
import threading
import time
from typing import Any

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection

__all__ = ["Workload"]


class Workload:
    """Inserts, updates and deletes on ``db.table`` in a thread, counted by op (``tally``), one round
    every ``pause`` seconds until ``stop``, which raises what the thread met."""

    def __init__(self, server: Any, db: str, *, table: str = "t", pause: float = 0.05) -> None:
        self.server, self.db, self.table, self.pause = server, db, table, pause
        self.tally: collections.Counter[str] = collections.Counter()
        self.done = threading.Event()
        self.failure: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        name = f"{self.db}.{self.table}"
        try:
            with Connection.open(parse_dsn(self.server.dsn("root"))) as conn:
                n = 1000
                while not self.done.is_set():
                    self.tally["insert"] += conn.execute(f"INSERT INTO {name} VALUES ({n}, {n}), ({n + 1}, {n})"
                                                         ).affected_rows
                    self.tally["update"] += conn.execute(f"UPDATE {name} SET v = v + 1 WHERE id = {n - 7}"
                                                         ).affected_rows
                    self.tally["delete"] += conn.execute(f"DELETE FROM {name} WHERE id = {n - 10}").affected_rows
                    n += 2
                    time.sleep(self.pause)
        except BaseException as exc:
            self.failure.append(exc)

    def stop(self) -> None:
        """End the writer and fail with what it met, if anything."""
        self.done.set()
        self.thread.join(60)
        assert not self.failure, self.failure
