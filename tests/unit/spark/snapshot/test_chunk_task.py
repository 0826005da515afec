"""A snapshot chunk's task and result as they travel between the driver and an executor: pickled
(as Spark ships them), the low watermark taken ahead put in, and a stale chunk told apart."""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest
from pyspark import cloudpickle

from sluice.spark.snapshot.task import ChunkResult, ChunkTask

pytestmark = pytest.mark.unit

TASK = ChunkTask("mysql://repl@127.0.0.1:3306/", {"tables": []}, {"db": "shop", "name": "orders"}, ("id",),
                 {"db": "shop", "table": "orders", "id": 3, "lower": [100], "upper": [200]}, "mysql",
                 {"folder": "/lake/shop/orders", "lake": "/lake", "storage": {}})


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps])
def test_a_task_and_its_results_survive_the_trip_to_an_executor(dumps):
    marked = replace(TASK, mark={"file": "binlog.000002", "pos": 4, "gtid_set": None})
    assert TASK.mark is None and marked.mark is not None and marked.chunk is TASK.chunk
    assert pickle.loads(dumps(marked)) == marked
    low, high = {"file": "b.1", "pos": 4}, {"file": "b.1", "pos": 90}
    for result in (ChunkResult(TASK.chunk, low, high, 2, appended={"path": "part-0.parquet"}),
                   ChunkResult(TASK.chunk, low, high, 1, merged=[{"id": 101}]),
                   ChunkResult(TASK.chunk, None, None, error="value 300 does not fit tinyint")):
        assert pickle.loads(dumps(result)) == result


def test_a_chunk_without_watermarks_is_stale():
    assert ChunkResult(TASK.chunk, None, None).stale
    assert ChunkResult(TASK.chunk, None, None, error="no fit").stale
    assert not ChunkResult(TASK.chunk, {"file": "b.1", "pos": 4}, {"file": "b.1", "pos": 9}, appended={}).stale
