"""Spark's runtime as sluice starts it: the session with the ``binlog`` source registered and the
driver JVM launched by sluice in a session of its own (``session``), the driver's class archive (``jvm_archive``,
``make_archive``), and the driver's logging settings (``conf/log4j2.properties``).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["spark_session", "start_python_workers"]

# Each name's module, imported at the first use of the name: importing one module of the package
# does not import the others (the Python workers of Spark's tasks import only what they run).
_HOMES = {
    "spark_session": "session",
    "start_python_workers": "session",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
