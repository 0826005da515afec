"""Spark reads the Parquet files of a mirror and of the change log that delta-rs wrote: every mapped
type comes back as the Spark type the mirror's columns name, value for value."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sluice.binlog.constants import ColumnType as T
from sluice.binlog.values.geometry import Geometry
from sluice.binlog.values.json_binary import JsonDecimal
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.sink import DeltaLake
from tests.unit.lake.test_sink import Log, layout

pytestmark = pytest.mark.spark


@pytest.fixture
def lake(tmp_path: Path) -> DeltaLake:
    return DeltaLake(tmp_path / "lake", "test-pipeline")


def test_spark_reads_every_mapped_type(lake: DeltaLake, spark: Any) -> None:
    cols = layout(
        [("id", T.LONG, 0), ("ti", T.TINY, 0), ("u64", T.LONGLONG, 0), ("d", T.NEWDECIMAL, 10 << 8 | 2),
         ("d65", T.NEWDECIMAL, 65 << 8 | 30), ("fl", T.FLOAT, 4), ("dt", T.DATE, 0), ("dtm", T.DATETIME2, 6),
         ("ts", T.TIMESTAMP2, 3), ("tm", T.TIME2, 0), ("yr", T.YEAR, 0), ("bin", T.BLOB, 2),
         ("st", T.STRING, T.SET << 8 | 1), ("js", T.JSON, 4), ("pt", T.GEOMETRY, 4), ("vec", T.VECTOR, 4),
         ("b64", T.BIT, 8)],
        u64={"unsigned": True}, bin={"collation": 63}, st={"set_values": ("a", "b")},
    )
    row = dict(id=1, ti=-128, u64=2**64 - 1, d=Decimal("-12345678.90"), d65=Decimal("1." + "0" * 29 + "1"),
               fl=0.5, dt="2024-02-29", dtm="2024-01-02 03:04:05.000006", ts="2038-01-19T03:14:07.999Z",
               tm="-838:59:59", yr=2155, bin=b"\x00\xff", st=("a", "b"), js={"x": JsonDecimal("1.50")},
               pt=Geometry(4326, b"\x01\x01\x00\x00\x00"), vec=(1.5, -2.0), b64=2**64 - 1)
    lake.write_batch(0, [TableBatch("shop", "types", cols, ("id",), [Log("types").insert(**row)])])
    files = DeltaTable(lake.table_path("shop", "types")).file_uris()
    df = spark.read.parquet(*files)
    assert df.schema.simpleString() == (
        "struct<id:int,ti:tinyint,u64:decimal(20,0),d:decimal(10,2),d65:string,fl:float,dt:date,"
        "dtm:timestamp_ntz,ts:timestamp,tm:string,yr:smallint,bin:binary,st:array<string>,js:string,"
        "pt:struct<srid:bigint,wkb:binary>,vec:array<float>,b64:decimal(20,0)>"
    )
    assert [(c.name, c.spark_type) for c in cols] == [(f.name, f.dataType.simpleString()) for f in df.schema]
    got = df.selectExpr("*", "CAST(ts AS STRING) AS ts_utc", "CAST(dtm AS STRING) AS dtm_text").collect()[0]
    assert (got.id, got.ti, got.u64, got.d, got.d65) == (1, -128, Decimal(2**64 - 1), Decimal("-12345678.90"),
                                                         "1." + "0" * 29 + "1")
    assert (got.fl, got.dt, got.tm, got.yr, bytes(got.bin)) == (0.5, date(2024, 2, 29), "-838:59:59", 2155, b"\x00\xff")
    assert got.dtm == datetime(2024, 1, 2, 3, 4, 5, 6)  # timestamp_ntz: wall-clock, no zone
    assert got.dtm_text == "2024-01-02 03:04:05.000006"
    assert got.ts_utc == "2038-01-19 03:14:07.999"  # the session time zone is UTC
    assert (got.st, got.js, got.vec, got.b64) == (["a", "b"], '{"x":1.50}', [1.5, -2.0], Decimal(2**64 - 1))
    assert (got.pt.srid, bytes(got.pt.wkb)) == (4326, b"\x01\x01\x00\x00\x00")
    log = spark.read.parquet(*DeltaTable(lake.changelog_path).file_uris())
    assert log.schema.simpleString() == (
        "struct<op:string,db:string,table:string,before:string,after:string,pk:array<string>,file:string,"
        "pos:bigint,row:int,gtid:string,ts:timestamp,batch_id:bigint,json_diffs:string,ddl:string,seq:bigint>"
    )
