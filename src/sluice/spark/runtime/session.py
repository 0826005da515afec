"""Creating the Spark session sluice runs on, with the ``binlog`` data source registered.

Spark runs the data source's Python code in worker processes started with ``PYSPARK_PYTHON``;
sluice points it at the interpreter that runs sluice, so the workers import the same package (for
a local master through ``worker_python``, so that they import pyspark compiled, not from its zip).
Settings are sized for one machine by default (``local[*]``, few shuffle partitions, no UI) and
``--master`` / ``conf`` change them. Spark logs errors only and draws no stage bars: the driver's
``log4j2.properties`` comes from ``sluice/spark/conf`` (a JVM option, not ``SPARK_CONF_DIR``,
whose directory on the classpath would keep the driver from its class archive) unless
``SPARK_CONF_DIR`` is set, and ``conf={"spark.log.level": "WARN"}`` brings its warnings back.
The driver JVM maps the class archive of ``jvm_archive`` (or makes it, on a machine's first run).
sluice starts the driver JVM itself, as ``getOrCreate`` would, to read its standard error: the
line the JVM prints on every start about the incubator module Spark's launcher adds stays out of
the terminal, every other line goes through. The driver JVM runs in a session of its own, so that
the terminal's Ctrl-C reaches sluice alone; ``kill_driver`` ends it at once.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from sluice.errors import ConfigError
from sluice.spark.runtime.jvm_archive import driver_options
from sluice.spark.runtime.worker_python import worker_python
from sluice.spark.source.datasource import BinlogDataSource

__all__ = ["kill_driver", "spark_session", "start_python_workers"]

log = logging.getLogger(__name__)


def spark_session(
    master: str | None = None, *, app_name: str = "sluice", conf: Mapping[str, str] | None = None
) -> Any:
    """A (new or running) SparkSession with ``format("binlog")`` available."""
    # Spark's log lines and stage bars stay out of the terminal (sluice prints one progress line);
    # a SPARK_CONF_DIR of the user's own wins.
    java_options = []
    if not os.environ.get("SPARK_CONF_DIR"):
        logging_conf = Path(__file__).resolve().parent / "conf" / "log4j2.properties"
        java_options.append(f"-Dlog4j2.configurationFile={logging_conf.as_uri()}")
    local = (master or "local[*]").startswith("local")
    if local and not os.environ.get("PYSPARK_PYTHON") and not os.environ.get("SPARK_HOME"):
        os.environ["PYSPARK_PYTHON"] = worker_python() or sys.executable  # pyspark from its package
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # a local run needs no network beyond loopback
    from pyspark.sql import SparkSession


    builder = SparkSession.builder.appName(app_name).master(master or "local[*]")
    settings = {
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": "2g",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",
        # Spark keeps one pool of Python workers per set of environment variables, and its SQL
        # runners (a data source read, mapInArrow) add this one while an RDD's (the snapshot's chunk
        # tasks) does not: set for both, the snapshot's workers are the stream's, not a second pool
        # held for a minute after the snapshot.
        "spark.executorEnv.SPARK_SIMPLIFIED_TRACEBACK": "1",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        "spark.log.level": "ERROR",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "false",  # not used by streaming queries; quiets a warning
    }
    if local:
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    mine = dict(conf or {})
    java_options.append(driver_options())
    java_options.append(mine.pop("spark.driver.extraJavaOptions", ""))
    settings["spark.driver.extraJavaOptions"] = " ".join(o for o in java_options if o)
    settings.update(mine)
    for key, value in settings.items():
        builder = builder.config(key, value)
    _launch_driver(app_name, master or "local[*]", settings)
    session = builder.getOrCreate()
    session.dataSource.register(BinlogDataSource)
    return session


#: Lines the driver JVM writes to standard error that tell a sluice user nothing: Spark's launcher
#: adds the vector API's incubator module, and the JVM announces it on every start (no option quiets it).
_JVM_NOISE = (b"WARNING: Using incubator modules:",)


def _launch_driver(app_name: str, master: str, settings: Mapping[str, str]) -> None:
    """Start the driver JVM as ``getOrCreate`` would, but with its standard error read through
    ``_forward_stderr``, unless a driver is up already (or this process runs under ``spark-submit``,
    which started it)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.errors import PySparkRuntimeError
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    conf = SparkConf().setAppName(app_name).setMaster(master).setAll(list(settings.items()))
    read_end, write_end = os.pipe()  # read from the JVM's first line on: a full pipe would stop it
    reader = threading.Thread(target=_forward_stderr, args=(os.fdopen(read_end, "rb"),), name="sluice-jvm-stderr",
                              daemon=True)
    reader.start()
    try:
        # A session of its own: a terminal sends the signal of Ctrl-C (and of Ctrl-\, Ctrl-Z) to its
        # whole foreground process group, and what Ctrl-C means is sluice's to decide
        # (``sluice.spark.pipeline.interrupts``). PySpark's launcher only ignores SIGINT in the JVM;
        # a disposition is each process's own to change, and the processes the JVM starts (Spark's
        # Python workers turn SIGINT back into KeyboardInterrupt) and the other keys (Ctrl-\ makes
        # the JVM print its threads on the terminal, Ctrl-Z stops it) would still reach them. Outside
        # the terminal's session nothing the JVM starts can get them. The JVM still ends with sluice:
        # it exits when its standard input, a pipe from this process, closes.
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end, "start_new_session": True})
    except PySparkRuntimeError as exc:
        if exc.getCondition() != "JAVA_GATEWAY_EXITED":
            raise
        gateway = None
    finally:
        os.close(write_end)  # the JVM holds its own copy
    if gateway is None:
        reader.join(10)  # the JVM's own words come first
        raise ConfigError(
            "Spark's driver JVM exited before it started (its own message, if any, is above): check that Java 17 "
            "or newer is installed (JAVA_HOME) and the driver's options (spark.driver.memory, "
            "spark.driver.extraJavaOptions)"
        )
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


