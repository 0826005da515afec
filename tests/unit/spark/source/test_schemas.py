"""Each schema of the change rows has one home and its other forms are derived from it: the Spark
DDL the source declares is its Arrow schema's, the change log's columns are the change rows' in the
order of the Delta tables already on disk, and the table in ``change_frame``'s docstring lists the
columns the source yields."""

import re
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.sql.pandas.types import from_arrow_type

from sluice.cdc.records import RowChange
from sluice.lake.changelog.rows import changelog_from_rows
from sluice.lake.changelog.schema import CHANGE_ARROW_SCHEMA, CHANGELOG_SCHEMA
from sluice.lake.data_files import add_action, write_data_file
from sluice.lake.sink import DeltaLake
from sluice.spark.source import change_frame
from sluice.spark.source.change_frame import ARROW_SCHEMA, CHANGE_SCHEMA, record_batch
from sluice.spark.source.spark_ddl import spark_type
from sluice.spark.source.staging import DESCRIPTOR_SCHEMA, DESCRIPTOR_SPARK_SCHEMA

pytestmark = pytest.mark.unit

# The change log's schema as its Delta tables have it on disk: the order of the columns may not change.
# Lakes written before ``seq`` existed have the columns before it.
BEFORE_SEQ = pa.schema([
    ("op", pa.string()), ("db", pa.string()), ("table", pa.string()), ("before", pa.string()),
    ("after", pa.string()), ("pk", pa.list_(pa.string())), ("file", pa.string()), ("pos", pa.int64()),
    ("row", pa.int32()), ("gtid", pa.string()), ("ts", pa.timestamp("us", tz="UTC")), ("batch_id", pa.int64()),
    ("json_diffs", pa.string()), ("ddl", pa.string()),
])
ON_DISK = BEFORE_SEQ.append(pa.field("seq", pa.int64()))


def _ddl_columns(ddl: str) -> list[tuple[str, str]]:
    """``(name, type)`` of each column of a Spark DDL column list."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"`([^`]+)` ([A-Z_]+(?:<[A-Z_]+>)?)(?:, |$)", ddl)]


@pytest.mark.parametrize(("ddl", "arrow"), [(CHANGE_SCHEMA, ARROW_SCHEMA),
                                            (DESCRIPTOR_SPARK_SCHEMA, DESCRIPTOR_SCHEMA)], ids=["change", "descriptor"])
def test_the_spark_ddl_is_the_arrow_schemas(ddl, arrow):
    """Column for column, as pyspark itself maps the Arrow types of the source's batches."""
    assert _ddl_columns(ddl) == [(f.name, from_arrow_type(f.type).simpleString().upper()) for f in arrow]
    assert ", ".join(f"`{n}` {t}" for n, t in _ddl_columns(ddl)) == ddl  # nothing else in the text


def test_the_change_log_is_the_change_rows_in_its_order_on_disk():
    assert CHANGELOG_SCHEMA.equals(ON_DISK)
    assert set(CHANGELOG_SCHEMA.names) == set(CHANGE_ARROW_SCHEMA.names) - {"commit_ts"} | {"batch_id", "seq"}
    for field in CHANGELOG_SCHEMA:
        if field.name not in ("batch_id", "seq"):
            assert field.equals(CHANGE_ARROW_SCHEMA.field(field.name)), field.name
    assert ARROW_SCHEMA is CHANGE_ARROW_SCHEMA


def test_a_change_log_written_before_keeps_taking_batches(tmp_path):
    """A change log created with the on-disk schema of before ``seq`` takes the pipeline's batches:
    change rows of the source's schema turned into change-log rows, committed as a staged file and
    appended. Its older rows have no ``seq``; the new ones are numbered from 0."""
    lake = DeltaLake(tmp_path / "lake", "test-pipeline")
    old = {"op": "insert", "db": "shop", "table": "t", "before": None, "after": '{"id":1}', "pk": ["id"],
           "file": "binlog.000001", "pos": 100, "row": 0, "gtid": None, "ts": datetime(2024, 3, 29, tzinfo=UTC),
           "batch_id": 0, "json_diffs": None, "ddl": None}
    write_deltalake(lake.changelog_path, pa.Table.from_pylist([old], schema=BEFORE_SEQ), mode="append")

    def change_rows(pos: int) -> pa.Table:
        change = RowChange("insert", "shop", "t", None, {"id": pos}, ("id",), "binlog.000001", pos, 0, None,
                           1711670400)
        return pa.Table.from_batches([record_batch([change], [1711670400 * 1_000_000])])

    staged = write_data_file(changelog_from_rows(change_rows(200), 1, lake.next_seq()), lake.changelog_path)
    lake.write_batch(1, [], changelog_files=[add_action(staged)])
    lake.write_batch(2, [], changelog=changelog_from_rows(change_rows(300), 2))
    log = DeltaTable(lake.changelog_path)
    assert log.schema().to_arrow().names == CHANGELOG_SCHEMA.names
    rows = sorted(log.to_pyarrow_table().to_pylist(), key=lambda r: r["pos"])
    assert [(r["pos"], r["batch_id"], r["pk"], r["seq"]) for r in rows] == [
        (100, 0, ["id"], None), (200, 1, ["id"], 0), (300, 2, ["id"], 1)]


def test_the_docstring_table_lists_the_columns_the_source_yields():
    rows = re.findall(r"^\| ([\w, ]+) \| ([\w<>, ]+) \|", change_frame.__doc__ or "", re.MULTILINE)
    listed = []
    for names, types in rows[1:]:  # after the header
        kinds = [t.strip() for t in types.split(",")]
        for i, name in enumerate(n.strip() for n in names.split(",")):
            listed.append((name, kinds[min(i, len(kinds) - 1)].upper()))
    assert listed == [(f.name, spark_type(f.type)) for f in ARROW_SCHEMA]
