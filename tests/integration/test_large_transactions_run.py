"""``sluice run`` over transactions larger than its part size, on real servers and real Spark.

With ``--part-size`` set to a few KiB, every transaction of a few thousand rows is decoded and staged
in many parts: the capture hands an open transaction's rows out as it reads them, each part's
MERGE sources go to the staging folder and its change-log rows wait in a temporary file for the
commit time. The lake must be what it is with no parts at all: each mirror equal to SELECT and
every change in the change log once (``exactly_once``), a transaction the binlog rolls back (an XA
transaction prepared, so logged with its rows, then XA ROLLBACK) nowhere, and an ALTER TABLE right
after a huge transaction applied to the mirror that transaction left; the rolled-back one leaves no
change-log file and no temporary file. kill -9 while the tasks stage such a batch, and while the
driver commits it, loses and repeats nothing.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import deltalake
import pyarrow.parquet as pq
import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.io.replication import server_binlog_status
from tests.conftest import TWO_FLAVORS, binlog_row_metadata, kills
from tests.integration.exactly_once import exactly_once
from tests.integration.huge_transactions import huge_table, huge_transactions, kill_when

pytestmark = pytest.mark.spark

ROWS = 3000  # a transaction of ROWS updates: some 300 KB of binlog, against parts of 4 KiB
PART = "4K"
PASS = 500


@pytest.fixture(params=TWO_FLAVORS)
def server(request):
    # The binlog names the columns: the check's sluice tail reads across the ALTER TABLE from a
    # position before it, with no schema history of its own.
    box = request.getfixturevalue(f"{request.param}_server")
    with binlog_row_metadata(box, "FULL"):
        yield box


def _run(server: Any, lake: Path, db: str, tmp: Path, *extra: str) -> list[str]:
    # A MERGE of more than PASS keys is done in passes: a huge transaction's staged sources stay on the
    # lake as pieces, and the mirror's files are rewritten and committed by sluice (lake.mirror.passes).
    config = tmp / "passes.toml"
    config.write_text(f"[mirror]\npass_rows = {PASS}\n")
    return [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("root"), "--lake", str(lake),
            "--tables", rf"{db}\..*", "--checkpoint-dir", str(tmp / "checkpoint"), "--part-size", PART,
            "--mirror-max-lag", "0", "--no-maintenance", "--config", str(config), *extra]


def _new_files(folder: Path, pattern: str, since: float, count: int) -> bool:
    """Whether ``folder`` holds ``count`` files matching ``pattern`` written at ``since`` or later."""
    found = 0
    for path in folder.glob(pattern):
        with contextlib.suppress(FileNotFoundError):  # a staging folder goes after its batch
            found += path.stat().st_mtime >= since
    return found >= count


def _split_transactions(lake: Path, db: str) -> int:
    """How many of ``db``'s transactions have their changes in more than one change-log file."""
    files: dict[str, set[str]] = {}
    for uri in deltalake.DeltaTable(str(lake / "_sluice" / "changes")).file_uris():
        rows = pq.read_table(uri.removeprefix("file://"), columns=["db", "gtid"]).to_pylist()
        for gtid in {r["gtid"] for r in rows if r["db"] == db}:
            files.setdefault(gtid, set()).add(uri)
    return sum(1 for held in files.values() if len(held) > 1)


def _commits_by_sluice(lake: Path, db: str) -> int:
    """How many commits of ``db``'s mirrors sluice wrote itself (a MERGE in passes)."""
    logs = (lake / db).glob("*/_delta_log/*.json")
    return sum(1 for log in logs if b'"clientVersion":"sluice-' in log.read_bytes())


def test_huge_transactions_in_parts_give_the_lake_exactly(server, tmp_path):
    db = f"bigrun_{uuid.uuid4().hex[:8]}"
    huge_table(server, db, ROWS)
    lake = tmp_path / "lake"
    tmp = tmp_path / "tmp"  # the runs' TMPDIR, where their tasks' temporary files go
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    first = subprocess.run(_run(server, lake, db, tmp_path, "--trigger", "once"), capture_output=True, timeout=600,
                           env=env)
    assert first.returncode == 0, first.stderr.decode()[-3000:]
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        status = server_binlog_status(conn)
    start = f"{status.file}:{status.pos}"
    expected = huge_transactions(server, db, ROWS, keys_move=True, alter=True)
    again = subprocess.run(_run(server, lake, db, tmp_path, "--trigger", "once"), capture_output=True, timeout=600,
                           env=env)
    assert again.returncode == 0, again.stderr.decode()[-3000:]
    assert exactly_once(server, lake, db, start) == expected
    # Parts: each huge transaction's changes are in several change-log files.
    assert _split_transactions(lake, db) >= 2
    assert _commits_by_sluice(lake, db) >= 1, "no huge batch was MERGEd in passes"
    log = deltalake.DeltaTable(str(lake / "_sluice" / "changes")).to_pyarrow_table().to_pylist()
    assert not any(r["after"] and "rolled back" in r["after"] for r in log if r["db"] == db)
    assert sum(1 for r in log if r["db"] == db and r["op"] == "ddl") == 1
    staging = lake / "_sluice" / "staging"
    assert not staging.exists() or not any(staging.rglob("*.arrow")), "a batch's staging folder stayed"
    # Nor did the rolled-back one leave a change-log file that no commit names, nor a temporary file.
    named = {uri.removeprefix("file://") for uri in deltalake.DeltaTable(str(lake / "_sluice" / "changes")).file_uris()}
    assert {str(p) for p in (lake / "_sluice" / "changes").glob("*.parquet")} == named
    assert list(tmp.iterdir()) == []


@pytest.mark.slow
def test_kill_9_inside_huge_transactions_in_parts_loses_and_repeats_nothing(server, tmp_path):
    db = f"bigrunkill_{uuid.uuid4().hex[:8]}"
    rows = 4 * ROWS
    status = huge_table(server, db, rows)
    lake = tmp_path / "lake"
    start = f"{status.file}:{status.pos}"
    first = subprocess.run(_run(server, lake, db, tmp_path, "--snapshot", "only"), capture_output=True, timeout=600)
    assert first.returncode == 0, first.stderr.decode()[-3000:]
    expected = huge_transactions(server, db, rows, keys_move=True, alter=True)
    # Each run is killed in the middle of the batch of the huge transactions: the first ones while its
    # tasks stage it (a number of files of this run in the batch's staging folder, more each time),
    # the last while the driver commits it (a data file of this run's MERGE in the mirror's folder).
    log = tmp_path / "stderr"
    times = kills(3)
    for i in range(times):
        since = time.time()
        with log.open("wb") as err:
            proc = subprocess.Popen(_run(server, lake, db, tmp_path, "--trigger", "1s"), stdout=subprocess.DEVNULL,
                                    stderr=err)
        if i < times - 1:
            parts = 1 + 8 * i
            kill_when(proc, functools.partial(_new_files, lake / "_sluice" / "staging", "*/*.arrow", since, parts),
                      f"{parts} MERGE source files of this run in the batch's staging folder", log)
        else:
            kill_when(proc, functools.partial(_new_files, lake / db / "k", "*.parquet", since, 1),
                      "a data file of this run's MERGE in the mirror's folder", log)
    final = subprocess.run(_run(server, lake, db, tmp_path, "--trigger", "once"), capture_output=True, timeout=900)
    assert final.returncode == 0, final.stderr.decode()[-3000:]
    # The snapshot holds the table before the transactions; the change log every change after it, once.
    assert exactly_once(server, lake, db, start) == expected
