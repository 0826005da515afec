"""``run_at_once``: results in the order given, steps side by side, the first failure in order."""

from __future__ import annotations

import threading

import pytest

from sluice.lake.at_once import run_at_once

pytestmark = pytest.mark.unit


def test_results_come_in_the_order_given() -> None:
    assert run_at_once([lambda i=i: i * i for i in range(7)], 3) == [i * i for i in range(7)]
    assert run_at_once([], 4) == []


def test_steps_run_side_by_side_up_to_the_limit() -> None:
    # Each step waits for two others at the barrier: one by one, the first would wait alone and fail.
    barrier = threading.Barrier(3, timeout=10)
    assert run_at_once([lambda i=i: (barrier.wait(), i)[1] for i in range(3)], 3) == [0, 1, 2]
    three = threading.Barrier(3, timeout=0.5)
    with pytest.raises(threading.BrokenBarrierError):  # two at once never make three
        run_at_once([three.wait for _ in range(3)], 2)


def test_the_first_failure_in_order_is_raised_after_the_running_steps_end() -> None:
    third_done, second_failed = threading.Event(), threading.Event()

    def first() -> None:  # still running when the second fails
        assert second_failed.wait(10)
        raise ValueError("first")

    def second() -> None:
        assert third_done.wait(10)
        second_failed.set()
        raise KeyError("second")

    with pytest.raises(ValueError, match="first"):  # though the second failed before it
        run_at_once([first, second, third_done.set], 3)


def test_one_at_a_time_runs_in_this_thread_and_stops_at_a_failure() -> None:
    ran: list[str] = []

    def step(name: str) -> str:
        ran.append(threading.current_thread().name)
        if name == "b":
            raise RuntimeError(name)
        return name

    with pytest.raises(RuntimeError, match="b"):
        run_at_once([lambda n=n: step(n) for n in "abc"], 1)
    assert ran == [threading.current_thread().name] * 2
    with pytest.raises(ValueError, match="limit"):
        run_at_once([lambda: 1], 0)
