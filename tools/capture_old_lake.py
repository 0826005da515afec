"""Regenerate tests/data/old-lake/: a lake written by sluice before lakes could live on object storage.

Usage (from the root of a git checkout, with sluice installed in the environment)::

    python tools/capture_old_lake.py                     # sluice at REVISION writes the lake
    python tools/capture_old_lake.py --revision abc1234  # another revision

``tests/integration/test_old_lake.py`` continues this lake with the sluice of the checkout: the
layout of ``LAKE/_sluice/`` of that time (Spark's checkpoint inside the lake, offsets in their old
JSON form, no position in the change log's commits, no pending changes) must be read as it is, the
tables never snapshotted again, and every change land once.

The script checks out ``REVISION`` in a temporary git worktree and runs its ``sluice run`` (on
the Python twins: the worktree has no compiled core) against a throwaway MariaDB sandbox with the
server's defaults:

1. ``setup.sql`` (a table with a primary key, one without), then ``sluice run --trigger once``:
   the initial snapshot;
2. ``stream.sql`` (inserts, updates, deletes, ADD COLUMN, a new table), then ``sluice run
   --trigger once`` again: streamed batches.

The lake, Spark's checkpoint included, becomes ``lake.tar.gz``; ``manifest.json`` records the
revision, the server, and the binlog position after each step, which a server replaying the same
SQL on the same release reaches again (MariaDB's positions and GTIDs do not depend on a server
UUID or on time).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from sluice.sandbox.server import Sandbox

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "old-lake"
REVISION = "d023723"  # the last revision whose lake had to be a path
TABLES = r"oldlake\..*"


def position(server: Sandbox) -> dict[str, object]:
    """The server's binlog file, position and GTID position now."""
    file, pos = server.sql("SHOW MASTER STATUS").split("\t")[:2]
    return {"file": file, "pos": int(pos), "gtid": server.sql("SELECT @@gtid_binlog_pos")}


def run_old(src: Path, server: Sandbox, lake: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(src))
    argv = [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("repl"), "--lake", str(lake),
            "--tables", TABLES, "--trigger", "once"]
    subprocess.run(argv, env=env, check=True, cwd=src.parent)


def neutral_paths(lake: Path) -> None:
    """delta-rs records where a table was created in its first commit's ``commitInfo``: name it
    ``/lake`` instead of the temporary folder (nothing reads it back)."""
    for log in lake.rglob("_delta_log/*.json"):
        log.write_text(log.read_text().replace(str(lake), "/lake"))


def pack(lake: Path) -> None:
    with tarfile.open(DATA / "lake.tar.gz", "w:gz") as tar:
        for path in sorted(lake.rglob("*")):
            tar.add(path, arcname=str(Path("lake") / path.relative_to(lake)), recursive=False)


def capture(revision: str) -> None:
    with tempfile.TemporaryDirectory(prefix="old-lake-") as tmp:
        worktree, lake = Path(tmp) / "sluice", Path(tmp) / "lake"
        subprocess.run(["git", "worktree", "add", "--detach", str(worktree), revision], cwd=ROOT, check=True)
        try:
            with Sandbox.start("mariadb") as server:
                print(f"mariadb {server.version}, sluice {revision}", file=sys.stderr)
                server.sql((DATA / "setup.sql").read_text())
                after_setup = position(server)
                run_old(worktree / "src", server, lake)
                server.sql((DATA / "stream.sql").read_text())
                end = position(server)
                run_old(worktree / "src", server, lake)
                version = server.version
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=True)
        neutral_paths(lake)
        pack(lake)
    manifest = {"revision": revision, "flavor": "mariadb", "server": version, "tables": TABLES,
                "after_setup": after_setup, "end": end}
    (DATA / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"  lake.tar.gz, manifest.json in {DATA.relative_to(ROOT)}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--revision", default=REVISION, help=f"the sluice revision that writes the lake "
                                                             f"(default {REVISION})")
    capture(parser.parse_args().revision)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
