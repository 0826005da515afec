"""The lake's writer lease (``sluice.lake.lease``): one writer at a time, a second one refused by
name, a lease taken over only when released, expired or its process gone, and the writer that lost
it told so."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from sluice.errors import LakeBusyError
from sluice.lake.layout import open_lake
from sluice.lake.lease import LeaseKeeper, WriterLease, current_holder

pytestmark = pytest.mark.unit


def _foreign(lake, epoch: int, *, host: str = "elsewhere", pid: int = 4242, renewed: float | None = None) -> None:
    """A lease object as another writer left it."""
    now = time.time()
    doc = {"host": host, "pid": pid, "since": now - 60, "renewed": now if renewed is None else renewed,
           "ttl": 30.0, "token": "theirs", "released": False}
    assert lake.create(lake.lease(epoch), json.dumps(doc).encode())


def test_a_second_writer_is_refused_naming_the_first(tmp_path):
    lake = open_lake(tmp_path / "lake")
    first = WriterLease.acquire(lake)
    with pytest.raises(LakeBusyError) as caught:
        WriterLease.acquire(lake)
    text = str(caught.value)
    assert f"host {socket.gethostname()}" in text and f"pid {first.holder.pid}" in text and "writing since" in text
    assert "\n" not in text
    first.release()
    second = WriterLease.acquire(lake)
    assert second.holder.epoch == first.holder.epoch + 1
    assert current_holder(lake) == second.holder


def test_a_live_writer_elsewhere_holds_the_lake_until_its_lease_expires(tmp_path):
    lake = open_lake(tmp_path / "lake")
    _foreign(lake, 1)
    with pytest.raises(LakeBusyError, match="host elsewhere, pid 4242"):
        WriterLease.acquire(lake)
    _foreign(lake, 2, renewed=time.time() - 31)  # not renewed for longer than its ttl
    assert WriterLease.acquire(lake).holder.epoch == 3


def test_a_writer_of_this_host_whose_process_is_gone_is_taken_over_at_once(tmp_path):
    lake = open_lake(tmp_path / "lake")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    _foreign(lake, 1, host=socket.gethostname(), pid=int(gone.stdout))
    assert WriterLease.acquire(lake).holder.epoch == 2


def test_the_writer_that_lost_the_lake_learns_it_and_does_not_release_the_new_ones(tmp_path):
    lake = open_lake(tmp_path / "lake")
    old = WriterLease.acquire(lake)
    _foreign(lake, old.holder.epoch + 1)  # took over while the old one was paused
    with pytest.raises(LakeBusyError, match=r"taken over by another sluice \(host elsewhere, pid 4242"):
        old.renew()
    with pytest.raises(LakeBusyError):
        old.check()
    old.release()
    assert current_holder(lake).host == "elsewhere" and not current_holder(lake).released


def test_the_keeper_renews_and_reports_a_loss(tmp_path):
    lake = open_lake(tmp_path / "lake")
    lease = WriterLease.acquire(lake, ttl=0.3)
    lost: list[LakeBusyError] = []
    keeper = LeaseKeeper(lease, lost.append)
    renewed = lease.holder.renewed
    deadline = time.monotonic() + 10
    while current_holder(lake).renewed == renewed and time.monotonic() < deadline:
        time.sleep(0.05)
    assert current_holder(lake).renewed > renewed
    _foreign(lake, lease.holder.epoch + 1)
    while not lost and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lost and "taken over" in str(lost[0])
    keeper.close()
