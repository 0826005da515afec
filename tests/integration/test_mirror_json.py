"""Partial JSON updates reach the mirror exactly (MySQL, real Spark, real Delta tables).

With ``binlog_row_value_options=PARTIAL_JSON`` MySQL logs what ``JSON_SET`` / ``JSON_REPLACE`` /
``JSON_REMOVE`` changed in a document instead of the new document. The workload changes documents
in every way those functions can (members replaced, added in the middle of the key order, removed;
array cells replaced, appended, removed; nested; twice in one batch; with the key moving in the same
and in an earlier statement) under each row image, and in compressed transactions (``binlog_transaction_compression``);
``sluice verify`` then compares every document
with the server's, as text, so the key order and the digits of every number count.
"""

from __future__ import annotations

import uuid

import pytest

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.verify.check import verify_lake

pytestmark = pytest.mark.spark

_DOC = ("JSON_OBJECT('a', {i}, 'arr', JSON_ARRAY(1, 2, 3), 'obj', JSON_OBJECT('k', 'v', 'kkk', 1e300), "
        "'dec', CAST({i}.50 AS DECIMAL(6,2)), 'a b', 'é', 's', REPEAT('x', 40))")


def _run(server, lake: str, db: str, snapshot: str = "initial") -> None:
    config = PipelineConfig(source=server.dsn("root"), lake=lake, tables=rf"{db}\..*", trigger="once",
                            snapshot=snapshot)
    Pipeline(config).run(handle_signals=False)


@pytest.mark.parametrize(("row_image", "compressed"), [("MINIMAL", False), ("NOBLOB", False), ("FULL", False),
                                                       ("MINIMAL", True)])
def test_partial_json_updates_reach_the_mirror(spark, mysql_server, tmp_path, row_image, compressed):
    db = f"pj_{uuid.uuid4().hex[:8]}"
    lake = str(tmp_path / "lake")
    with Connection.open(parse_dsn(mysql_server.dsn("root"))) as conn:
        x = conn.execute
        x(f"CREATE DATABASE {db}")
        x(f"CREATE TABLE {db}.j (id INT PRIMARY KEY, doc JSON, n INT, other JSON)")
        x(f"INSERT INTO {db}.j VALUES " + ", ".join(f"({i}, {_DOC.format(i=i)}, {i}, '[]')" for i in range(1, 41)))
        _run(mysql_server, lake, db, snapshot="only")
        x(f"SET SESSION binlog_row_image = '{row_image}'")
        x("SET SESSION binlog_row_value_options = 'PARTIAL_JSON'")
        x(f"SET SESSION binlog_transaction_compression = {'ON' if compressed else 'OFF'}")
        t = f"{db}.j"
        x(f"UPDATE {t} SET doc = JSON_SET(doc, '$.a', 1000) WHERE id <= 10")
        x(f"UPDATE {t} SET doc = JSON_REPLACE(doc, '$.s', 'short', '$.obj.k', JSON_ARRAY(1.25, 'w')) WHERE id <= 20")
        x(f"UPDATE {t} SET doc = JSON_REMOVE(doc, '$.arr[1]', '$.\"a b\"') WHERE id % 3 = 0")
        x(f"UPDATE {t} SET doc = JSON_SET(doc, '$.ab', 'new', '$.zzzzzz', 7, '$.arr[9]', 'end'), n = n + 1 "
          "WHERE id % 4 = 0")
        x(f"UPDATE {t} SET doc = JSON_SET(doc, '$.obj.k2', CAST(0.10 AS DECIMAL(4,2))) WHERE id % 5 = 0")
        x(f"UPDATE {t} SET doc = JSON_SET(doc, '$.arr[last]', 'last') WHERE id = 7")
        x(f"UPDATE {t} SET other = JSON_SET(other, '$[0]', 'first') WHERE id = 8")
        x(f"UPDATE {t} SET id = id + 1000, doc = JSON_SET(doc, '$.a', 'moved') WHERE id = 11")
        x(f"UPDATE {t} SET id = id + 2000 WHERE id = 12")
        x(f"UPDATE {t} SET doc = JSON_REMOVE(doc, '$.obj') WHERE id = 2012")
        x(f"UPDATE {t} SET n = -n WHERE id = 13")
        x(f"UPDATE {t} SET doc = JSON_REPLACE(doc, '$.dec', 'gone') WHERE id = 13")
        x(f"DELETE FROM {t} WHERE id = 14")
        x(f"INSERT INTO {t} VALUES (14, '{{\"re\": [1]}}', 0, NULL)")
        x(f"UPDATE {t} SET doc = JSON_SET(doc, '$.re[1]', 2) WHERE id = 14")
        _run(mysql_server, lake, db)
        x(f"UPDATE {t} SET doc = JSON_SET(doc, '$.a', 'second run') WHERE id IN (1, 1011, 2012)")
        _run(mysql_server, lake, db)
        verdicts = verify_lake(parse_dsn(mysql_server.dsn("root")), lake, tables=lambda d, _t: d == db)
        assert [v.table for v in verdicts] == ["j"]
        assert verdicts[0].ok, verdicts[0]
        x(f"DROP DATABASE {db}")
