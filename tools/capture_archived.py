"""Regenerate the archived binlog files in tests/data/archived/ from throwaway sandbox servers.

Usage (from the repository root, with sluice installed in the environment)::

    python tools/capture_archived.py                 # both flavors
    python tools/capture_archived.py --flavor mysql  # one flavor

Each flavor's sandbox keeps its default ``binlog_row_metadata`` (MariaDB NO_LOG: no optional
metadata at all, as MySQL 5.7 writes; MySQL MINIMAL: signedness and charsets, no names). The
tables are created in one binlog file; the workload below runs in the next, which is copied to
``tests/data/archived/<flavor>-<metadata>.binlog``: a file whose CREATE TABLE statements are
not in it, as in an archive whose older files were purged. Then the table ``arch.later`` gets a
column, and ``mysqldump --no-data`` (``mariadb-dump``) of the database is saved next to it as
``<flavor>-<metadata>.sql``: a schema in which ``arch.items`` still fits the file and
``arch.later`` no longer does. The values the unit tests expect are the ones of the SQL below.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from capture_golden import run_captures  # beside this file

from sluice.sandbox.server import Sandbox

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "archived"
METADATA = {"mariadb": "nolog", "mysql": "minimal"}

TABLES = """
CREATE DATABASE arch;
CREATE TABLE arch.items (
    id INT UNSIGNED PRIMARY KEY, qty INT, big BIGINT UNSIGNED, price DECIMAL(8,2),
    name VARCHAR(30) CHARACTER SET utf8mb4, code VARBINARY(8), note TEXT CHARACTER SET utf8mb4,
    data BLOB, kind ENUM('a','b','c'), made DATETIME(3)
) DEFAULT CHARSET=utf8mb4;
CREATE TABLE arch.later (id INT PRIMARY KEY, v VARCHAR(10)) DEFAULT CHARSET=utf8mb4;
"""

WORKLOAD = """
SET NAMES utf8mb4;
INSERT INTO arch.items VALUES
    (1, -5, 18446744073709551615, '12.50', 'café ✓', X'FF00FE', '日本', X'DEADBEEF', 'b', '2024-01-02 03:04:05.678'),
    (4294967295, 2147483647, 0, '-0.01', '', X'', '', X'', 'a', NULL);
UPDATE arch.items SET qty = qty + 1, name = 'tea' WHERE id = 1;
DELETE FROM arch.items WHERE id = 4294967295;
INSERT INTO arch.later VALUES (1, 'x');
"""

AFTER = "ALTER TABLE arch.later ADD COLUMN extra INT"


def capture(flavor: str, out_dir: Path) -> None:
    with Sandbox.start(flavor) as server:  # type: ignore[arg-type]
        print(f"{flavor} {server.version}", file=sys.stderr)
        server.sql(TABLES)
        server.sql("FLUSH BINARY LOGS")
        server.sql(WORKLOAD)
        current = server.binlog_files()[-1]
        server.sql("FLUSH BINARY LOGS")
        server.sql(AFTER)
        stem = f"{flavor}-{METADATA[flavor]}"
        shutil.copyfile(server.binlog_dir / current, out_dir / f"{stem}.binlog")
        dump = subprocess.run(server.dump_tool_argv("--no-data", "--skip-dump-date", "arch"),
                              capture_output=True, check=True)
        (out_dir / f"{stem}.sql").write_bytes(dump.stdout)
        print(f"  {stem}.binlog, {stem}.sql", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(run_captures(capture, DATA, "archived binlog files of tests/data/archived"))
