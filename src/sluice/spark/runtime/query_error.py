"""The sluice error a failed Spark query carries.

An error of the ``binlog`` source reaches the driver as text inside Spark's own exception, where
``sluice.spark.source.failures`` wrote it as one line (``sluice.errors.carry``); an error of the
driver's own batch function is the exception itself. ``query_error`` gives back the typed sluice
error, so the user sees sluice's one-line message and exit status rather than Spark's wrapping and
a Python traceback; a full volume under the lake (from a task, delta-rs or Spark's own checkpoint
files) becomes ``StorageFullError`` naming the path.
"""

from __future__ import annotations

import re

from sluice import errors
from sluice.errors import SluiceError, carried, storage_full

__all__ = ["query_error"]


def query_error(exc: BaseException, *, where: str = "the lake") -> SluiceError:
    """The sluice error a failed Spark query carries (module docstring), with its type; a
    ``SluiceError`` naming Spark otherwise. ``where``: the lake, named when the volume is full and
    the error does not say which file."""
    if isinstance(exc, SluiceError):
        return exc
    text = str(exc)
    typed = carried(text) or storage_full(exc, where)
    if typed is None:
        typed = _named(text)
    if typed is not None:
        typed.__cause__ = exc
        return typed
    error = SluiceError(f"the Spark query failed: {_first_line(text, exc)} (run with -vv for Spark's log)")
    error.__cause__ = exc
    return error


def _named(text: str) -> SluiceError | None:
    """A sluice error named in a traceback's text (``sluice.errors.SchemaError: ...``) that its
    message alone builds again."""
    for m in re.finditer(r"(?:sluice\.[\w.]+\.)?(\w+Error): (.+)", text):
        kind = getattr(errors, m.group(1), None)
        if isinstance(kind, type) and issubclass(kind, SluiceError):
            try:
                return kind(m.group(2).strip())
            except TypeError:
                continue
    return None


def _first_line(text: str, exc: BaseException) -> str:
    """The first line of Spark's message that is not a traceback's header."""
    for line in text.strip().splitlines():
        line = line.strip()
        if line and not line.startswith("Traceback (most recent call last)"):
            return re.sub(r":\s*Traceback \(most recent call last\):?\s*$", "", line)
    return type(exc).__name__
