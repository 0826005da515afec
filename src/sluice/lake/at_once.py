"""Independent lake writes run side by side: ``run_at_once`` runs steps on threads, at most a given
number at a time, and returns their results in the order given.

A batch's mirrors are separate Delta tables, each committed with the batch's app transaction, so
their commits need no order among themselves (the change log, which says the batch is whole, is
committed after all of them). delta-rs releases the GIL while it reads, writes and commits, so
MERGEs of different tables overlap on a driver with more than one core, and their round trips
overlap on an object store.

A step that fails stops the steps not yet started; those running finish, and the first failure in
the given order is raised, as running them one after another would have raised it (with possibly
more of the others done, which the app transactions make harmless: a replayed batch skips them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import TypeVar

__all__ = ["run_at_once"]

T = TypeVar("T")


def run_at_once(steps: Sequence[Callable[[], T]], limit: int) -> list[T]:
    """The results of ``steps``, run on up to ``limit`` threads (in this thread, in order, when
    ``limit`` is 1 or there is one step)."""
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    if limit == 1 or len(steps) <= 1:
        return [step() for step in steps]
    with ThreadPoolExecutor(max_workers=min(limit, len(steps)), thread_name_prefix="sluice-commit") as pool:
        futures: list[Future[T]] = [pool.submit(step) for step in steps]
        _, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for f in pending:  # none unless a step failed
            f.cancel()
    failures = [e for f in futures if not f.cancelled() and (e := f.exception()) is not None]
    if failures:
        raise failures[0]
    return [f.result() for f in futures]
