"""Each ``CaptureOutput`` makes what it is named for, and every output of a capture counts the same
row changes in the same transactions, with the compiled core and with the Python twins (no server)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from sluice.binlog import rowplan
from sluice.binlog.position import Checkpoint
from sluice.cdc.capture import CaptureConfig, CaptureOutput, ChangeCapture, CommittedTransaction
from sluice.io.binlog_file import iter_raw_spans

pytestmark = pytest.mark.unit

GOLDEN = sorted((Path(__file__).resolve().parents[2] / "data").glob("*.binlog"))
COMPILED = [False] + ([True] if rowplan._compiled_core is not None else [])


def capture(data: bytes, output: CaptureOutput, compiled: bool) -> list[CommittedTransaction]:
    previous = rowplan.use_compiled(compiled)
    try:
        committed = ChangeCapture(CaptureConfig(ddl=True, output=output), Checkpoint("f0", 4))
        return list(committed.feed_file("f0", "f0", iter_raw_spans(io.BytesIO(data))))
    finally:
        rowplan.use_compiled(previous)


def made(tx: CommittedTransaction) -> str:
    """Which of a committed transaction's fields carries its row changes."""
    if tx.columns is not None:
        return "columns"
    if tx.lines is not None:
        return "lines"
    if tx.counted is not None:
        return "counted"
    return "records"


def product(output: CaptureOutput, compiled: bool) -> str:
    if output in (CaptureOutput.COUNTS, CaptureOutput.DECODED_COUNTS):
        return "counted"
    if output in (CaptureOutput.COLUMNS, CaptureOutput.TYPED_COLUMNS):
        return "columns" if compiled else "records"  # the change-log rows come from the compiled core
    return output.value


@pytest.mark.parametrize("compiled", COMPILED, ids=lambda c: "compiled" if c else "python")
@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_every_output_counts_the_same_row_changes(path: Path, compiled: bool) -> None:
    data = path.read_bytes()
    counts: dict[CaptureOutput, list[tuple[str, str, int]]] = {}
    for output in CaptureOutput:
        done = capture(data, output, compiled)
        with_rows = [tx for tx in done if tx.row_count]
        assert with_rows and {made(tx) for tx in with_rows} == {product(output, compiled)}, output
        counts[output] = [(str(tx.start), str(tx.end), tx.row_count) for tx in done]
    assert counts[CaptureOutput.RECORDS], path
    for output, seen in counts.items():
        assert seen == counts[CaptureOutput.RECORDS], output
