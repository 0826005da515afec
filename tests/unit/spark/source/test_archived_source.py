"""``spark.read.format("binlog")`` of archived files takes ``schema`` and ``positional`` as ``sluice
dump`` does: the reader's partitions and tasks run here without a Spark session, on the archived
binlogs of tests/data/archived (values from tools/capture_archived.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sluice.spark.source.file_reader import BinlogFileReader
from sluice.spark.source.options import SourceOptions

pytestmark = pytest.mark.unit

ARCHIVED = Path(__file__).resolve().parents[3] / "data" / "archived"


def read(**options: str) -> list[dict[str, Any]]:
    reader = BinlogFileReader(SourceOptions.parse(options))
    rows: list[dict[str, Any]] = []
    for partition in reader.partitions():
        for batch in reader.read(partition):
            rows.extend(pa.Table.from_batches([batch]).to_pylist())
    return rows


def test_schema_option_names_the_columns_that_fit() -> None:
    rows = read(path=str(ARCHIVED / "mariadb-nolog.binlog"), schema=str(ARCHIVED / "mariadb-nolog.sql"))
    assert [(r["op"], r["table"]) for r in rows] == [
        ("insert", "items"), ("insert", "items"), ("update", "items"), ("delete", "items"), ("insert", "later")]
    first = json.loads(rows[0]["after"])
    assert (first["id"], first["qty"], first["name"], first["code"]) == (1, -5, "café ✓", "/wD+")
    assert list(rows[0]["pk"]) == ["id"]
    assert json.loads(rows[4]["after"]) == {"@1": 1, "@2": {"hex": "78"}} and list(rows[4]["pk"]) == []


def test_positional_option_and_the_fallback_without_schema() -> None:
    for options in ({"positional": "true"}, {}):
        rows = read(path=str(ARCHIVED / "mysql-minimal.binlog"), **options)
        first = json.loads(rows[0]["after"])
        assert list(first) == [f"@{i}" for i in range(1, 11)] and first["@5"] == "café ✓"
        assert all(list(r["pk"]) == [] for r in rows)
