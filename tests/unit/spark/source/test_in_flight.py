"""What the source reports of the transactions it reads and has not committed (``in_flight``): the
capture's open transaction as its events come in, the planner's largest transaction, the report file
the pipeline reads for its progress line and its metrics, all without a server."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sluice.binlog import rowplan
from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, CaptureOutput, ChangeCapture
from sluice.cdc.schema import Catalog
from sluice.spark.pipeline.metrics import PipelineMetrics
from sluice.spark.pipeline.stats import PipelineStats
from sluice.spark.source import in_flight
from sluice.spark.source.datasource import SourceOptions
from sluice.spark.source.in_flight import InFlight, in_flight_file, read_in_flight, remove_in_flight, report_in_flight
from sluice.spark.source.planner import BatchPlanner, _Planned

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[3] / "data"
XID = 16
CORES = [False, True] if rowplan._compiled_core is not None else [False]


def _events(data: bytes) -> list[tuple[int, bytes]]:
    out, pos = [], 4
    while pos < len(data):
        size = int.from_bytes(data[pos + 9 : pos + 13], "little")
        out.append((pos, data[pos : pos + size]))
        pos += size
    return out


@pytest.mark.parametrize("output", [CaptureOutput.COUNTS, CaptureOutput.LINES, CaptureOutput.RECORDS,
                                    CaptureOutput.TYPED_COLUMNS], ids=lambda o: o.value)
@pytest.mark.parametrize("compiled", CORES, ids=lambda c: "compiled" if c else "twin")
def test_the_open_transaction_shows_its_bytes_and_rows_so_far(output: CaptureOutput, compiled: bool) -> None:
    data = (DATA / "mysql-multitable.binlog").read_bytes()
    previous = rowplan.use_compiled(compiled)
    try:
        capture = ChangeCapture(CaptureConfig(output=output, memory=0), Checkpoint("f", 4))
        seen = []
        for offset, event in _events(data):
            if event[4] == XID and capture.open_progress() is not None:
                seen.append(capture.open_progress())
            done = capture.feed("f", offset, offset + len(event), event)
            if done is not None and done.row_count:
                assert capture.open_progress() is None
                file, pos, size, rows = seen[-1]
                assert (file, pos) == ("f", done.start.pos)
                assert size == offset - done.start.pos  # every byte before its XID
                assert rows == done.row_count
    finally:
        rowplan.use_compiled(previous)
    assert [s[3] for s in seen] == [7, 1]  # the three-table transaction, then the one-row one


def test_the_planner_reports_the_largest_transaction_read_and_not_committed() -> None:
    catalog = Catalog(flavor="mysql")
    pending = [_Planned(Checkpoint("b.000001", 4), Checkpoint("b.000001", 504), 7, 500, False, catalog),
               _Planned(Checkpoint("b.000001", 504), Checkpoint("b.000001", 20504), 90, 20000, False, catalog)]
    data = (DATA / "mysql-multitable.binlog").read_bytes()
    capture = ChangeCapture(CaptureConfig(output=CaptureOutput.COUNTS), Checkpoint("f", 4))
    planner = BatchPlanner(SourceOptions(dsn="mysql://u@127.0.0.1:3306/"), pending[0].start, capture, "mysql",
                  pending=pending)
    assert planner.in_flight() == {"open": None, "largest_bytes": 20000, "largest_rows": 90}
    for offset, event in _events(data)[:13]:  # into the first transaction, before its XID
        capture.feed("f", offset, offset + len(event), event)
    state = planner.in_flight()
    assert state["open"] == {"file": "f", "pos": 198, "bytes": 1078 - 198, "rows": 6}
    assert (state["largest_bytes"], state["largest_rows"]) == (20000, 90)
    planner.drop_before(Checkpoint("b.000001", 20504))  # committed: not in flight any more
    assert (planner.in_flight()["largest_bytes"], planner.in_flight()["largest_rows"]) == (880, 6)


def test_the_report_file_reaches_the_progress_line_and_the_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(in_flight, "EVERY", 0.01)
    path = in_flight_file()
    try:
        assert read_in_flight(path) is None  # made, not written yet
        state = {"open": {"file": "binlog.000003", "pos": 4, "bytes": 412_000_000, "rows": 1_500_000},
                 "largest_bytes": 412_000_000, "largest_rows": 1_500_000}
        stop = False
        thread = report_in_flight(path, lambda: state, lambda: stop)
        deadline = time.monotonic() + 10
        while read_in_flight(path) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        flight = read_in_flight(path)
        assert flight == InFlight("binlog.000003", 4, 412_000_000, 1_500_000, 412_000_000, 1_500_000)
        stats = PipelineStats()
        stats.in_flight = flight
        assert stats.line().endswith(", reading a transaction at binlog.000003:4 (412 MB, 1,500,000 rows so far)")
        metrics = PipelineMetrics("p")
        metrics.in_flight(flight)
        assert metrics.registry.get_sample_value("sluice_largest_transaction_bytes", {"pipeline": "p"}) == 412e6
        assert metrics.registry.get_sample_value("sluice_largest_transaction_rows", {"pipeline": "p"}) == 1.5e6
        stop = True
        thread.join(5)
        stats.in_flight = InFlight(None, 0, 0, 0, 0, 0)
        assert "reading" not in stats.line()
    finally:
        remove_in_flight(path)
    assert not Path(path).exists()
    assert read_in_flight(path) is None
