"""INCIDENT events: the server says it failed to log some changes. Capture stops with
DataLossError naming the place (as a replica does) unless told to go on, which it then counts."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from sluice.binlog.constants import EventType as E
from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, ChangeCapture
from sluice.errors import DataLossError
from tests.unit.binlog.decoders.test_events import event, fde

pytestmark = pytest.mark.unit

INCIDENT = event(E.INCIDENT_EVENT, struct.pack("<H", 1) + b"\x0bcache full!")
QUIET = event(E.INCIDENT_EVENT, struct.pack("<H", 0) + b"\x00")  # INCIDENT_NONE: nothing was lost


def _feed(capture: ChangeCapture, events: list[bytes]) -> int:
    pos = 4
    for data in events:
        capture.feed("binlog.000001", pos, pos + len(data), data)
        pos += len(data)
    return pos


def test_an_incident_stops_capture_with_its_place_and_the_remedy() -> None:
    capture = ChangeCapture(CaptureConfig(), Checkpoint("binlog.000001", 4))
    with pytest.raises(DataLossError) as err:
        _feed(capture, [fde(), INCIDENT])
    text = str(err.value)
    at = 4 + len(fde())
    assert f"binlog.000001:{at}" in text
    assert "LOST_EVENTS" in text and "cache full!" in text
    assert "--skip-incidents" in text and "Re-snapshot" in text


def test_skip_incidents_goes_on_and_counts() -> None:
    capture = ChangeCapture(CaptureConfig(skip_incidents=True), Checkpoint("binlog.000001", 4))
    end = _feed(capture, [fde(), INCIDENT, QUIET, INCIDENT])
    assert capture.incidents_skipped == 2
    assert capture.boundary == Checkpoint("binlog.000001", end)


def test_incident_none_is_not_a_loss() -> None:
    capture = ChangeCapture(CaptureConfig(), Checkpoint("binlog.000001", 4))
    _feed(capture, [fde(), QUIET])
    assert capture.incidents_skipped == 0


def test_dump_reports_the_incident_in_one_line_and_fails(tmp_path: Path) -> None:
    path = tmp_path / "binlog.000001"
    path.write_bytes(b"\xfebin" + fde() + INCIDENT)
    run = [sys.executable, "-m", "sluice.cli", "dump", str(path)]
    stopped = subprocess.run(run, capture_output=True, text=True, check=False)
    assert stopped.returncode == 1
    lines = stopped.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sluice: error:") and "incident" in lines[0]
    assert "Traceback" not in stopped.stderr
    went_on = subprocess.run([*run, "--skip-incidents"], capture_output=True, text=True, check=False)
    assert went_on.returncode == 0, went_on.stderr
    assert "incident" in went_on.stderr.lower()


def test_read_changes_raises_or_skips(tmp_path: Path) -> None:
    from sluice import read_changes

    path = tmp_path / "binlog.000001"
    path.write_bytes(b"\xfebin" + fde() + INCIDENT)
    with pytest.raises(DataLossError):
        list(read_changes(path))
    assert list(read_changes(path, skip_incidents=True)) == []
