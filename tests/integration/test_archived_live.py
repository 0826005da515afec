"""Archived binlogs without a schema, end to end, on each flavor's default metadata (MariaDB NO_LOG,
MySQL MINIMAL): tables are created and written, the binlog is rotated and the file with their
CREATE TABLE purged, and one table is altered after the file was written. ``sluice dump`` of the
remaining file names the columns with ``--schema DSN`` (the live server) and with ``--schema
FILE.sql`` (the server's own ``mysqldump --no-data`` / ``mariadb-dump``), warns about the altered
table and reads it by position, and reads everything by position without a schema; ``--events -v``
lists as many rows per table as ``mysqlbinlog -vv`` prints, and never fails on a binary value.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sluice.sandbox.accounts import PASSWORDS

ITEMS = ("CREATE TABLE arch.items (id INT UNSIGNED PRIMARY KEY, qty INT, name VARCHAR(30), code VARBINARY(8), "
         "note TEXT, price DECIMAL(8,2)) DEFAULT CHARSET=utf8mb4")
LATER = "CREATE TABLE arch.later (id INT PRIMARY KEY, v VARCHAR(10)) DEFAULT CHARSET=utf8mb4"
WORKLOAD = """
SET NAMES utf8mb4;
INSERT INTO arch.items VALUES (1, -5, 'café ✓', X'FF00FE', '日本', '12.50'), (4294967295, 7, '', X'', '', '-0.01');
UPDATE arch.items SET qty = qty + 1, name = 'tea' WHERE id = 1;
DELETE FROM arch.items WHERE id = 4294967295;
INSERT INTO arch.later VALUES (1, 'x'), (2, 'y');
"""
ITEM_1 = {"id": 1, "qty": -5, "name": "café ✓", "code": "/wD+", "note": "日本", "price": "12.50"}


def _sluice(*argv: str) -> tuple[list[dict[str, Any]], str]:
    done = subprocess.run([sys.executable, "-m", "sluice.cli", *argv], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode().splitlines()], done.stderr.decode()


@pytest.fixture(scope="module", params=[pytest.param("mariadb", marks=pytest.mark.mariadb),
                                        pytest.param("mysql", marks=pytest.mark.mysql)])
def archived(request: pytest.FixtureRequest, module_sandbox_factory: Any,
             tmp_path_factory: Any) -> tuple[Any, Path, Path]:
    """A server of the flavor with its default metadata, the archived file (its tables' CREATE TABLE
    purged, ``arch.later`` altered after it) and ``mysqldump --no-data arch`` taken after the ALTER."""
    server = module_sandbox_factory(request.param)
    server.sql(f"CREATE DATABASE arch; {ITEMS}; {LATER}")
    server.sql("FLUSH BINARY LOGS")
    server.sql(WORKLOAD)
    archived_name = server.binlog_files()[-1]
    server.sql("FLUSH BINARY LOGS")
    server.sql(f"PURGE BINARY LOGS TO '{archived_name}'")
    assert server.binlog_files()[0] == archived_name  # the CREATE TABLEs are gone with the older files
    server.sql("ALTER TABLE arch.later ADD COLUMN extra INT")
    out = tmp_path_factory.mktemp(f"archived-{request.param}")
    path = out / archived_name
    path.write_bytes((server.binlog_dir / archived_name).read_bytes())
    dump = subprocess.run(server.dump_tool_argv("--no-data", "arch"), capture_output=True, check=True, timeout=120)
    schema = out / "arch.sql"
    schema.write_bytes(dump.stdout)
    return server, path, schema


def _check_named(changes: list[dict[str, Any]], stderr: str, source: str, flavor: str) -> None:
    items = [c for c in changes if c["table"] == "items"]
    assert [c["op"] for c in items] == ["insert", "insert", "update", "delete"]
    assert all(c["pk"] == ["id"] for c in items)
    assert items[0]["after"] == ITEM_1
    assert items[1]["after"]["id"] == 4294967295 and items[1]["after"]["code"] == ""
    assert items[2]["after"] == {**ITEM_1, "qty": -4, "name": "tea"}
    later = [c for c in changes if c["table"] == "later"]
    if flavor == "mysql":  # MINIMAL metadata gives the charset
        assert [c["after"] for c in later] == [{"@1": 1, "@2": "x"}, {"@1": 2, "@2": "y"}]
    else:
        assert [c["after"] for c in later] == [{"@1": 1, "@2": {"hex": "78"}}, {"@1": 2, "@2": {"hex": "79"}}]
    assert all(c["pk"] == [] for c in later)
    warnings = [line for line in stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1, stderr
    assert "arch.later at" in warnings[0] and source in warnings[0] and "read by position" in warnings[0]


def test_schema_from_the_live_server(archived: tuple[Any, Path, Path]) -> None:
    server, path, _schema = archived
    changes, stderr = _sluice("dump", "--schema", server.dsn("repl"), "--tables", r"arch\..*", str(path))
    _check_named(changes, stderr, "the server", server.flavor)
    assert PASSWORDS["repl"] not in stderr  # the DSN is shown redacted


def test_schema_from_a_dump_file(archived: tuple[Any, Path, Path]) -> None:
    server, path, schema = archived
    changes, stderr = _sluice("dump", "--schema", str(schema), str(path))
    _check_named(changes, stderr, "arch.sql", server.flavor)
    by_server, _ = _sluice("dump", "--schema", server.dsn("root"), str(path))
    assert changes == by_server


def test_positional_without_a_schema(archived: tuple[Any, Path, Path]) -> None:
    server, path, _schema = archived
    automatic, stderr = _sluice("dump", str(path))
    assert sorted(re.findall(r"(arch\.\w+) at ", stderr)) == ["arch.items", "arch.later"]
    asked, quiet = _sluice("dump", "--positional", str(path))
    assert automatic == asked and "WARNING" not in quiet
    first = asked[0]["after"]
    assert list(first) == ["@1", "@2", "@3", "@4", "@5", "@6"] and asked[0]["pk"] == []
    assert (first["@1"], first["@6"]) == (1, "12.50")
    if server.flavor == "mysql":  # MINIMAL: signedness and charsets are in the binlog
        assert (first["@2"], first["@3"], first["@4"]) == (-5, "café ✓", "/wD+")
    else:  # NO_LOG: neither; what needs them is marked, never guessed
        assert first["@2"] == {"signed": -5, "unsigned": 2**32 - 5}
        assert first["@3"] == {"hex": "café ✓".encode().hex()} and first["@4"] == {"hex": "ff00fe"}


def test_events_show_as_many_rows_as_mysqlbinlog(archived: tuple[Any, Path, Path]) -> None:
    server, path, _schema = archived
    events, _ = _sluice("dump", "--events", "-v", str(path))
    rows: Counter[str] = Counter()
    for e in events:
        for inner in (e, *e.get("events", ())):
            if "row_count" in inner:
                rows[inner["table"]] += inner["row_count"]
                assert len(inner["rows"]) == inner["row_count"]
    text = subprocess.run(server.binlog_tool_argv("-vv", "--base64-output=decode-rows", str(path)),
                          capture_output=True, check=True, timeout=120).stdout.decode(errors="replace")
    theirs = Counter(m.group(2) for m in re.finditer(r"^### (?:INSERT INTO|UPDATE|DELETE FROM) `(\w+)`\.`(\w+)`",
                                                    text, re.MULTILINE))
    assert rows == theirs == Counter({"items": 4, "later": 2})
    maps = [e for e in events if e["type"] == "TABLE_MAP_EVENT" and e["table"] == "items"]
    assert [c["type"] for c in maps[0]["columns"]] == ["LONG", "LONG", "VARCHAR", "VARCHAR", "BLOB", "NEWDECIMAL"]


def test_tail_events_on_a_binary_value(archived: tuple[Any, Path, Path]) -> None:
    server, path, _schema = archived
    events, _ = _sluice("tail", server.dsn("root"), "--from", path.name, "--until-end", "--events")
    counts = [inner["row_count"] for e in events for inner in (e, *e.get("events", ())) if "row_count" in inner]
    assert sum(counts) == 6
