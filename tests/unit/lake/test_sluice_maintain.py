"""``sluice maintain`` on a lake of real Delta tables written by the pipeline's own committer
(``DeltaLake.write_batch``: a MERGE per mirror and the change log, each commit with its batch's app
transaction), no server and no Spark:

- ``--dry-run`` changes nothing, a retention below 7 days is refused in one line, a real run
  compacts and checkpoints every table and keeps its rows;
- killed with SIGKILL at random moments, it leaves every table readable with the same rows, and
  the writer then goes on exactly once: a batch replayed after the kills is skipped, new ones land.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sluice.lake.layout import open_lake
from sluice.lake.sink import DeltaLake
from tests.unit.lake.test_sink import Log, items

pytestmark = pytest.mark.unit

SLUICE = [sys.executable, "-m", "sluice.cli"]


def _batches(lake: DeltaLake, log: Log, model: dict[int, dict[str, Any]], first: int, count: int,
             rng: random.Random) -> int:
    """``count`` batches of inserts, updates and deletes, applied to ``model`` too; how many changes."""
    total = 0
    for batch_id in range(first, first + count):
        changes = []
        for _ in range(5):
            key = rng.randint(1, 60)
            row = {"id": key, "name": f"n{batch_id}-{key}", "qty": rng.randint(0, 99)}
            if key not in model:
                changes.append(log.insert(**row))
                model[key] = row
            elif rng.random() < 0.2:
                changes.append(log.delete(**model.pop(key)))
            else:
                changes.append(log.update(model[key], row))
                model[key] = row
        lake.write_batch(batch_id, [items(changes)])
        total += len(changes)
    return total


def _rows(lake: DeltaLake) -> list[dict[str, Any]]:
    return sorted(DeltaTable(lake.table_path("shop", "items")).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def _files(root: str) -> dict[str, int]:
    return {t.name: len(DeltaTable(t.uri).file_uris()) for t in open_lake(root).tables()}


def test_sluice_maintain_dry_run_refusal_and_run(tmp_path: Path) -> None:
    lake, log, model, rng = DeltaLake(tmp_path / "lake", "app"), Log(), {}, random.Random(3)
    _batches(lake, log, model, 0, 30, rng)
    root = lake.root
    before = _files(root)
    assert before["_sluice.changes"] == 30, before  # the mirror's MERGEs rewrite the files they change
    versions = {t.name: DeltaTable(t.uri).version() for t in open_lake(root).tables()}

    dry = subprocess.run([*SLUICE, "maintain", "--lake", root, "--dry-run"], capture_output=True, text=True,
                         timeout=300)
    assert dry.returncode == 0, dry.stderr
    assert "[2/2] _sluice.changes: would compact 30 small files" in dry.stdout, dry.stdout
    assert dry.stdout.splitlines()[-1].startswith("dry run: nothing changed (2 tables")
    assert {t.name: DeltaTable(t.uri).version() for t in open_lake(root).tables()} == versions

    short = subprocess.run([*SLUICE, "maintain", "--lake", root, "--retention", "24"], capture_output=True,
                           text=True, timeout=300)
    assert short.returncode == 1
    assert short.stderr.strip().splitlines() == [
        "sluice: error: --retention 24 is below Delta's default of 168 hours (7 days): a reader or writer still "
        "using an older version (a time-travel or change-feed read, a running pipeline's batch) would find its "
        "files deleted. Add --allow-short-retention to do it anyway"]

    run = subprocess.run([*SLUICE, "maintain", "--lake", root], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == f"maintaining 2 tables of {root}"
    assert len(lines) == 4 and lines[-1].startswith("maintained 2 tables"), lines
    assert lines[1].startswith("[1/2] shop.items: ")
    assert lines[2].startswith("[2/2] _sluice.changes: compacted 30 files into 1"), lines
    assert all("checkpoint at version" in line for line in lines[1:3]), lines
    assert _files(root) == {"shop.items": 1, "_sluice.changes": 1}
    assert _rows(lake) == sorted(model.values(), key=lambda r: r["id"])
    assert lake.committed_batch() == 29
    missing = subprocess.run([*SLUICE, "maintain", "--lake", str(tmp_path / "nothing")], capture_output=True,
                             text=True, timeout=300)
    assert missing.returncode == 1 and missing.stderr.startswith("sluice: error: --lake ")
    assert "no Delta tables there" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_kill_9_during_sluice_maintain_then_the_writer_goes_on_exactly_once(tmp_path: Path) -> None:
    lake, log, model, rng = DeltaLake(tmp_path / "lake", "app"), Log(), {}, random.Random(17)
    maintain = [*SLUICE, "maintain", "--lake", lake.root, "--retention", "0", "--allow-short-retention"]
    next_batch, killed, written = 0, 0, 0
    for _ in range(3):  # rounds: small files, then kills of sluice maintain at random moments
        written += _batches(lake, log, model, next_batch, 25, rng)
        next_batch += 25
        expected = sorted(model.values(), key=lambda r: r["id"])
        changes = DeltaTable(lake.changelog_path).count()
        for _ in range(3):
            proc = subprocess.Popen(maintain, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            assert proc.stdout is not None
            proc.stdout.readline()  # "maintaining N tables of ...": the steps begin now
            time.sleep(rng.uniform(0.0, 0.2))  # into a step of the first table
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                killed += 1
            proc.wait()
            proc.stdout.close()
            assert _rows(lake) == expected  # every table reads, with the same rows
            assert DeltaTable(lake.changelog_path).count() == changes
            assert lake.committed_batch() == next_batch - 1  # the app transactions survive
        # A batch replayed after the kills is skipped where it was written: nothing twice.
        again = lake.write_batch(next_batch - 1, [items([log.insert(id=1000, name="twice", qty=0)])])
        assert again.changelog_skipped and again.skipped == ("shop.items",)
    assert killed >= 3, "sluice maintain always ended before its kill: give it more to do"
    assert _rows(lake) == sorted(model.values(), key=lambda r: r["id"])
    logged = DeltaTable(lake.changelog_path).to_pyarrow_table(columns=["pos"])["pos"].to_pylist()
    assert len(logged) == len(set(logged)) == written  # every change once
