"""The interpreter a local Spark starts its Python processes with: ours, with pyspark from its package.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on the ``PYTHONPATH`` of every Python
process it starts (workers, their daemons, each data source planner, the streaming source's runner).
Python keeps no compiled code for a module imported from a zip file, so each of those processes
would compile pyspark's modules from source, and every task re-reads the zip's directory
(``importlib.invalidate_caches``). When Spark is pyspark's own (no ``SPARK_HOME`` of another
install), its zip holds the same modules as the installed package, whose compiled files Python
reuses. ``worker_python()`` is a small ``/bin/sh`` script that drops that zip from ``PYTHONPATH``
and runs this interpreter; sluice makes it ``PYSPARK_PYTHON`` for a local master, unless the user
set ``PYSPARK_PYTHON`` or ``SPARK_HOME``. It lives beside the class archive
(``jvm_archive.archive_dir``), named by a digest of its text, and is written once, atomically.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys

from sluice.spark.runtime.jvm_archive import archive_dir

__all__ = ["worker_python"]

_SCRIPT = """#!/bin/sh
# sluice: Spark's Python processes import pyspark from its installed package, compiled once, not
# from pyspark.zip, which Python compiles again in every process (sluice.spark.runtime.worker_python).
set -f
kept=
IFS=:
for entry in $PYTHONPATH; do
  case $entry in
    */python/lib/pyspark.zip) ;;
    *) kept=${{kept:+$kept:}}$entry ;;
  esac
done
unset IFS
if [ -n "$kept" ]; then
  PYTHONPATH=$kept
  export PYTHONPATH
else
  unset PYTHONPATH
fi
exec {python} "$@"
"""


def worker_python(python: str = sys.executable) -> str | None:
    """The path of the script that runs ``python`` without pyspark's zip, made if missing; None
    when it cannot be written (the caller then runs ``python`` itself)."""
    text = _SCRIPT.format(python=shlex.quote(python))
    path = archive_dir() / f"python-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    if path.exists():
        return str(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}")
        partial.write_text(text)
        partial.chmod(0o755)
        os.replace(partial, path)
    except OSError:
        return None
    return str(path)

