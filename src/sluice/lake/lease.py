"""One writer at a time: the lease a pipeline holds on its lake.

Each writer that ever took the lake has an epoch ``n`` (1, 2, ...) and its own object,
``Lake.lease(n)``, which it created only if absent (``LakeStore.create``: ``If-None-Match: *`` on
an object store, an exclusive create on a path), so two writers can never both take epoch ``n``.
The object says who holds it (host, pid, since when) and when it last renewed (``renewed``, the
holder's clock, and ``ttl``). Only its holder writes it again: to renew it every ``ttl / 3``
seconds, and to mark it released at a clean stop. The newest epoch is the lake's writer; a hint
(``Lake.LEASE_HINT``) names a recent epoch and the newest is found by reading forward from it.

A new writer takes epoch ``n + 1`` only when epoch ``n`` is released, expired (not renewed for
``ttl`` seconds by this host's clock: hosts' clocks must agree within a few seconds), or held by a
process of this host that is gone. Otherwise it stops with ``LakeBusyError`` naming the holder.
A writer learns that it lost the lake (it paused past its lease and another took over) when it
renews, and ``check`` before each batch's first commit looks for a successor. Neither is a proof
against a pause at the wrong moment; the batch's fence is (``sluice.spark.pipeline.fence``).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from sluice.errors import LakeBusyError, SluiceError
from sluice.lake.layout import Lake
from sluice.processes import pid_alive

__all__ = ["DEFAULT_TTL", "Holder", "LeaseKeeper", "WriterLease", "current_holder"]

log = logging.getLogger(__name__)

DEFAULT_TTL = 30.0  # seconds a lease lasts without renewal
_LIVE: set[str] = set()  # tokens of the leases this process holds and has not released


@dataclass(frozen=True, slots=True)
class Holder:
    """What a lease object says of its writer."""

    epoch: int
    host: str
    pid: int
    since: float  # epoch seconds
    renewed: float
    ttl: float
    token: str
    released: bool = False

    @classmethod
    def of(cls, epoch: int, doc: dict[str, Any]) -> Holder:
        """The holder of epoch ``epoch`` from its JSON object."""
        return cls(epoch, str(doc["host"]), int(doc["pid"]), float(doc["since"]), float(doc["renewed"]),
                   float(doc["ttl"]), str(doc["token"]), bool(doc.get("released", False)))

    def doc(self) -> dict[str, Any]:
        """The JSON object of the lease."""
        return {"host": self.host, "pid": self.pid, "since": self.since, "renewed": self.renewed, "ttl": self.ttl,
                "token": self.token, "released": self.released}

    def describe(self) -> str:
        """``host HOST, pid PID, writing since TIME``."""
        since = datetime.fromtimestamp(self.since, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"host {self.host}, pid {self.pid}, writing since {since}"

    def free(self, now: float) -> bool:
        """Whether a new writer may take the lake from this holder now."""
        if self.released or now - self.renewed > self.ttl:
            return True
        if self.host != socket.gethostname():
            return False
        if self.pid == os.getpid():
            return self.token not in _LIVE  # an earlier writer of this process that never released
        return not pid_alive(self.pid)  # its process is gone (killed, or exited and not yet reaped)


def _newest(lake: Lake) -> tuple[int, dict[str, Any] | None]:
    """The newest epoch and its lease object ((0, None): nobody ever wrote the lake)."""
    hint = lake.get_json(lake.LEASE_HINT) or {}
    epoch = int(hint.get("epoch", 0)) if isinstance(hint, dict) else 0
    doc = lake.get_json(lake.lease(epoch)) if epoch else None
    while True:
        following = lake.get_json(lake.lease(epoch + 1))
        if following is None:
            return epoch, doc
        epoch, doc = epoch + 1, following


def current_holder(lake: Lake) -> Holder | None:
    """The lake's newest writer, None when no writer ever took it."""
    epoch, doc = _newest(lake)
    return None if doc is None else Holder.of(epoch, doc)


class WriterLease:
    """The lease of one writer on ``lake`` (module docstring)."""

    def __init__(self, lake: Lake, holder: Holder) -> None:
        self.lake = lake
        self.holder = holder
        self.lost: LakeBusyError | None = None

    @classmethod
    def acquire(cls, lake: Lake, ttl: float = DEFAULT_TTL) -> WriterLease:
        """Take the lake, or raise ``LakeBusyError`` naming the writer that holds it."""
        for _ in range(5):
            epoch, doc = _newest(lake)
            now = time.time()
            if doc is not None:
                held = Holder.of(epoch, doc)
                if not held.free(now):
                    raise LakeBusyError(
                        f"the lake {lake.uri} is written by another sluice ({held.describe()}): one writer at a "
                        f"time. Stop that one first, or wait {held.ttl:.0f} s after it stopped answering"
                    )
            mine = Holder(epoch + 1, socket.gethostname(), os.getpid(), now, now, ttl, uuid.uuid4().hex)
            if lake.create(lake.lease(mine.epoch), _json(mine.doc())):
                _LIVE.add(mine.token)
                lake.put(lake.LEASE_HINT, _json({"epoch": mine.epoch}))
                return cls(lake, mine)
        raise LakeBusyError(f"the lake {lake.uri} is being taken by other writers at the same time: one writer at "
                            "a time; start one")

    def check(self) -> None:
        """Raise ``LakeBusyError`` when another writer took the lake after this one."""
        if self.lost is not None:
            raise self.lost
        found = self.lake.get_json(self.lake.lease(self.holder.epoch + 1))
        if found is not None:
            successor = Holder.of(self.holder.epoch + 1, found)
            self.lost = LakeBusyError(
                f"the lake {self.lake.uri} was taken over by another sluice ({successor.describe()}) while this "
                "one did not renew its lease (paused or cut off for more than "
                f"{self.holder.ttl:.0f} s): this one stops, nothing of its batch in flight is committed"
            )
            _LIVE.discard(self.holder.token)
            raise self.lost

    def renew(self) -> None:
        """Renew the lease; ``LakeBusyError`` when another writer took the lake meanwhile."""
        self.check()
        self.holder = replace(self.holder, renewed=time.time())
        self.lake.put(self.lake.lease(self.holder.epoch), _json(self.holder.doc()))

    def release(self) -> None:
        """Mark the lease released (a clean stop), unless it was lost."""
        _LIVE.discard(self.holder.token)
        if self.lost is None:
            try:
                self.check()
            except LakeBusyError:
                return
            released = replace(self.holder, released=True)
            self.lake.put(self.lake.lease(self.holder.epoch), _json(released.doc()))


class LeaseKeeper:
    """Renews ``lease`` every ``ttl / 3`` seconds in a daemon thread; ``on_lost`` gets the error when
    another writer took the lake. A failed renewal (the store unreachable) is retried next time."""

    def __init__(self, lease: WriterLease, on_lost: Callable[[LakeBusyError], None]) -> None:
        self.lease = lease
        self.on_lost = on_lost
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sluice-lease", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.lease.holder.ttl / 3):
            try:
                self.lease.renew()
            except LakeBusyError as exc:
                self.on_lost(exc)
                return
            except SluiceError as exc:
                log.warning("renewing the lake's writer lease failed (tried again in %.0f s): %s",
                            self.lease.holder.ttl / 3, exc)

    def close(self) -> None:
        """Stop renewing and release the lease."""
        self._stop.set()
        self._thread.join()
        self.lease.release()


def _json(doc: dict[str, Any]) -> bytes:
    import json

    return json.dumps(doc).encode("utf-8")
