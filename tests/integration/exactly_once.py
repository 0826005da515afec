"""The check every pipeline test ends with: each change in the change log once, each mirror equal
to its table (``exactly_once``), and the change log's ``seq`` one number per row, growing with its
commits (``seq_in_commit_order``); and the waits of a test that runs ``sluice run`` in the
background until the lake has caught up (``changes_in_log``, ``wait_for``)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import deltalake
import pytest

from sluice.binlog.position import position_key
from sluice.dsn import parse_dsn
from sluice.spark.verify.check import verify_lake


def exactly_once(server, lake: Path, db: str, start: str | None, *, older_kept: bool = False,
                 across_servers: bool = False, after_gtids: bool = False, columns: Any = None) -> int:
    """Assert that the change log of ``lake`` holds every change of ``db`` since ``start`` (FILE:POS)
    once, as ``sluice tail`` reads them (a snapshot's ``read`` records aside; ``start`` None: only
    the mirrors are checked), and that every mirror of ``db`` equals SELECT; the count of changes.

    ``older_kept``: the change log also holds changes before ``start`` (a stream that went on from a
    new snapshot after its binlogs were purged), which are left out of the comparison.
    ``across_servers``: the lake was written on more than one server (a failover), whose binlog
    files and offsets differ, so changes are matched by their transaction's GTID and their place in
    it; ``server`` is the last one, and its binlog from ``start`` must hold every change of ``db``
    (``log_replica_updates``). ``after_gtids``: ``start`` is a GTID set, the changes are those after it.
    ``columns``: the ``ColumnRules`` the lake is written with, which verify compares by."""
    verdicts = verify_lake(parse_dsn(server.dsn("root")), str(lake), tables=lambda d, _t: d == db, columns=columns)
    assert verdicts and all(v.ok for v in verdicts), verdicts
    seq_in_commit_order(Path(lake))
    if start is None:
        return 0
    tail = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--gtid" if after_gtids else "--from", start,
         "--until-end",
         "--tables", rf"{db}\..*"], capture_output=True, timeout=300)
    assert tail.returncode == 0, tail.stderr.decode()[-3000:]
    log = deltalake.DeltaTable(str(Path(lake) / "_sluice" / "changes")).to_pyarrow_table().to_pylist()
    taken = [r for r in log if r["op"] not in ("ddl", "read") and r["db"] == db]
    if older_kept:
        file, _, pos = start.rpartition(":")
        taken = [r for r in taken if position_key(r["file"], r["pos"]) >= position_key(file, int(pos))]
    expected = _keys(map(json.loads, tail.stdout.decode().splitlines()), across_servers)
    keys = _keys(taken, across_servers)
    assert len(keys) == len(set(keys)), "a change is in the change log twice"
    assert keys == expected, f"the change log lost changes: {len(keys)} of {len(expected)}"
    return len(keys)


def _keys(changes: Iterable[Mapping[str, Any]], by_gtid: bool) -> list[tuple[Any, ...]]:
    """``(file, pos, row)`` of each change, or ``(gtid, n, op, table)``: the n-th change of its
    transaction, which every server that logged the transaction numbers alike."""
    if not by_gtid:
        return sorted((c["file"], c["pos"], c["row"]) for c in changes)
    per_transaction: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for c in changes:
        assert c["gtid"], f"a change without a GTID: {c}"
        per_transaction[c["gtid"]].append(c)
    return sorted((gtid, n, c["op"], c["table"]) for gtid, group in per_transaction.items()
                  for n, c in enumerate(sorted(group, key=lambda c: (c["file"], c["pos"], c["row"]))))


def seq_in_commit_order(lake: Path, *, older_rows: int = 0) -> list[int]:
    """Assert that the change log's ``seq`` is one number per row, none null (but ``older_rows``, a
    lake's rows from before ``seq``), and that every commit adding rows numbers them above every row
    committed before it (read from the Delta log's add actions, a file's bounds in its statistics);
    the numbers, in commit order."""
    log_dir = Path(lake) / "_sluice" / "changes" / "_delta_log"
    if not log_dir.is_dir():  # no batch committed yet (a snapshot's keyed rows go to the mirrors)
        return []
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


def changes_in_log(lake: Path, db: str, op: str = "insert") -> int:
    """How many changes of ``db`` with ``op`` the lake's change log holds (-1 before it exists)."""
    try:
        return deltalake.DeltaTable(str(lake / "_sluice" / "changes")).to_pyarrow_table(
            filters=[("db", "=", db), ("op", "=", op)]).num_rows
    except Exception:
        return -1


def wait_for(done: Callable[[], bool], proc: subprocess.Popen[str], timeout: float, every: float = 1.0) -> None:
    """Wait until ``done()``; fail with its stderr if ``proc`` (a ``sluice run``) ends first."""
    deadline = time.monotonic() + timeout
    while not done():
        if proc.poll() is not None:
            pytest.fail(f"sluice run ended: {proc.communicate()[1][-4000:]}")
        assert time.monotonic() < deadline, f"not within {timeout}s"
        time.sleep(every)
