"""The schema history file: positions in binlog order, reopening, idempotent records, damage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluice.binlog.position import Checkpoint, SourceIdentity
from sluice.cdc.schema import Catalog, SchemaHistory, apply_ddl
from sluice.errors import ConfigError

pytestmark = pytest.mark.unit

BASE = Catalog(server_charset="utf8mb4", server_collation="utf8mb4_0900_ai_ci", flavor="mysql")


def ddl(catalog: Catalog, sql: str) -> tuple[Catalog, tuple[tuple[str, str], ...]]:
    catalog, outcome = apply_ddl(catalog, sql, "shop")
    assert outcome.understood, outcome
    return catalog, outcome.tables


def names(catalog: Catalog | None, table: str = "t") -> tuple[str, ...] | None:
    assert catalog is not None
    t = catalog.get("shop", table)
    return None if t is None else t.names


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def build(path: Path) -> SchemaHistory:
    """bootstrap at binlog.999999:4 with t(a); ADD b at :100; binlog.1000000: ADD c at :50, DROP at :900."""
    history = SchemaHistory.open(path)
    catalog, _ = ddl(BASE, "CREATE TABLE t (a int)")
    history.record_bootstrap("binlog.999999", 4, catalog)
    catalog, tables = ddl(catalog, "ALTER TABLE t ADD b int")
    history.record("binlog.999999", 100, "uuid:7", catalog, sql="ALTER TABLE t ADD b int", tables=tables)
    catalog, tables = ddl(catalog, "ALTER TABLE t ADD c int")
    history.record("binlog.1000000", 50, None, catalog, sql="ALTER TABLE t ADD c int", tables=tables)
    catalog, tables = ddl(catalog, "DROP TABLE t")
    history.record("binlog.1000000", 900, None, catalog, sql="DROP TABLE t", tables=tables)
    return history


def check_positions(history: SchemaHistory) -> None:
    assert history.catalog_at("binlog.999998", 500) is None  # before the bootstrap
    assert history.catalog_at("binlog.999999", 3) is None
    assert names(history.catalog_at("binlog.999999", 4)) == ("a",)  # the bootstrap's own position
    assert names(history.catalog_at("binlog.999999", 100)) == ("a",)  # the DDL event itself: old layout
    assert names(history.catalog_at("binlog.999999", 101)) == ("a", "b")
    assert names(history.catalog_at("binlog.1000000", 4)) == ("a", "b")  # 1000000 follows 999999
    assert names(history.catalog_at("binlog.1000000", 51)) == ("a", "b", "c")
    assert names(history.catalog_at("binlog.1000000", 901)) is None
    latest = history.latest()
    assert latest is not None and latest.get("shop", "t") is None


def test_record_and_catalog_at(tmp_path: Path) -> None:
    history = build(tmp_path / "schema.jsonl")
    check_positions(history)
    first = json.loads(lines(tmp_path / "schema.jsonl")[0])
    assert first == {"format": "sluice-schema-history", "version": 1}
    change = json.loads(lines(tmp_path / "schema.jsonl")[2])
    assert (change["kind"], change["file"], change["pos"], change["gtid"], change["sql"]) == (
        "change", "binlog.999999", 100, "uuid:7", "ALTER TABLE t ADD b int")
    assert [c["name"] for c in change["tables"][0]["schema"]["columns"]] == ["a", "b"]
    assert json.loads(lines(tmp_path / "schema.jsonl")[-1])["tables"] == [{"db": "shop", "table": "t", "schema": None}]


def test_reopen_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "schema.jsonl"
    written = build(path)
    reopened = SchemaHistory.open(path)
    assert reopened.entries == written.entries
    check_positions(reopened)
    assert reopened.latest() == written.latest()


def test_recording_a_position_twice_writes_once(tmp_path: Path) -> None:
    path = tmp_path / "schema.jsonl"
    history = build(path)
    before = lines(path)
    catalog, tables = ddl(BASE, "CREATE TABLE t (z int)")
    history.record("binlog.999999", 100, "uuid:7", catalog, sql="ALTER TABLE t ADD b int", tables=tables)
    history.record_bootstrap("binlog.999999", 4, catalog)
    reopened = SchemaHistory.open(path)
    reopened.record("binlog.1000000", 50, None, catalog, sql="again", tables=tables)
    assert lines(path) == before
    check_positions(reopened)


def test_out_of_order_record_and_a_later_bootstrap(tmp_path: Path) -> None:
    history = SchemaHistory.open(tmp_path / "h.jsonl")
    c0, _ = ddl(BASE, "CREATE TABLE t (a int)")
    history.record_bootstrap("b.000001", 4, c0)
    c2, tables = ddl(c0, "ALTER TABLE t ADD z int")
    history.record("b.000002", 10, None, c2, sql=None, tables=tables)
    c1, tables = ddl(c0, "ALTER TABLE t ADD y int")
    history.record("b.000001", 500, None, c1, sql=None, tables=tables)  # recorded late, earlier position
    assert names(history.catalog_at("b.000001", 600)) == ("a", "y")
    assert names(history.catalog_at("b.000002", 11)) == ("a", "z")  # the change at b.000002:10 wrote its table
    # A bootstrap later in the binlog supersedes everything before it.
    fresh, _ = ddl(BASE, "CREATE TABLE t (q text)")
    history.record_bootstrap("b.000003", 4, fresh)
    assert names(history.catalog_at("b.000003", 4)) == ("q",)
    assert names(history.catalog_at("b.000002", 11)) == ("a", "z")
    assert names(history.latest()) == ("q",)


def test_database_defaults_are_recorded(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    history = SchemaHistory.open(path)
    history.record_bootstrap("b.000001", 4, BASE)
    catalog, outcome = apply_ddl(BASE, "CREATE DATABASE d CHARSET latin1", None)
    history.record("b.000001", 10, None, catalog, sql="CREATE DATABASE d CHARSET latin1", tables=outcome.tables)
    catalog, outcome = apply_ddl(catalog, "CREATE TABLE d.t (v varchar(3))", None)
    history.record("b.000001", 20, None, catalog, sql="...", tables=outcome.tables)
    assert "databases" not in json.loads(lines(path)[-1])  # unchanged: not repeated
    reopened = SchemaHistory.open(path).catalog_at("b.000001", 21)
    assert reopened is not None and reopened.database_charset("d") == "latin1"
    assert reopened == catalog


@pytest.mark.parametrize(("content", "line", "what"), [
    ('{"format": "sluice-schema-history", "version": 1}\n{not json\n', 2, "not JSON"),
    ('{"format": "sluice-schema-history", "version": 1}\n{"kind": "bootstrap", "file": "b.1", "pos": 4, '
     '"catalog": {}}\n[1, 2]\n', 3, "expected a JSON object"),
    ('{"format": "sluice-schema-history", "version": 1}\n{"kind": "change", "file": "b.1", "pos": "x"}\n', 2, "'pos'"),
    ('{"format": "sluice-schema-history", "version": 1}\n{"kind": "change", "file": "b.1", "pos": 4, "tables": '
     '[{"db": "d", "table": "t", "schema": {"db": "d", "name": "t", "columns": [{"name": 1}]}}]}\n', 2, "column"),
    ('{"format": "something-else"}\n', 1, "format"),
    ('{"format": "sluice-schema-history", "version": 99}\n', 1, "version 99"),
    ("\n", 1, "not JSON"),
])
def test_damaged_file_names_file_and_line(tmp_path: Path, content: str, line: int, what: str) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(content)
    with pytest.raises(ConfigError) as info:
        SchemaHistory.open(path)
    message = str(info.value)
    assert str(path) in message and f"line {line}" in message and what in message, message
    assert "move it away" in message


def test_empty_file_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text("")
    with pytest.raises(ConfigError, match="line 1"):
        SchemaHistory.open(path)


def test_unterminated_last_line_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    history = build(path)
    complete = path.read_text()
    with path.open("a") as f:
        f.write('{"kind": "change", "file": "binlog.1000001", "po')  # a crash in the middle of an append
    reopened = SchemaHistory.open(path)
    assert path.read_text() == complete
    assert reopened.entries == history.entries
    catalog, tables = ddl(BASE, "CREATE TABLE t (n int)")
    reopened.record("binlog.1000001", 4, None, catalog, sql="CREATE TABLE t (n int)", tables=tables)
    assert names(SchemaHistory.open(path).catalog_at("binlog.1000001", 5)) == ("n",)


def test_unwritable_place_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot create"):
        SchemaHistory.open(tmp_path / "missing-dir" / "h.jsonl")


def test_positions_carry_the_checkpoint_form_and_older_lines_still_load(tmp_path: Path) -> None:
    path = tmp_path / "schema.jsonl"
    history = build(path)  # lines without the Checkpoint form, as older sluice wrote them
    server = SourceIdentity("mysql", "3e11fa47-71ca-11e1-9e33-c80aa9429562")
    start = Checkpoint("binlog.1000001", 4, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-40", server)
    catalog, _ = ddl(BASE, "CREATE TABLE t (a int)")
    history.record_bootstrap(start.file, start.pos, catalog, at=start)
    boundary = Checkpoint("binlog.1000001", 700, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-52", server)
    catalog, tables = ddl(catalog, "ALTER TABLE t ADD d int")
    history.record("binlog.1000001", 777, "3e11fa47-71ca-11e1-9e33-c80aa9429562:53", catalog,
                   sql="ALTER TABLE t ADD d int", tables=tables, at=boundary)
    assert json.loads(lines(path)[-1])["at"] == boundary.to_json()
    reopened = SchemaHistory.open(path)
    assert [e.at for e in reopened.entries] == [None, None, None, None, start, boundary]
    assert reopened.entries[-1].at.source == server  # type: ignore[union-attr]
    assert names(reopened.catalog_at("binlog.1000001", 778)) == ("a", "d")
