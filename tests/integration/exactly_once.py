"""The check every pipeline test ends with: each change in the change log once, each mirror equal
to its table (``exactly_once``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import deltalake

from sluice.dsn import parse_dsn
from sluice.spark.verify.check import verify_lake


def exactly_once(server, lake: Path, db: str, start: str | None) -> int:
    """Assert that the change log of ``lake`` holds every change of ``db`` since ``start`` (FILE:POS)
    once, as ``sluice tail`` reads them (a snapshot's ``read`` records aside; ``start`` None: only
    the mirrors are checked), and that every mirror of ``db`` equals SELECT; the count of changes."""
    verdicts = verify_lake(parse_dsn(server.dsn("root")), str(lake), tables=lambda d, _t: d == db)
    assert verdicts and all(v.ok for v in verdicts), verdicts
    if start is None:
        return 0
    tail = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "tail", server.dsn("repl"), "--from", start, "--until-end",
         "--tables", rf"{db}\..*"], capture_output=True, timeout=300, check=True)
    expected = sorted((c["file"], c["pos"], c["row"]) for c in map(json.loads, tail.stdout.decode().splitlines()))
    log = deltalake.DeltaTable(str(Path(lake) / "_sluice" / "changes")).to_pyarrow_table().to_pylist()
    keys = sorted((r["file"], r["pos"], r["row"]) for r in log
                  if r["op"] not in ("ddl", "read") and r["db"] == db)
    assert len(keys) == len(set(keys)), "a change is in the change log twice"
    assert keys == expected, f"the change log lost changes: {len(keys)} of {len(expected)}"
    return len(keys)
