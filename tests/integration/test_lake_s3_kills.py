"""kill -9 of ``sluice run`` at exact requests to a lake on S3: during maintenance and during an archive.

The lake is on the S3 test server behind a proxy (``tests.s3_proxy``) that watches every request
of the pipeline, its Spark tasks included. Each run of ``sluice run --trigger 1s`` is killed with
SIGKILL the moment one kind of request arrives, before the store receives it:

- a Delta checkpoint's write (the maintenance step ``checkpoint``);
- the commit of a compaction (``compact``; its new files are written, the commit is not);
- the copy of a dropped table's objects into the archive (the DDL step of ``DROP TABLE``);
- the deletion of a dropped table's objects once they are copied.

DML runs on the source all along. A last run (``--trigger once``) catches up; then every mirror
must equal ``SELECT``, every dropped table be archived once with its rows, and every change be in
the change log once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable

import deltalake
import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.layout import open_lake
from tests.integration.s3_kills import Killer, caught_up, changes_once, copied_to, folder, killed_at, objects_deleted
from tests.integration.workload import Workload
from tests.s3_proxy import S3Proxy, S3Request

pytestmark = [pytest.mark.spark, pytest.mark.mysql, pytest.mark.slow]

CHECKPOINT = re.compile(r"/_delta_log/\d{20}\.checkpoint\.parquet$")
DROPPED_ROWS = 20

# Maintenance due often: three small files are compacted, three commits are checkpointed, and every
# table is looked at at every batch boundary.
CONFIG = """
[maintenance]
min_small_files = 3
checkpoint_interval = 3
budget = 5
look_interval = 0
"""


def test_kill_9_during_maintenance_and_archive_on_s3_loses_and_repeats_nothing(mysql_server, s3_server, tmp_path):
    db = f"sk_{uuid.uuid4().hex[:8]}"
    lake = f"s3://{s3_server.bucket}/{db}"
    store = open_lake(lake, s3_server.storage_options())
    killer = Killer()
    proxy = S3Proxy(s3_server.port, before=killer)
    env = {**os.environ, **s3_server.env(), "AWS_ENDPOINT_URL": proxy.url}
    config = tmp_path / "sluice.toml"
    config.write_text(CONFIG)
    args = [sys.executable, "-m", "sluice.cli", "run", "--source", mysql_server.dsn("repl"), "--lake", lake,
            "--tables", rf"{db}\..*", "--checkpoint-dir", str(tmp_path / "checkpoint"), "--config", str(config)]
    with Connection.open(parse_dsn(mysql_server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        for table in ("t", "gone1", "gone2"):
            conn.execute(f"CREATE TABLE {db}.{table} (id INT PRIMARY KEY, v INT)")
            conn.execute(f"INSERT INTO {db}.{table} VALUES " + ", ".join(f"({i}, {i})" for i in range(DROPPED_ROWS)))
        first = subprocess.run([*args, "--snapshot", "only"], capture_output=True, timeout=300, env=env)
        assert first.returncode == 0, first.stderr.decode()[-3000:]
        workload = Workload(mysql_server, db, pause=0.1)
        rounds: list[tuple[str, Callable[[S3Request], bool], str | None]] = [
            ("a checkpoint's write", lambda r: r.method == "PUT" and bool(CHECKPOINT.search(r.key)), None),
            ("a compaction's commit", lambda r: r.method == "PUT" and "/_delta_log/" in r.key
             and b'"OPTIMIZE"' in r.body, None),
            ("an archive's copy", copied_to(folder(store.join("_sluice", "archive", db)) + "gone1@"),
             f"DROP TABLE {db}.gone1"),
            ("the dropped table's deletion", objects_deleted(folder(store.mirror(db, "gone2"))),
             f"DROP TABLE {db}.gone2"),
        ]
        try:
            for what, match, ddl in rounds:
                killed_at([*args, "--trigger", "1s"], env, killer, what, match,
                          lambda _proc, ddl=ddl: conn.execute(ddl) if ddl else None)
        finally:
            workload.stop()
            proxy.close()
        verdicts = caught_up(args, env, s3_server, mysql_server, store, db)
        conn.execute(f"DROP DATABASE {db}")

    assert [v.table for v in verdicts] == ["t"] and verdicts[0].ok, verdicts
    options = store.delta_options()
    for table in ("gone1", "gone2"):
        assert not list(store.keys(f"{db}/{table}/")), f"the mirror of the dropped {table} is still there"
        (archived,) = [name for name in store.folders(f"_sluice/archive/{db}") if name.startswith(f"{table}@")]
        rows = deltalake.DeltaTable(f"{lake}/_sluice/archive/{db}/{archived}", storage_options=options)
        assert rows.to_pyarrow_table().num_rows == DROPPED_ROWS, archived
    log = changes_once(store, "t", workload.tally)
    assert sorted(r["table"] for r in log if r["op"] == "ddl") == ["gone1", "gone2"]
    checkpoints = [k for k in store.keys("_sluice/changes/_delta_log") if CHECKPOINT.search("/" + k)]
    assert checkpoints, "no checkpoint of the change log was ever written"
