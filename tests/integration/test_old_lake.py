"""A lake written by sluice before lakes could live on object storage, continued in place.

``tests/data/old-lake/`` keeps such a lake (``tools/capture_old_lake.py``): Spark's checkpoint
inside it with offsets in their old JSON form, change-log commits without the stream's position,
no pending changes. A fresh MariaDB sandbox replays the SQL that lake was written from, which
brings its binlog to the same positions, and more changes follow, DDL among them. The sluice of
this checkout then runs on the lake as it is: it must go on from where the lake stands, with no
snapshot taken again, every change in the change log once, and every mirror equal to ``SELECT``.
"""

from __future__ import annotations

import collections
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sluice.dsn import parse_dsn
from sluice.errors import ConfigError
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.verify.check import verify_lake
from tests.integration.exactly_once import seq_in_commit_order

pytestmark = [pytest.mark.spark, pytest.mark.mariadb]

DATA = Path(__file__).resolve().parents[1] / "data" / "old-lake"

# After the old lake's last batch: DML on every table, a DDL that rewrites a mirror, a rename.
AFTER = """
INSERT INTO oldlake.items (id, name, qty, price) VALUES (6, 'lime', 1, '0.30');
UPDATE oldlake.items SET qty = 0 WHERE id = 5;
DELETE FROM oldlake.items WHERE id = 1;
INSERT INTO oldlake.notes VALUES ('fourth', 4);
DELETE FROM oldlake.notes WHERE n = 1;
ALTER TABLE oldlake.items DROP COLUMN origin;
UPDATE oldlake.items SET name = 'pear!' WHERE id = 2;
INSERT INTO oldlake.later VALUES (3, 9);
RENAME TABLE oldlake.later TO oldlake.renamed;
INSERT INTO oldlake.renamed VALUES (4, 16);
"""
# The change-log rows AFTER adds: (op, table) -> count.
AFTER_ROWS = {("insert", "items"): 1, ("update", "items"): 2, ("delete", "items"): 1, ("insert", "notes"): 1,
              ("delete", "notes"): 1, ("ddl", "items"): 1, ("insert", "later"): 1, ("ddl", "later"): 1,
              ("insert", "renamed"): 1}


def _position(server: Any) -> dict[str, Any]:
    file, pos = server.sql("SHOW MASTER STATUS").split("\t")[:2]
    return {"file": file, "pos": int(pos), "gtid": server.sql("SELECT @@gtid_binlog_pos")}


def _log(lake: Path) -> list[dict[str, Any]]:
    return DeltaTable(str(lake / "_sluice" / "changes")).to_pyarrow_table().to_pylist()


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    """What makes one change one change: where the server wrote it, and its row in the event."""
    return row["op"], row["db"], row["table"], row["file"], row["pos"], row["row"]


def _history(lake: Path, table: str) -> list[dict[str, Any]]:
    return DeltaTable(str(lake / "oldlake" / table)).history()


@pytest.fixture(scope="module")
def replayed(module_sandbox_factory: Any) -> Any:
    """A fresh MariaDB that ran the SQL the old lake was written from, at the same positions, then ``AFTER``."""
    manifest = json.loads((DATA / "manifest.json").read_text())
    server = module_sandbox_factory("mariadb")
    server.sql((DATA / "setup.sql").read_text())
    assert _position(server) == manifest["after_setup"], (
        f"MariaDB {server.version} wrote setup.sql to other positions than {manifest['server']} did: "
        "make the lake again with tools/capture_old_lake.py")
    server.sql((DATA / "stream.sql").read_text())
    assert _position(server) == manifest["end"], f"stream.sql: other positions than {manifest['server']}'s"
    server.sql(AFTER)
    return server, manifest


def _old_lake(tmp_path: Path) -> Path:
    with tarfile.open(DATA / "lake.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "lake"


def test_a_lake_of_the_old_layout_goes_on_in_place_exactly_once(spark, replayed, tmp_path):
    server, manifest = replayed
    lake = _old_lake(tmp_path)
    old_log = _log(lake)
    items_version = DeltaTable(str(lake / "oldlake" / "items")).version()
    assert old_log and not (lake / "_sluice" / "pending").exists()

    config = PipelineConfig(source=server.dsn("repl"), lake=str(lake), tables=manifest["tables"], trigger="once")
    stats = Pipeline(config).run(handle_signals=False)
    assert stats.rows == sum(AFTER_ROWS.values()) - 2, stats  # the two DDLs are not rows

    log = _log(lake)
    keys = collections.Counter(_key(r) for r in log)
    assert [k for k, n in keys.items() if n > 1] == [], "changes in the change log more than once"
    assert {_key(r) for r in old_log} <= set(keys), "the old lake's changes are no longer all there"
    added = collections.Counter((r["op"], r["table"]) for r in log) - collections.Counter(
        (r["op"], r["table"]) for r in old_log)
    assert dict(added) == AFTER_ROWS
    # Not snapshotted again: the keyless table's snapshot rows (``read``) are the old lake's, and the
    # mirror's new commits are the batches' own, none a snapshot's table creation.
    reads = [{k: v for k, v in r.items() if k != "seq"} for r in log if r["op"] == "read"]  # seq: new since
    assert reads == [r for r in old_log if r["op"] == "read"]
    new = [c for c in _history(lake, "items") if c["version"] > items_version]
    assert all(c.get("operation") != "CREATE TABLE" for c in new), new

    verdicts = verify_lake(parse_dsn(server.dsn("root")), str(lake), tables=lambda d, _t: d == "oldlake")
    assert {v.table for v in verdicts if v.compared} == {"items", "renamed"}, verdicts
    assert {v.table for v in verdicts if not v.compared} == {"notes"}, verdicts  # no key: no mirror to compare
    assert all(v.ok for v in verdicts if v.compared), [v for v in verdicts if not v.ok]
    # The change log gained ``seq``: null in the old rows, numbered from 0 in commit order in the new.
    assert seq_in_commit_order(lake, older_rows=len(old_log)) == list(range(len(log) - len(old_log)))

    again = Pipeline(config).run(handle_signals=False)
    assert again.rows == 0 and len(_log(lake)) == len(log)


def test_an_old_lake_without_its_checkpoint_is_refused_until_told_where_to_go_on(spark, replayed, tmp_path):
    """The old change log does not say where its stream stands: with Spark's checkpoint gone, starting
    over would write its changes twice, so the pipeline refuses and names the newest change; given
    that position's transaction end with ``--from``, it goes on exactly once."""
    server, manifest = replayed
    lake = _old_lake(tmp_path)
    shutil.rmtree(lake / "_sluice" / "checkpoint")
    old_log = _log(lake)
    config = PipelineConfig(source=server.dsn("repl"), lake=str(lake), tables=manifest["tables"], trigger="once")
    newest = max((r for r in old_log if r["file"]), key=lambda r: (r["file"], r["pos"]))
    with pytest.raises(ConfigError, match="holds the stream's batches up to batch") as refused:
        Pipeline(config)
    assert f"{newest['file']}:{newest['pos']}" in str(refused.value) and "--from" in str(refused.value)

    end = manifest["end"]  # the old lake's stream read to the end of the binlog of stream.sql
    told = PipelineConfig(source=server.dsn("repl"), lake=str(lake), tables=manifest["tables"], trigger="once",
                          starting_position=f"{end['file']}:{end['pos']}")
    assert Pipeline(told).run(handle_signals=False).rows == sum(AFTER_ROWS.values()) - 2
    keys = collections.Counter(_key(r) for r in _log(lake))
    assert [k for k, n in keys.items() if n > 1] == [], "changes in the change log more than once"
