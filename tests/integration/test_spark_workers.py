"""``start_python_workers``: the workers it starts are the ones a data source read then runs in.

Spark keeps a pool of Python workers per kind of function; the point of starting them ahead is lost
if the job lands in another pool. A data source of the test's own reports, from inside its read,
whether a module only the early job imports is loaded in the worker. The check runs in a Spark of
its own (a child process), so no worker of another test is in the pool.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.spark

_SCRIPT = textwrap.dedent('''
    import json, sys
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
    from sluice.spark.runtime.session import spark_session, start_python_workers

    class Probe(DataSource):
        @classmethod
        def name(cls):
            return "probe"

        def schema(self):
            return "loaded boolean"

        def reader(self, schema):
            return ProbeReader()

    class ProbeReader(DataSourceReader):
        def partitions(self):
            return [InputPartition(i) for i in range(2)]

        def read(self, partition):
            import sys
            yield ("wave" in sys.modules,)

    spark = spark_session(master="local[2]", app_name="sluice-workers-test")
    spark.dataSource.register(Probe)
    before = [r.loaded for r in spark.read.format("probe").load().collect()]
    # importing sluice takes long enough that both tasks overlap
    start_python_workers(spark, ("sluice.spark.source.staging", "wave")).join()
    after = [r.loaded for r in spark.read.format("probe").load().collect()]
    spark.stop()
    print(json.dumps({"before": before, "after": after}))
''')


def test_the_workers_started_ahead_are_the_ones_a_data_source_read_uses() -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["before"] == [False, False]  # a read's workers do not have the module on their own
    assert seen["after"] == [True, True]


def test_the_python_processes_of_a_local_spark_import_pyspark_from_its_package(spark) -> None:
    """A task's worker and a data source's planner (each a Python process Spark starts) import
    pyspark from the installed package, compiled, not from Spark's pyspark.zip."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Where(DataSource):
        @classmethod
        def name(cls):
            return "where_pyspark"

        def schema(self):
            import pyspark

            self.planned = pyspark.__file__
            return "worker string, planner string"

        def reader(self, schema):
            import pyspark

            return WhereReader(pyspark.__file__)

    class WhereReader(DataSourceReader):
        def __init__(self, planner):
            self.planner = planner

        def partitions(self):
            return [InputPartition(0)]

        def read(self, partition):
            import pyspark

            yield (pyspark.__file__, self.planner)

    spark.dataSource.register(Where)
    (row,) = spark.read.format("where_pyspark").load().collect()
    for seen in (row.worker, row.planner):
        assert ".zip" not in seen and seen.endswith("pyspark/__init__.py"), seen
