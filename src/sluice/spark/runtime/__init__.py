"""Spark's runtime as sluice starts it: the session with the ``binlog`` source registered and the
driver JVM launched by sluice (``session``), the driver's class archive (``jvm_archive``,
``make_archive``), and the driver's logging settings (``conf/log4j2.properties``).
"""

from __future__ import annotations

from sluice.spark.runtime.session import spark_session, start_python_workers

__all__ = ["spark_session", "start_python_workers"]
