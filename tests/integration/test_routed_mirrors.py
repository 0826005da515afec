"""Sharded tables routed into one mirror (``--route``) through ``sluice run --trigger 1s`` on real
servers and real Spark, one pipeline per flavor checking it all: the snapshot and the stream of two
shards whose keys overlap into one mirror with ``_source_db`` / ``_source_table``, an ADD COLUMN on
one shard (NULL for the other's rows), a ``kill -9`` of the run mid-stream and a restart that ends
exact (the mirror equals the union of the shards' SELECTs, every change once in the change log with
its own source table), then a type change one shard does not share and, in a lake of its own, two
shards with different keys: each stops with one line naming both definitions and both tables."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import deltalake
import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.spark.verify.check import verify_lake
from tests.integration.exactly_once import changes_in_log, exactly_once, wait_for
from tests.integration.workload import Workload

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _run(server: Any, db: str, lake: Path, *more: str) -> list[str]:
    return [sys.executable, "-m", "sluice.cli", "run", "--source", server.dsn("repl"), "--lake", str(lake),
            "--tables", rf"{db}_[0-9]\.orders", "--route", rf"{db}_([0-9])\.orders={db}.orders", *more]


def _mirror(lake: Path, db: str) -> list[dict[str, Any]]:
    return deltalake.DeltaTable(str(lake / db / "orders")).to_pyarrow_table().to_pylist()


def _refused(server: Any, db: str, lake: Path, *more: str) -> str:
    """The one error line of a ``sluice run`` that must stop."""
    done = subprocess.run(_run(server, db, lake, "--trigger", "once", *more), capture_output=True, timeout=600)
    text = done.stderr.decode()
    assert done.returncode == 1, text[-3000:]
    lines = [t for t in text.splitlines() if t.startswith("sluice: error:")]
    assert len(lines) == 1, text[-3000:]
    return lines[0]


def _caught_up(lake: Path, db: str, tally: Any, more_updates: int = 0) -> bool:
    """Whether the change log holds every change of the writer on ``db`` (and ``more_updates``)."""
    return all(changes_in_log(lake, db, op) == tally[op] + (more_updates if op == "update" else 0)
               for op in ("insert", "update", "delete"))


def test_shards_routed_into_one_mirror_through_kill_9_and_ddl(server, tmp_path):
    db = f"rt_{uuid.uuid4().hex[:8]}"
    lake = tmp_path / "lake"
    shards = [f"{db}_1", f"{db}_2"]
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        for shard in shards:
            conn.execute(f"CREATE DATABASE {shard}")
            conn.execute(f"CREATE TABLE {shard}.orders (id INT PRIMARY KEY, v INT)")
            conn.execute(f"INSERT INTO {shard}.orders VALUES (1, 1), (2, 2), (3, 3)")  # equal keys in both
        proc = subprocess.Popen(_run(server, db, lake, "--trigger", "1s"), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: (lake / db / "orders" / "_delta_log").is_dir() and len(_mirror(lake, db)) == 6,
                     proc, 300)
            one, two = Workload(server, shards[0], table="orders"), Workload(server, shards[1], table="orders")
            wait_for(lambda: changes_in_log(lake, shards[0]) > 20 and changes_in_log(lake, shards[1]) > 20, proc, 300)
            one.stop()  # its inserts name two columns: the shard gains a third
            conn.execute(f"ALTER TABLE {shards[0]}.orders ADD COLUMN note VARCHAR(20)")
            conn.execute(f"UPDATE {shards[0]}.orders SET note = 'first' WHERE id <= 2")
            wait_for(lambda: changes_in_log(lake, shards[0], "update") >= one.tally["update"] + 2, proc, 300)
            proc.send_signal(signal.SIGKILL)  # mid-stream: shard 2's writer goes on
            proc.wait(60)
            conn.execute(f"UPDATE {shards[0]}.orders SET note = 'second' WHERE id = 1")
            proc = subprocess.Popen(_run(server, db, lake, "--trigger", "1s"), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            before = changes_in_log(lake, shards[1])
            wait_for(lambda: changes_in_log(lake, shards[1]) > before + 20, proc, 300)
            two.stop()
            wait_for(lambda: _caught_up(lake, shards[0], one.tally, 3) and _caught_up(lake, shards[1], two.tally),
                     proc, 300)

            # the restarted run, idle now, ended exact
            for shard in shards:  # each shard's share of the mirror equals its SELECT
                exactly_once(server, lake, shard, None)  # (a tail from before the ALTER would need FULL metadata)
            verdicts = verify_lake(parse_dsn(server.dsn("root")), str(lake))  # the lake's routes, the mirror too
            assert sorted(v.name for v in verdicts) == sorted([f"{db}.orders", *(f"{s}.orders" for s in shards)])
            assert all(v.ok for v in verdicts), verdicts
            rows = _mirror(lake, db)
            by_source = {(r["_source_db"], r["_source_table"], r["id"]): r for r in rows}
            assert len(by_source) == len(rows)
            assert by_source[(shards[0], "orders", 1)]["note"] == "second"
            assert by_source[(shards[0], "orders", 2)]["note"] == "first"
            assert by_source[(shards[1], "orders", 1)]["note"] is None  # the other shard has no such column
            assert by_source[(shards[1], "orders", 1)]["v"] == 1 and by_source[(shards[0], "orders", 1)]["v"] == 1
            union = sum(int(conn.query(f"SELECT COUNT(*) FROM {s}.orders").rows[0][0]) for s in shards)
            assert len(rows) == union
            said = subprocess.run([sys.executable, "-m", "sluice.cli", "verify", "--source", server.dsn("root"),
                                   "--lake", str(lake)], capture_output=True, text=True, timeout=300)
            assert said.returncode == 0, said.stdout + said.stderr  # each row counted once, on its shard's line
            assert f"all 3 tables equal the source ({union} rows)" in said.stdout, said.stdout
            log = deltalake.DeltaTable(str(lake / "_sluice" / "changes")).to_pyarrow_table(
                columns=["db", "table", "op", "file", "pos", "row"]).to_pylist()
            assert {(r["db"], r["table"]) for r in log if r["op"] != "ddl"} == {(s, "orders") for s in shards}
            places = [(r["file"], r["pos"], r["row"]) for r in log if r["op"] != "ddl"]
            assert len(places) == len(set(places))  # each change once across the kill, and every one of the
            assert _caught_up(lake, shards[0], one.tally, 3) and _caught_up(lake, shards[1], two.tally)  # writers'

            # a type change the other shard does not share stops the running pipeline at its batch
            conn.execute(f"ALTER TABLE {shards[1]}.orders MODIFY v VARCHAR(10)")
            text = proc.communicate(timeout=300)[1]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(60)
        assert proc.returncode == 1, text[-3000:]
        (line,) = [t for t in text.splitlines() if t.startswith("sluice: error:")]
        assert f"column v of the routed mirror {db}.orders" in line, line
        assert re.search(rf"is int\S* in {shards[0]}\.orders but varchar\(10\)[^,]* in {shards[1]}\.orders", line), line

        conn.execute(f"CREATE DATABASE {db}_3")
        conn.execute(f"CREATE TABLE {db}_3.orders (id INT, line INT, PRIMARY KEY (id, line))")
        line = _refused(server, db, tmp_path / "keys")
        assert f"{db}_3.orders (primary key id, line)" in line and "(primary key id)" in line, line
        assert not (tmp_path / "keys" / db).exists()  # refused before a mirror was made
        for shard in (*shards, f"{db}_3"):
            conn.execute(f"DROP DATABASE {shard}")
