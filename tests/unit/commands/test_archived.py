"""Archived binlogs without a schema (tests/data/archived, made by tools/capture_archived.py): files
written with each server's default metadata, whose CREATE TABLE is not among them. ``sluice dump``
reads a table it cannot name by position with one warning, names the tables of ``--schema
FILE.sql`` where their definition fits every TABLE_MAP and falls back (with a warning naming the
table) where it does not, and ``--positional`` reads every table by position. The expected values
are those of the SQL in tools/capture_archived.py."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sluice.cdc.schema.sqlfile import catalog_from_sql, statements
from sluice.cli import main as sluice_main
from sluice.errors import SchemaError
from tests.conftest import core_or_twin

pytestmark = pytest.mark.unit

ARCHIVED = Path(__file__).resolve().parents[2] / "data" / "archived"
FILES = ["mariadb-nolog", "mysql-minimal"]
ITEM_1 = {"id": 1, "qty": -5, "big": 2**64 - 1, "price": "12.50", "name": "café ✓", "code": "/wD+",
          "note": "日本", "data": "3q2+7w==", "kind": "b", "made": "2024-01-02 03:04:05.678"}
ITEM_2 = {"id": 2**32 - 1, "qty": 2**31 - 1, "big": 0, "price": "-0.01", "name": "", "code": "", "note": "",
          "data": "", "kind": "a", "made": None}


@pytest.fixture(params=[True, False], ids=["compiled", "python"])
def row_core(request: pytest.FixtureRequest) -> Iterator[bool]:
    """The test runs on the compiled core and on its Python twin."""
    yield from core_or_twin(request.param)


def dump(capsys, caplog, *argv: str) -> tuple[list[dict[str, Any]], list[str]]:
    capsys.readouterr()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        code = sluice_main(["dump", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    return [json.loads(line) for line in out.splitlines()], warnings


@pytest.mark.parametrize("name", FILES)
def test_unknown_tables_are_read_by_position_with_one_warning_each(name, capsys, caplog, row_core) -> None:
    changes, warnings = dump(capsys, caplog, str(ARCHIVED / f"{name}.binlog"))
    assert [(c["op"], c["table"]) for c in changes] == [
        ("insert", "items"), ("insert", "items"), ("update", "items"), ("delete", "items"), ("insert", "later")]
    assert all(c["pk"] == [] for c in changes)
    assert list(changes[0]["after"]) == [f"@{i}" for i in range(1, 11)]
    assert [w.split(" at ")[0] for w in warnings] == ["arch.items", "arch.later"]
    assert all("read by position" in w for w in warnings)
    first = changes[0]["after"]
    assert (first["@1"], first["@4"], first["@9"], first["@10"]) == (1, "12.50", 2, "2024-01-02 03:04:05.678")
    if name == "mysql-minimal":  # MINIMAL metadata: signedness and charsets are known
        assert (first["@2"], first["@3"], first["@5"], first["@6"]) == (-5, 2**64 - 1, "café ✓", "/wD+")
    else:  # NO_LOG: neither; what depends on them is marked
        assert first["@2"] == {"signed": -5, "unsigned": 2**32 - 5}
        assert first["@5"] == {"hex": "café ✓".encode().hex()} and first["@6"] == {"hex": "ff00fe"}


@pytest.mark.parametrize("name", FILES)
def test_schema_file_names_what_fits_and_falls_back_where_not(name, capsys, caplog, row_core) -> None:
    schema, binlog = ARCHIVED / f"{name}.sql", ARCHIVED / f"{name}.binlog"
    changes, warnings = dump(capsys, caplog, "--schema", str(schema), str(binlog))
    items = [c for c in changes if c["table"] == "items"]
    assert [c["pk"] for c in items] == [["id"]] * 4
    assert items[0]["after"] == ITEM_1 and items[1]["after"] == ITEM_2
    assert items[2]["before"] == ITEM_1 and items[2]["after"] == {**ITEM_1, "qty": -4, "name": "tea"}
    assert items[3]["before"] == ITEM_2 and items[3]["after"] is None
    later = [c for c in changes if c["table"] == "later"]
    assert later[0]["pk"] == [] and list(later[0]["after"]) == ["@1", "@2"]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("arch.later at ") and f"{name}.sql" in warnings[0]
    assert "3 columns, the TABLE_MAP has 2" in warnings[0]


def test_positional_reads_every_table_by_position_even_with_names(capsys, caplog) -> None:
    golden = ARCHIVED.parent / "mysql-multitable.binlog"
    changes, warnings = dump(capsys, caplog, "--positional", str(golden))
    named, _ = dump(capsys, caplog, str(golden))
    assert not warnings and len(changes) == len(named)
    for by_position, by_name in zip(changes, named, strict=True):
        assert by_position["pk"] == []
        for image in ("before", "after"):
            if by_name[image] is not None:
                assert list(by_position[image].values()) == list(by_name[image].values())
                assert list(by_position[image]) == [f"@{i + 1}" for i in range(len(by_name[image]))]


def test_schema_and_positional_exclude_each_other(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        sluice_main(["dump", "--positional", "--schema", "x.sql", "f"])
    assert exc.value.code == 2


def test_schema_file_without_tables_is_a_clear_error(tmp_path, capsys) -> None:
    bad = tmp_path / "empty.sql"
    bad.write_text("CREATE TABLE t (id INT);\n")
    code = sluice_main(["dump", "--schema", str(bad), str(ARCHIVED / "mysql-minimal.binlog")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert "empty.sql defines no table" in err and "--databases" in err
    code = sluice_main(["dump", "--schema", str(tmp_path / "missing.sql"), str(ARCHIVED / "mysql-minimal.binlog")])
    err = capsys.readouterr().err
    assert code == 1 and "cannot read the schema file" in err


def test_sql_statements_are_cut_as_the_client_cuts_them() -> None:
    text = ("-- a comment; not a statement\nUSE `we``ird`;\n/*!40101 SET NAMES utf8mb4 */;\n"
            "CREATE TABLE t (a VARCHAR(5) DEFAULT 'x;y', `b;` INT) /* c; */;\n"
            "DELIMITER ;;\nCREATE TRIGGER g BEFORE INSERT ON t FOR EACH ROW BEGIN SET @a = 1; END ;;\n"
            "DELIMITER ;\nDROP TABLE IF EXISTS u")
    assert list(statements(text)) == [
        "USE `we``ird`", "/*!40101 SET NAMES utf8mb4 */",
        "CREATE TABLE t (a VARCHAR(5) DEFAULT 'x;y', `b;` INT) /* c; */",
        "CREATE TRIGGER g BEFORE INSERT ON t FOR EACH ROW BEGIN SET @a = 1; END", "DROP TABLE IF EXISTS u"]
    schema = catalog_from_sql(text, "t.sql", "mysql")
    table = schema.catalog.get("we`ird", "t")
    assert table is not None and table.names == ("a", "b;")


@pytest.mark.parametrize("name", FILES)
def test_a_dump_names_its_database_in_its_header(name) -> None:
    schema = catalog_from_sql((ARCHIVED / f"{name}.sql").read_text(), f"{name}.sql")
    assert schema.flavor == name.split("-")[0] and not schema.unparsed
    items = schema.catalog.get("arch", "items")
    assert items is not None and items.primary_key == ("id",) and len(items.columns) == 10
    later = schema.catalog.get("arch", "later")
    assert later is not None and later.names == ("id", "v", "extra")


def test_no_table_defined_raises() -> None:
    with pytest.raises(SchemaError, match="no CREATE TABLE"):
        catalog_from_sql("SET NAMES utf8mb4;", "x.sql")


def test_options_that_do_not_go_together_say_so(capsys) -> None:
    binlog = str(ARCHIVED / "mysql-minimal.binlog")
    for argv, says in ((["-v", binlog], "add --events"), (["--events", "--positional", binlog], "drop --schema"),
                       (["--events", "--schema", "x.sql", binlog], "drop --schema")):
        assert sluice_main(["dump", *argv]) == 1
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1
