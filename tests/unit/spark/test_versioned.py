"""MariaDB's system-versioned tables without a server: their DDL replayed, their rows' ops, and what
their mirror takes of them.

The golden files ``mariadb-versioned.binlog`` (10.11) and ``mariadb11-versioned.binlog`` (11.8) hold
the workload of ``tools/capture_golden.py``: tables with implicit and explicit period columns
created in the file, INSERT, UPDATE (of a versioned column and of one WITHOUT SYSTEM VERSIONING),
DELETE, DELETE HISTORY, ALTER ADD COLUMN, DROP and ADD SYSTEM VERSIONING. Their JSON lines are
checked in ``test_golden``; here the ops they give, on the compiled core and on the Python twin,
filtered by ``--ops`` and read by the ``binlog`` data source.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from sluice.binlog.constants import ColumnType
from sluice.binlog.position import Checkpoint
from sluice.cdc.filters import parse_ops
from sluice.cdc.records import RowChange, current_ends, versioned_op
from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.ddl import apply_ddl, strip_versioning
from sluice.cdc.schema.model import SystemTime, TableSchema
from sluice.cdc.table_read.chunks import Chunk
from sluice.cdc.table_read.reconcile import key_order, reconcile_keys
from sluice.cli import main as sluice_main
from sluice.errors import ConfigError, SchemaError
from sluice.lake.mirror.versioned import mirror_rows
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.ddl.plan import plan_ddl
from sluice.spark.source.file_reader import BinlogFileReader
from sluice.spark.source.options import SourceOptions
from tests.conftest import core_or_twin

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"
VERSIONED = [DATA / "mariadb-versioned.binlog", DATA / "mariadb11-versioned.binlog"]
OPS = [("insert", "vt"), ("insert", "vt"), ("update", "vt"), ("history", "vt"), ("update", "vt"), ("delete", "vt"),
       ("delete_history", "vt"), ("delete_history", "vt"), ("insert", "vx"), ("update", "vx"), ("history", "vx"),
       ("delete", "vx"), ("insert", "vt"), ("update", "vt"), ("update", "vt"), ("history", "vt")]


@pytest.fixture(params=[True, False], ids=["core", "twin"])
def engine(request: pytest.FixtureRequest) -> Iterator[bool]:
    yield from core_or_twin(request.param)


def _replay(*statements: str) -> tuple[Catalog, list[Any]]:
    catalog = Catalog(flavor="mariadb")
    outcomes = []
    for sql in statements:
        catalog, outcome = apply_ddl(catalog, sql, "d")
        assert outcome.understood, (sql, outcome.message)
        outcomes.append(outcome)
    return catalog, outcomes


def _table(catalog: Catalog, name: str) -> TableSchema:
    table = catalog.get("d", name)
    assert table is not None
    return table


# -- DDL replay ---------------------------------------------------------------------------------

def test_create_with_implicit_period_columns() -> None:
    catalog, _ = _replay("CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10), b INT WITHOUT SYSTEM VERSIONING) "
                         "WITH SYSTEM VERSIONING")
    t = _table(catalog, "t")
    assert t.names == ("id", "a", "b", "row_start", "row_end")
    assert t.system_time == SystemTime("row_start", "row_end", True)
    assert t.primary_key == ("id",)
    assert [(c.data_type, c.fsp, c.nullable, c.visible) for c in t.columns[-2:]] == [("timestamp", 6, False, False)] * 2
    assert [c.name for c in t.data_columns()] == ["id", "a", "b"] and t.row_end_index() == 4
    assert TableSchema.from_json(json.loads(json.dumps(t.to_json()))) == t


def test_create_with_explicit_period_columns_and_the_key_the_server_shows() -> None:
    catalog, _ = _replay(
        "/*!40101 CREATE TABLE t (id INT, v INT, s TIMESTAMP(6) GENERATED ALWAYS AS ROW START INVISIBLE, "
        "e TIMESTAMP(6) AS ROW END, PRIMARY KEY (id, e), PERIOD FOR SYSTEM_TIME (s, e)) */ WITH SYSTEM VERSIONING "
        "PARTITION BY SYSTEM_TIME INTERVAL 1 DAY PARTITIONS 3")
    t = _table(catalog, "t")
    assert t.names == ("id", "v", "s", "e") and t.system_time == SystemTime("s", "e", False)
    assert t.primary_key == ("id",)  # SHOW CREATE TABLE lists the row end in it; the mirror's key has none
    assert t.data_columns() == t.columns and not t.columns[2].visible and not t.columns[3].nullable


@pytest.mark.parametrize(("sql", "roles"), [
    ("CREATE TABLE t (id INT, `s` TIMESTAMP(6) GENERATED ALWAYS AS ROW START, e TIMESTAMP(6) AS ROW END, "
     "PERIOD FOR SYSTEM_TIME (s, e)) WITH SYSTEM VERSIONING", {"s": "start", "e": "end"}),
    ("ALTER TABLE t ADD COLUMN IF NOT EXISTS s TIMESTAMP(6) GENERATED ALWAYS AS ROW START, CHANGE e e2 "
     "TIMESTAMP(6) AS ROW END", {"s": "start", "e2": "end"}),
])
def test_versioning_clauses_are_cut_out(sql: str, roles: dict[str, str]) -> None:
    plain, said = strip_versioning(sql)
    assert said is not None and said.roles == roles
    assert "ROW START" not in plain and "ROW END" not in plain and "SYSTEM_TIME" not in plain
    assert "VERSIONING" not in plain


def test_alter_keeps_implicit_period_columns_last() -> None:
    catalog, outcomes = _replay("CREATE TABLE t (id INT PRIMARY KEY, a INT) WITH SYSTEM VERSIONING",
                                "ALTER TABLE t ADD COLUMN z INT FIRST, ADD COLUMN y INT")
    t = _table(catalog, "t")
    assert t.names == ("z", "id", "a", "y", "row_start", "row_end") and t.system_time is not None
    (change,) = outcomes[1].changes
    assert [(o.name, o.source) for o in change.columns] == [
        ("z", None), ("id", "id"), ("a", "a"), ("y", None), ("row_start", "row_start"), ("row_end", "row_end")]


def test_drop_and_add_system_versioning() -> None:
    catalog, _ = _replay("CREATE TABLE t (id INT PRIMARY KEY, a INT) WITH SYSTEM VERSIONING",
                         "ALTER TABLE t DROP SYSTEM VERSIONING")
    t = _table(catalog, "t")
    assert t.names == ("id", "a") and t.system_time is None
    catalog, outcome = apply_ddl(catalog, "ALTER TABLE t ADD SYSTEM VERSIONING", "d")
    t = _table(catalog, "t")
    assert t.names == ("id", "a", "row_start", "row_end") and t.system_time == SystemTime("row_start", "row_end", True)
    (change,) = outcome.changes
    assert [(o.name, o.source, o.fill is None or o.fill.exact) for o in change.columns] == [
        ("id", "id", True), ("a", "a", True), ("row_start", None, False), ("row_end", None, False)]


def test_add_system_versioning_with_explicit_columns() -> None:
    catalog, outcomes = _replay(
        "CREATE TABLE t (id INT PRIMARY KEY, a INT)",
        "ALTER TABLE t ADD COLUMN s TIMESTAMP(6) GENERATED ALWAYS AS ROW START, ADD COLUMN e TIMESTAMP(6) "
        "GENERATED ALWAYS AS ROW END, ADD PERIOD FOR SYSTEM_TIME (s, e), ADD SYSTEM VERSIONING")
    t = _table(catalog, "t")
    assert t.names == ("id", "a", "s", "e") and t.system_time == SystemTime("s", "e", False)
    (change,) = outcomes[1].changes
    assert [(o.name, o.fill is not None and o.fill.exact) for o in change.columns if o.source is None] == [
        ("s", False), ("e", False)]  # the server sets them: a mirror holding them is read again
    catalog, _ = apply_ddl(catalog, "ALTER TABLE t DROP SYSTEM VERSIONING, DROP COLUMN s, DROP COLUMN e", "d")
    assert _table(catalog, "t").names == ("id", "a") and _table(catalog, "t").system_time is None


def test_mirror_steps_of_versioning_ddl() -> None:
    catalog, _ = _replay("CREATE TABLE t (id INT PRIMARY KEY, a INT)",
                         "CREATE TABLE v (id INT PRIMARY KEY, a INT) WITH SYSTEM VERSIONING")
    everything = lambda _db, _t: True  # noqa: E731
    assert plan_ddl(catalog, "ALTER TABLE t ADD SYSTEM VERSIONING", "d", everything, "mariadb") == []
    assert plan_ddl(catalog, "ALTER TABLE v DROP SYSTEM VERSIONING", "d", everything, "mariadb") == []
    (step,) = plan_ddl(catalog, "ALTER TABLE v ADD COLUMN b INT DEFAULT 3", "d", everything, "mariadb")
    assert step.kind == "rewrite" and [c.name for c in step.columns] == ["id", "a", "b"]
    assert [(o.name, o.source) for o in step.origins] == [("id", "id"), ("a", "a"), ("b", None)]
    (step,) = plan_ddl(catalog, "ALTER TABLE t ADD COLUMN s TIMESTAMP(6) GENERATED ALWAYS AS ROW START, ADD COLUMN "
                       "e TIMESTAMP(6) GENERATED ALWAYS AS ROW END, ADD PERIOD FOR SYSTEM_TIME (s, e), ADD SYSTEM "
                       "VERSIONING", "d", everything, "mariadb")
    assert step.kind == "reread"
    assert [c.name for c in mirror_columns_for_schema(_table(catalog, "v"), "mariadb")] == ["id", "a"]


def test_system_time_json_is_checked() -> None:
    table = {"db": "d", "name": "t", "columns": [{"name": "id", "type": "int"}]}
    with pytest.raises(ConfigError, match="system_time"):
        TableSchema.from_json({**table, "system_time": {"start": "s"}})


# -- ops ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("code", "current", "ended"), [
    (ColumnType.TIMESTAMP2, "2038-01-19T03:14:07.999999Z", "2026-01-02T03:04:05.000006Z"),
    (ColumnType.TIMESTAMP2, "2106-02-07T06:28:15.999999Z", "2038-01-19T03:14:07.999998Z"),
    (ColumnType.LONGLONG, 18446744073709551615, 18446744073709551614),
])
def test_op_of_a_row_by_its_row_end(code: int, current: Any, ended: Any) -> None:
    ends = current_ends(SimpleNamespace(column_types=(ColumnType.LONG, code)), 1)  # type: ignore[arg-type]
    now, old = (1, current), (1, ended)
    assert versioned_op("write", None, now, 1, ends) == "insert"
    assert versioned_op("write", None, old, 1, ends) == "history"
    assert versioned_op("update", now, now, 1, ends) == "update"
    assert versioned_op("update", now, old, 1, ends) == "delete"
    assert versioned_op("delete", now, None, 1, ends) == "delete"
    assert versioned_op("delete", old, None, 1, ends) == "delete_history"


def test_a_row_end_of_another_type_is_a_schema_error() -> None:
    table = SimpleNamespace(column_types=(ColumnType.LONG, ColumnType.DATETIME2), schema="d", table="t")
    with pytest.raises(SchemaError, match=r"d\.t has binlog type 18"):
        current_ends(table, 1)  # type: ignore[arg-type]


def test_ops_filter_takes_the_versioned_ops() -> None:
    assert parse_ops("history,delete_history") == {"history", "delete_history"}
    with pytest.raises(ConfigError, match="delete_history"):
        parse_ops("histories")


def _dump(capsys: Any, *argv: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert sluice_main(["dump", *argv]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("path", VERSIONED, ids=[p.stem for p in VERSIONED])
def test_golden_ops_on_core_and_twin(path: Path, engine: bool, capsys: Any) -> None:
    expected = path.with_suffix(".jsonl").read_text(encoding="utf-8")
    capsys.readouterr()
    assert sluice_main(["dump", str(path)]) == 0
    assert capsys.readouterr().out == expected
    assert [(c["op"], c["table"]) for c in map(json.loads, expected.splitlines())] == OPS
    for ops in ("insert", "history", "delete", "delete_history", "update", "insert,delete_history"):
        kept = _dump(capsys, "--ops", ops, str(path))
        wanted = [c for c in map(json.loads, expected.splitlines()) if c["op"] in ops.split(",")]
        assert kept == wanted, ops
        for counting in ("--count-only", "--format none"):
            assert sluice_main(["dump", "--ops", ops, *counting.split(), str(path)]) == 0
            assert f" {len(wanted)} row changes in " in capsys.readouterr().out, (ops, counting)


@pytest.mark.parametrize("path", VERSIONED, ids=[p.stem for p in VERSIONED])
def test_binlog_data_source_gives_the_versioned_ops(path: Path) -> None:
    reader = BinlogFileReader(SourceOptions.parse({"path": str(path), "ops": "history,delete_history"}))
    rows = [r for p in reader.partitions() for b in reader.read(p) for r in pa.Table.from_batches([b]).to_pylist()]
    assert [(r["op"], r["table"]) for r in rows] == [(op, t) for op, t in OPS if op in ("history", "delete_history")]
    assert all(json.loads(r["after"] or r["before"])["id"] for r in rows)


# -- the mirror ---------------------------------------------------------------------------------

def test_mirror_rows_of_a_versioned_table() -> None:
    schema = _table(_replay("CREATE TABLE t (id INT PRIMARY KEY, a INT) WITH SYSTEM VERSIONING")[0], "t")
    now, old = '"row_start":"2026-01-01T00:00:00.000001Z","row_end":"2038-01-19T03:14:07.999999Z"', \
        '"row_start":"2026-01-01T00:00:00.000001Z","row_end":"2026-01-01T00:00:00.000002Z"'
    rows = pa.table({
        "op": ["insert", "history", "update", "delete", "delete_history"],
        "before": [None, None, f'{{"id":1,"a":1,{now}}}', f'{{"id":2,"a":2,{now}}}', f'{{"id":3,"a":3,{old}}}'],
        "after": [f'{{"id":1,"a":1,{now}}}', f'{{"id":1,"a":0,{old}}}', f'{{"id":1,"a":5,{now}}}',
                  f'{{"id":2,"a":2,{old}}}', None],
    })
    assert mirror_rows(rows, schema).to_pylist() == [
        {"op": "insert", "before": None, "after": '{"id":1,"a":1}'},
        {"op": "update", "before": '{"id":1,"a":1}', "after": '{"id":1,"a":5}'},
        {"op": "delete", "before": '{"id":2,"a":2}', "after": None},
    ]
    plain = _table(_replay("CREATE TABLE t (id INT PRIMARY KEY, a INT)")[0], "t")
    assert mirror_rows(rows, plain) is rows


def test_snapshot_reconciliation_leaves_history_out() -> None:
    schema = _table(_replay("CREATE TABLE t (id INT PRIMARY KEY, a INT) WITH SYSTEM VERSIONING")[0], "t")
    selected = schema.selected()
    order = key_order(selected, ("id",))
    now = {"row_start": "2026-01-01T00:00:00.000001Z", "row_end": "2038-01-19T03:14:07.999999Z"}
    old = {"row_start": "2026-01-01T00:00:00.000001Z", "row_end": "2026-01-01T00:00:00.000002Z"}

    def change(op: str, before: dict[str, Any] | None, after: dict[str, Any] | None, pos: int) -> RowChange:
        return RowChange(op, "d", "t", before, after, ("id",), "b.1", pos, 0, None, 0)

    changes = [
        change("update", {"id": 1, "a": 1, **now}, {"id": 1, "a": 5, **now}, 10),
        change("history", None, {"id": 1, "a": 1, **old}, 10),
        change("delete", {"id": 2, "a": 2, **now}, {"id": 2, "a": 2, **old}, 20),
        change("delete_history", {"id": 3, "a": 3, **old}, None, 30),
    ]
    chunk = Chunk("d", "t", 0, ("id",), None, None)
    keep, images = reconcile_keys(chunk, Checkpoint("b.1", 4), Checkpoint("b.1", 100), [(1,), (2,), (4,)],
                                  changes, order)
    assert keep == [2] and images == [{"id": 1, "a": 5}]
