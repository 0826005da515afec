"""A snapshot's reconciliation with huge transactions and an ALTER TABLE committed while it runs.

``sluice run`` snapshots a table in many small chunks, one connection at a time, and streams from
the snapshot's start meanwhile. Once the first chunk is in the mirror, huge transactions (larger than
the part size and than a MERGE pass, one rolled back in the binlog, keys moved) and an ALTER TABLE
right after them are committed on the server: the chunks read after them hold the new rows and the
new column, the stream's batches hold the same changes, and the snapshot's filter must judge each
against the chunks so that the mirror equals SELECT and the change log holds every change once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import deltalake
import pytest

from tests.conftest import TWO_FLAVORS, binlog_row_metadata
from tests.integration.exactly_once import exactly_once
from tests.integration.huge_transactions import huge_table, huge_transactions

pytestmark = pytest.mark.spark

ROWS = 6000
CHUNK = 150  # 40 chunks, read one at a time: the snapshot outlasts the transactions


@pytest.fixture(params=TWO_FLAVORS)
def server(request):
    box = request.getfixturevalue(f"{request.param}_server")
    with binlog_row_metadata(box, "FULL"):
        yield box


def _log_entries(table: Path) -> list[dict[str, Any]]:
    """The commitInfo and txn actions of each version of the Delta table at ``table``, oldest first."""
    entries = []
    for path in sorted((table / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        entries.append({k: v for action in actions for k, v in action.items() if k in ("commitInfo", "txn")})
    return entries


def _wait(ready: Any, proc: subprocess.Popen[bytes], what: str, stderr: Path, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            pytest.fail(f"{what}: not seen; sluice run's stderr ends: {stderr.read_text()[-3000:]}")
        time.sleep(0.05)


def test_huge_transactions_and_an_alter_during_the_snapshot_give_the_lake_exactly(server, tmp_path):
    db = f"bigsnap_{uuid.uuid4().hex[:8]}"
    status = huge_table(server, db, ROWS)
    start = f"{status.file}:{status.pos}"
    lake = tmp_path / "lake"
    config = tmp_path / "passes.toml"
    config.write_text("[mirror]\npass_rows = 500\n")
    stderr = tmp_path / "stderr"
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("root"), "--lake", str(lake),
             "--tables", rf"{db}\..*", "--checkpoint-dir", str(tmp_path / "checkpoint"), "--trigger", "1s",
             "--chunk-rows", str(CHUNK), "--snapshot-connections", "1", "--part-size", "4K",
             "--mirror-max-lag", "0", "--no-maintenance", "--config", str(config)],
            stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "TMPDIR": str(tmp_path)})
    mirror = lake / db / "k"
    try:
        _wait(lambda: any(mirror.glob("*.parquet")), proc, "the snapshot's first chunk in the mirror", stderr)
        began = time.time() * 1000
        expected = huge_transactions(server, db, ROWS, keys_move=True, alter=True)
        ended = time.time() * 1000

        def caught_up() -> bool:
            changes = lake / "_sluice" / "changes"
            if not (changes / "_delta_log").is_dir():
                return False
            log = deltalake.DeltaTable(str(changes)).to_pyarrow_table(columns=["db", "op", "after"]).to_pylist()
            return any(r["db"] == db and r["op"] == "insert" and r["after"] and '"last"' in r["after"] for r in log)

        _wait(caught_up, proc, "the last insert in the change log", stderr)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(120)
    assert proc.returncode == 0, stderr.read_text()[-3000:]
    assert exactly_once(server, lake, db, start) == expected
    # The transactions landed while the snapshot ran: its first chunk's data file was written before
    # them (what the test waited for), and chunks were committed to the mirror after them.
    chunk_times = [e["commitInfo"]["timestamp"] for e in _log_entries(mirror)
                   if "txn" in e and e["txn"]["appId"].endswith("-snapshot")]
    assert chunk_times and max(chunk_times) > ended, (began, ended, _log_entries(mirror))
