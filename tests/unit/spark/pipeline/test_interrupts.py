"""Ctrl-C and SIGTERM for a running pipeline (``StopSignals``), in a real child process: the first
asks for a stop and says where, a second Ctrl-C ends the process at once with status 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from sluice.spark.pipeline.interrupts import StopSignals

pytestmark = pytest.mark.unit

# The child stands for a run: its main thread busy, ``stop`` reported on stdout, ``stop_now`` too
# (in the pipeline it kills the driver JVM); once asked to stop it ends by itself a little later.
CHILD = textwrap.dedent("""
    import sys, threading, time
    from sluice.spark.pipeline.interrupts import StopSignals

    asked = threading.Event()

    def stop():
        asked.set()
        print("stop asked", flush=True)

    signals = StopSignals("sluice run", stop, lambda: sys.argv[1], lambda: print("driver killed", flush=True))
    signals.install()
    print("ready", flush=True)
    while not asked.is_set():
        time.sleep(0.01)
    deadline = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < deadline:
        time.sleep(0.01)
    print("ended at the boundary", flush=True)
""")


def _child(phase: str, linger: float) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, phase, str(linger)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n", proc.stderr.read() if proc.stderr else ""
    return proc


def _twice(phase: str, sig: signal.Signals, linger: float) -> tuple[int, str, str]:
    """Send ``sig`` to a child in ``phase``, then again once it asked for a stop: (status, stdout, stderr)."""
    proc = _child(phase, linger)
    proc.send_signal(sig)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "stop asked\n"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


def test_a_first_ctrl_c_asks_for_a_stop_at_the_boundary_and_the_run_ends_by_itself() -> None:
    proc = _child("stream", 0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out == "stop asked\nended at the boundary\n"
    assert err == "\nsluice run: stopping at the end of this batch; Ctrl-C again to stop now\n"


def test_a_second_ctrl_c_stops_at_once_with_status_130() -> None:
    status, out, err = _twice("stream", signal.SIGINT, 60.0)
    assert status == 130
    assert out == "driver killed\n"  # what must not outlive the process is ended first
    assert err == ("\nsluice run: stopping at the end of this batch; Ctrl-C again to stop now\n"
                   "\nsluice run: stopped now, in the middle of a batch; the next run does that batch again, "
                   "nothing lost or written twice\n")


def test_the_lines_name_the_snapshot_when_it_is_the_phase() -> None:
    status, _, err = _twice("snapshot", signal.SIGINT, 60.0)
    assert status == 130
    assert err.splitlines()[1] == "sluice run: stopping after the snapshot chunks being read; Ctrl-C again to stop now"
    assert err.splitlines()[3].startswith("sluice run: stopped now, in the middle of the snapshot; the next run "
                                          "resumes it at its first unfinished chunk")


def test_sigterm_stops_at_the_boundary_and_a_second_one_changes_nothing() -> None:
    status, out, err = _twice("stream", signal.SIGTERM, 1.0)
    assert status == 0, err
    assert out == "ended at the boundary\n"
    assert err == "sluice run: stopping at the end of this batch (SIGTERM)\n"


def test_installing_again_over_another_handler_still_restores_the_first() -> None:
    before = signal.getsignal(signal.SIGINT)
    signals = StopSignals("sluice run", lambda: None, lambda: "stream", lambda: None)
    signals.install()
    try:
        signal.signal(signal.SIGINT, lambda *_: None)  # as PySpark's SparkContext does
        signals.install()
        assert signal.getsignal(signal.SIGINT) == signals._handle
    finally:
        signals.restore()
    assert signal.getsignal(signal.SIGINT) is before


def test_a_sigterm_while_spark_starts_says_when_the_run_stops(capfd: pytest.CaptureFixture[str]) -> None:
    asked: list[float] = []
    signals = StopSignals("sluice snapshot", lambda: asked.append(time.monotonic()), lambda: "start", lambda: None)
    signals._handle(signal.SIGTERM, None)
    assert len(asked) == 1
    assert capfd.readouterr().err == "sluice snapshot: stopping once Spark has started (SIGTERM)\n"
