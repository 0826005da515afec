"""Creating the Spark session sluice runs on, with the ``binlog`` data source registered.

Spark runs the data source's Python code in worker processes started with ``PYSPARK_PYTHON``;
sluice points it at the interpreter that runs sluice, so the workers import the same package.
Settings are sized for one machine by default (``local[*]``, few shuffle partitions, no UI) and
``--master`` / ``conf`` change them. Spark logs errors only and draws no stage bars: its
``log4j2.properties`` comes from ``sluice/spark/conf`` unless ``SPARK_CONF_DIR`` is set, and
``conf={"spark.log.level": "WARN"}`` brings its warnings back.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["spark_session"]


def spark_session(
    master: str | None = None, *, app_name: str = "sluice", conf: Mapping[str, str] | None = None
) -> Any:
    """A (new or running) SparkSession with ``format("binlog")`` available."""
    # Spark's log lines and stage bars stay out of the terminal (sluice prints one progress line);
    # a SPARK_CONF_DIR of the user's own wins.
    os.environ.setdefault("SPARK_CONF_DIR", str(Path(__file__).resolve().parent / "conf"))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    local = (master or "local[*]").startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # a local run needs no network beyond loopback
    from pyspark.sql import SparkSession

    from sluice.spark.source import BinlogDataSource

    builder = SparkSession.builder.appName(app_name).master(master or "local[*]")
    settings = {
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "2g",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        "spark.log.level": "ERROR",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "false",  # not used by streaming queries; quiets a warning
    }
    if local:
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.dataSource.register(BinlogDataSource)
    return session
