"""``sluice dump --events``: every event, a TABLE_MAP's columns, a rows event's table, flags and row
count, and with ``-v`` its values by position, on binlogs written with each server's default
metadata (tests/data/archived, made by tools/capture_archived.py). No value stops the listing: one
sluice cannot be sure of comes out marked. The expected values are those of the SQL in that tool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sluice.cli import main as sluice_main
from tests.conftest import core_or_twin

pytestmark = pytest.mark.unit

ARCHIVED = Path(__file__).resolve().parents[2] / "data" / "archived"
GOLDEN = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(params=[True, False], ids=["compiled", "python"])
def row_core(request: pytest.FixtureRequest) -> Iterator[bool]:
    """The test runs on the compiled core and on its Python twin."""
    yield from core_or_twin(request.param)


def events(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    code = sluice_main(["dump", "--events", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines()]


def of_type(found: list[dict[str, Any]], suffix: str) -> list[dict[str, Any]]:
    return [e for e in found if e["type"].endswith(suffix)]


def test_default_metadata_never_fails_and_marks_what_is_unsure(capsys, row_core) -> None:
    found = events(capsys, "-v", str(ARCHIVED / "mariadb-nolog.binlog"))
    tm = of_type(found, "TABLE_MAP_EVENT")[0]
    assert (tm["db"], tm["table"], tm["column_count"]) == ("arch", "items", 10)
    assert [c["type"] for c in tm["columns"]] == [
        "LONG", "LONG", "LONGLONG", "NEWDECIMAL", "VARCHAR", "VARCHAR", "BLOB", "BLOB", "ENUM", "DATETIME2"]
    assert tm["columns"][3] == {"type": "NEWDECIMAL", "meta": 8 << 8 | 2, "precision": 8, "scale": 2,
                                "nullable": True}
    assert tm["columns"][4]["max_bytes"] == 120  # VARCHAR(30) in utf8mb4
    assert tm["columns"][0]["nullable"] is False
    assert "name" not in tm["columns"][0] and "charset" not in tm["columns"][4]  # NO_LOG says neither
    write, update, delete, later = of_type(found, "ROWS_EVENT_V1")
    assert (write["table"], write["row_count"], write["flag_names"]) == ("items", 2, ["STMT_END_F"])
    first, second = write["rows"]
    assert first == {
        "@1": 1, "@2": {"signed": -5, "unsigned": 2**32 - 5}, "@3": {"signed": -1, "unsigned": 2**64 - 1},
        "@4": "12.50", "@5": {"hex": "café ✓".encode().hex()}, "@6": {"hex": "ff00fe"},
        "@7": {"hex": "日本".encode().hex()}, "@8": {"hex": "deadbeef"}, "@9": 2,
        "@10": "2024-01-02 03:04:05.678",
    }
    assert second["@1"] == {"signed": -1, "unsigned": 2**32 - 1} and second["@10"] is None
    assert update["rows"][0]["after"]["@2"] == {"signed": -4, "unsigned": 2**32 - 4}
    assert update["rows"][0]["after"]["@5"] == {"hex": b"tea".hex()}
    assert delete["rows"] == [second]
    assert later["rows"] == [{"@1": 1, "@2": {"hex": "78"}}]


def test_minimal_metadata_decodes_text_and_signedness(capsys, row_core) -> None:
    found = events(capsys, "-v", str(ARCHIVED / "mysql-minimal.binlog"))
    tm = of_type(found, "TABLE_MAP_EVENT")[0]
    assert tm["columns"][0]["unsigned"] is True and tm["columns"][1]["unsigned"] is False
    assert tm["columns"][4]["charset"] == "utf8mb4" and tm["columns"][5]["charset"] == "binary"
    write = of_type(found, "WRITE_ROWS_EVENT_V2")[0]
    assert write["rows"][0] == {
        "@1": 1, "@2": -5, "@3": 2**64 - 1, "@4": "12.50", "@5": "café ✓", "@6": "/wD+", "@7": "日本",
        "@8": "3q2+7w==", "@9": 2, "@10": "2024-01-02 03:04:05.678",
    }
    assert write["rows"][1]["@1"] == 2**32 - 1


def test_without_values_rows_events_say_table_flags_and_count(capsys) -> None:
    found = events(capsys, str(ARCHIVED / "mariadb-nolog.binlog"))
    rows = of_type(found, "ROWS_EVENT_V1")
    assert [(r["table"], r["row_count"]) for r in rows] == [("items", 2), ("items", 1), ("items", 1), ("later", 1)]
    assert all("rows" not in r for r in rows)
    annotate = of_type(found, "ANNOTATE_ROWS_EVENT")[1]
    assert annotate["query"] == "UPDATE arch.items SET qty = qty + 1, name = 'tea' WHERE id = 1"


def test_full_metadata_names_members_and_key(capsys) -> None:
    found = events(capsys, str(GOLDEN / "mysql-matrix.binlog"))
    tm = of_type(found, "TABLE_MAP_EVENT")[0]
    by_name = {c["name"]: c for c in tm["columns"]}
    assert tm["primary_key"] == ["@1"]
    assert by_name["en"]["enum_values"] == ["a", "bb", "ccc"] and by_name["en"]["type"] == "ENUM"
    assert by_name["b12"]["bits"] == 12 and by_name["dtm"]["fsp"] == 6
    assert by_name["lat"]["charset"] == "latin1" and by_name["biu"]["unsigned"] is True
    assert by_name["c10"]["type"] == "STRING" and by_name["c10"]["max_bytes"] == 40


def test_compressed_payload_lists_its_events(capsys) -> None:
    found = events(capsys, "-v", str(GOLDEN / "mysql-compressed.binlog"))
    payload = of_type(found, "TRANSACTION_PAYLOAD_EVENT")[0]
    inner = [e["type"] for e in payload["events"]]
    assert "TABLE_MAP_EVENT" in inner and "WRITE_ROWS_EVENT_V2" in inner
    write = next(e for e in payload["events"] if e["type"] == "WRITE_ROWS_EVENT_V2")
    assert write["row_count"] == 3 and write["rows"][2] == {"@1": 3, "@2": "short", "@3": 3}
