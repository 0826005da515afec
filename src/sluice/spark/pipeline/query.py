"""The streaming query of ``sluice run``: its Spark session and the ``binlog`` stream it reads.

``pipeline_session`` starts Spark for the pipeline (the driver JVM with its client compiler only: it
plans and commits, the rows never pass through it). ``stream_writer`` builds
``spark.readStream.format("binlog")`` with the pipeline's options (``option("stageTo", LAKE)``: the
tasks write their ranges into the lake and Spark carries one descriptor row per file,
``sluice.spark.source.staging``), and the ``foreachBatch`` writer with the trigger and Spark's
checkpoint. The hash key of ``--hash-columns`` reaches the tasks in a file of this user's, never as
an option (``sluice.spark.source.options.column_options``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sluice.spark.pipeline.config import ONCE, PipelineConfig, interval
from sluice.spark.runtime.session import spark_session
from sluice.spark.source.options import column_options
from sluice.spark.source.staging import DESCRIPTOR_SPARK_SCHEMA

__all__ = ["pipeline_session", "stream_writer"]


def pipeline_session(cfg: PipelineConfig) -> Any:
    """The Spark session of the pipeline: ``--master`` and ``[spark]`` conf, the driver's JVM with
    its client compiler alone (the query starts sooner; a later ``-XX:TieredStopAtLevel`` wins)."""
    conf = dict(cfg.conf)
    mine = conf.get("spark.driver.extraJavaOptions", "")
    conf["spark.driver.extraJavaOptions"] = f"-XX:TieredStopAtLevel=1 {mine}".strip()
    return spark_session(cfg.master, conf=conf)


def stream_writer(spark: Any, cfg: PipelineConfig, *, starting: str, history: Path, stage_to: str,
                  in_flight: str, batch: Callable[[Any, int], None],
                  checkpoint: Path) -> tuple[Any, str | None]:
    """The query's writer, ready to ``start()``: the ``binlog`` stream from ``starting`` staged into
    the lake at ``stage_to``, each micro-batch handed to ``batch``; and the hash key's file (None:
    no key), which the caller removes when the query ends."""
    reader = (
        spark.readStream.format("binlog")
        .schema(DESCRIPTOR_SPARK_SCHEMA)  # given, not asked of the source: a Python worker less at start
        .option("dsn", cfg.source)
        .option("startingPosition", starting)
        .option("schemaHistory", str(history))
        .option("includeDdl", "true")
        .option("stageTo", stage_to)
        .option("inFlightTo", in_flight)
        .option("partBytes", str(cfg.part_bytes))
    )
    optional = {"tables": cfg.tables, "excludeTables": cfg.exclude_tables,
                "maxRowsPerBatch": cfg.max_rows_per_batch and str(cfg.max_rows_per_batch),
                "maxBytesPerBatch": cfg.max_bytes_per_batch and str(cfg.max_bytes_per_batch),
                "skipIncidents": "true" if cfg.skip_incidents else None}
    options, key_file = column_options(cfg.columns)
    for name, value in {**optional, **options}.items():
        if value:
            reader = reader.option(name, value)
    writer = reader.load().writeStream.foreachBatch(batch).option("checkpointLocation", str(checkpoint))
    if cfg.trigger in ONCE:
        return writer.trigger(availableNow=True), key_file
    return writer.trigger(processingTime=interval(cfg.trigger)), key_file
