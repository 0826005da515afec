"""Spark's runtime as sluice starts it: the session with the ``binlog`` source registered and the
driver JVM launched by sluice in a session of its own (``session``), the driver's class archive (``jvm_archive``,
``make_archive``), and the driver's logging settings (``conf/log4j2.properties``).
"""

from __future__ import annotations

from sluice.lazy import lazy_exports

_HOMES = {  # each exported name's module
    "spark_session": "session",
    "start_python_workers": "session",
}
__all__ = sorted(_HOMES)
__getattr__ = lazy_exports(__name__, _HOMES)
