"""Delta's Change Data Feed of the mirrors, read back with delta-rs' ``load_cdf`` after the pipeline
ran on a real server: the snapshot's append, the first batch into an empty mirror (an append of
data files), a MERGE of inserts, updates and deletes, and a DDL's rewrite each read back as what
they changed, and a batch's MERGE as exactly its net changes."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.maintenance.change_feed import has_change_feed
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig

pytestmark = pytest.mark.spark


def _feed(path: str, start: int, end: int | None = None) -> list[tuple[Any, ...]]:
    dt = DeltaTable(path)
    feed = pa.table(dt.load_cdf(starting_version=start, ending_version=end).read_all())
    names = [n for n in feed.column_names if not n.startswith("_")]
    return sorted((r["_change_type"], *(r[n] for n in names)) for r in feed.to_pylist())


def _run_readme_readers(changes: pa.Table, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's DuckDB and Polars lines, as written, on a batch's change feed."""
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = text[text.index("# DuckDB and Polars, on that Arrow table"):text.index("# Spark with Delta Lake's own")]
    capsys.readouterr()
    namespace: dict[str, Any] = {"changes": changes}
    exec(compile(block, "README.md", "exec"), namespace)
    shown = capsys.readouterr().out
    assert "update_postimage" in shown and "insert" in shown and "delete" in shown
    assert namespace["pl"].from_arrow(changes).filter(
        namespace["pl"].col("_change_type") == "update_postimage").height == 3


def test_the_mirrors_change_feed_gives_each_batchs_net_changes(server, tmp_path, capsys):
    db = f"cdf_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    config = PipelineConfig(source=server.dsn("root"), lake=lake, tables=rf"{db}\..*", trigger="once",
                            snapshot="initial")
    t, u = f"{lake}/{db}/t", f"{lake}/{db}/u"
    with Connection.open(parse_dsn(server.dsn("root"))) as conn:
        conn.execute(f"CREATE DATABASE {db}")
        conn.execute(f"CREATE TABLE {db}.t (id INT PRIMARY KEY, name VARCHAR(20))")
        conn.execute(f"INSERT INTO {db}.t VALUES " + ", ".join(f"({i}, 'd{i}')" for i in range(1, 6)))
        Pipeline(config).run(handle_signals=False)  # the snapshot appends the rows
        assert has_change_feed(DeltaTable(t))
        assert _feed(t, 0) == [("insert", i, f"d{i}") for i in range(1, 6)]
        before = DeltaTable(t).version()

        conn.execute(f"CREATE TABLE {db}.u (id INT PRIMARY KEY, name VARCHAR(20))")
        conn.execute("BEGIN")  # one transaction: one batch
        for sql in (f"INSERT INTO {db}.t VALUES (6, 'd6'), (7, 'd7')",
                    f"UPDATE {db}.t SET name = 'one' WHERE id = 1", f"UPDATE {db}.t SET name = 'two' WHERE id = 2",
                    f"DELETE FROM {db}.t WHERE id = 3",
                    f"INSERT INTO {db}.t VALUES (8, 'd8')", f"UPDATE {db}.t SET name = 'eight' WHERE id = 8",
                    f"UPDATE {db}.t SET name = 'x' WHERE id = 4", f"DELETE FROM {db}.t WHERE id = 4",
                    f"UPDATE {db}.t SET name = 'a' WHERE id = 5", f"UPDATE {db}.t SET name = 'b' WHERE id = 5",
                    f"INSERT INTO {db}.u VALUES (1, 'u1'), (2, 'u2')", f"UPDATE {db}.u SET name = 'U2' WHERE id = 2"):
            conn.execute(sql)
        conn.execute("COMMIT")
        Pipeline(config).run(handle_signals=False)
        dt = DeltaTable(t)
        assert dt.version() == before + 1  # the batch is one commit of the mirror
        assert _feed(t, before + 1) == sorted([
            ("insert", 6, "d6"), ("insert", 7, "d7"), ("insert", 8, "eight"),
            ("update_preimage", 1, "d1"), ("update_postimage", 1, "one"),
            ("update_preimage", 2, "d2"), ("update_postimage", 2, "two"),
            ("update_preimage", 5, "d5"), ("update_postimage", 5, "b"),
            ("delete", 3, "d3"), ("delete", 4, "d4"),
        ])
        _run_readme_readers(pa.table(dt.load_cdf(starting_version=before + 1).read_all()), capsys)
        assert has_change_feed(DeltaTable(u))
        assert _feed(u, 0) == [("insert", 1, "u1"), ("insert", 2, "U2")]  # the first batch: appended files

        rows = sorted(tuple(r.values()) for r in DeltaTable(t).to_pyarrow_table().to_pylist())
        conn.execute(f"ALTER TABLE {db}.t ADD COLUMN n INT NOT NULL DEFAULT 7")
        Pipeline(config).run(handle_signals=False)
        dt = DeltaTable(t)
        rewrite = _feed(t, dt.version(), dt.version())  # the DDL's rewrite: the old rows out, the new in
        assert [r[1:3] for r in rewrite if r[0] == "delete"] == rows
        assert [r[1:] for r in rewrite if r[0] == "insert"] == [(i, name, 7) for i, name in rows]
        assert len(rewrite) == 2 * len(rows)
        conn.execute(f"DROP DATABASE {db}")