def kill_driver(timeout: float = 10.0) -> None:
    """End the driver JVM this process started, at once (SIGKILL to its session's process group, as
    ``kill -9`` would), and wait up to ``timeout`` seconds for it to go. Spark's Python daemon, in a
    process group of its own, ends its workers and itself when the JVM's end closes its standard
    input. Nothing when no driver was started here (its JVM then ends when this process does)."""
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: the group's id is the JVM's pid
        proc.wait(timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.debug("ending the driver JVM: %s", exc)


def _forward_stderr(stream: BinaryIO, fd: int = 2) -> None:
    """Copy the driver JVM's standard error to ``fd`` line by line, without ``_JVM_NOISE``, until it
    closes; a write that fails (the terminal gone) drops the line, and reading goes on so the JVM never
    blocks on a full pipe."""
    for line in iter(stream.readline, b""):
        if line.startswith(_JVM_NOISE):
            continue
        try:
            while line:
                line = line[os.write(fd, line):]
        except OSError:
            pass


def start_python_workers(session: Any, modules: tuple[str, ...], *, kind: str = "sql") -> threading.Thread:
    """Start the Python workers that will run the tasks' Python and import ``modules`` in them, in a
    background job, so that the first tasks do not wait for them.

    Spark starts a Python worker only when a task needs one, and its imports (pyarrow, sluice) then
    delay the task that asked: left alone, the first batch runs on one worker and the other cores'
    workers come up late, in the batch after. Run while the streaming query starts, one task per
    core brings every worker up beforehand; on few cores that delays the query's own start, which
    pays only when a batch is waiting. ``sql`` starts them with a ``mapInArrow``, the kind of job a
    data source read is; ``rdd`` with an RDD ``map``, the kind the snapshot's chunk tasks are (one
    pool serves both: ``spark_session`` gives them the same environment). Best effort: a failure is
    logged and changes nothing else.
    """

    def load() -> None:
        import importlib

        for name in modules:
            importlib.import_module(name)

    def imports(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        load()
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"ok": [1]})

    def run() -> None:
        try:
            cores = max(1, int(session.sparkContext.defaultParallelism))
            if kind == "rdd":
                session.sparkContext.parallelize(range(cores), cores).map(lambda _: load()).collect()
            else:
                session.range(0, cores, 1, cores).mapInArrow(imports, "ok long").collect()
        except Exception as exc:  # the session stopped, or a worker failed: the query will say so itself
            log.debug("starting the Python workers ahead failed: %s", exc)

    thread = threading.Thread(target=run, name="sluice-python-workers", daemon=True)
    thread.start()
    return thread
