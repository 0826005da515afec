"""The check every pipeline test ends with: each change in the change log once, each mirror equal
to its table (``exactly_once``), and the change log's ``seq`` one number per row, growing with its
commits (``seq_in_commit_order``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import deltalake

from sluice.binlog.position import position_key
from sluice.dsn import parse_dsn
from sluice.spark.verify.check import verify_lake


def exactly_once(server, lake: Path, db: str, start: str | None, *, older_kept: bool = False) -> int:
    """Assert that the change log of ``lake`` holds every change of ``db`` since ``start`` (FILE:POS)
    once, as ``sluice tail`` reads them (a snapshot's ``read`` records aside; ``start`` None: only
    the mirrors are checked), and that every mirror of ``db`` equals SELECT; the count of changes.
    ``older_kept``: the change log also holds changes before ``start`` (a stream that went on from a
    new snapshot after its binlogs were purged), which are left out of the comparison."""
    verdicts = verify_lake(parse_dsn(server.dsn("root")), str(lake), tables=lambda d, _t: d == db)
    assert verdicts and all(v.ok for v in verdicts), verdicts
    seq_in_commit_order(Path(lake))
    if start is None:
        return 0
    tail = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--from", start, "--until-end",
         "--tables", rf"{db}\..*"], capture_output=True, timeout=300)
    assert tail.returncode == 0, tail.stderr.decode()[-3000:]
    expected = sorted((c["file"], c["pos"], c["row"]) for c in map(json.loads, tail.stdout.decode().splitlines()))
    log = deltalake.DeltaTable(str(Path(lake) / "_sluice" / "changes")).to_pyarrow_table().to_pylist()
    keys = sorted((r["file"], r["pos"], r["row"]) for r in log
                  if r["op"] not in ("ddl", "read") and r["db"] == db)
    if older_kept:
        file, _, pos = start.rpartition(":")
        keys = [k for k in keys if position_key(k[0], k[1]) >= position_key(file, int(pos))]
    assert len(keys) == len(set(keys)), "a change is in the change log twice"
    assert keys == expected, f"the change log lost changes: {len(keys)} of {len(expected)}"
    return len(keys)


def seq_in_commit_order(lake: Path, *, older_rows: int = 0) -> list[int]:
    """Assert that the change log's ``seq`` is one number per row, none null (but ``older_rows``, a
    lake's rows from before ``seq``), and that every commit adding rows numbers them above every row
    committed before it (read from the Delta log's add actions, a file's bounds in its statistics);
    the numbers, in commit order."""
    log_dir = Path(lake) / "_sluice" / "changes" / "_delta_log"
    highest: int | None = None
    for entry in sorted(log_dir.glob("*.json")):
        adds = [a["add"] for a in map(json.loads, entry.read_text().splitlines()) if "add" in a]
        bounds = [json.loads(a["stats"]) for a in adds if a.get("dataChange", True) and a.get("stats")]
        lows = [b["minValues"]["seq"] for b in bounds if b.get("numRecords") and "seq" in b.get("minValues", {})]
        highs = [b["maxValues"]["seq"] for b in bounds if b.get("numRecords") and "seq" in b.get("maxValues", {})]
        if lows:
            assert highest is None or min(lows) > highest, f"{entry.name} numbers rows at or below {highest}"
            highest = max(highs)
    seqs = deltalake.DeltaTable(str(Path(lake) / "_sluice" / "changes")).to_pyarrow_table().column("seq").to_pylist()
    numbered = [s for s in seqs if s is not None]
    assert len(seqs) - len(numbered) == older_rows, "change-log rows without a seq"
    assert len(set(numbered)) == len(numbered), "two change-log rows with one seq"
    return sorted(numbered)
