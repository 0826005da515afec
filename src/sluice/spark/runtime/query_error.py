"""The sluice error a failed Spark query carries.

An executor's error reaches the driver as text inside Spark's own exception
(``sluice.errors.SchemaError: ...``); ``query_error`` finds the typed sluice error in it again, so the
user sees sluice's one-line message and exit status rather than Spark's wrapping.
"""

from __future__ import annotations

import re

from sluice import errors
from sluice.errors import SluiceError

__all__ = ["query_error"]


def query_error(exc: BaseException) -> SluiceError:
    """The sluice error a failed Spark query carries (an executor's error reaches the driver as text:
    ``sluice.errors.SchemaError: ...``), with its type; a ``SluiceError`` naming Spark otherwise."""
    text = str(exc)
    for m in re.finditer(r"(?:sluice\.[\w.]+\.)?(\w+Error): (.+)", text):
        kind = getattr(errors, m.group(1), None)
        if isinstance(kind, type) and issubclass(kind, SluiceError):
            try:
                typed = kind(m.group(2).strip())
            except TypeError:
                continue
            typed.__cause__ = exc
            return typed
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    error = SluiceError(f"the Spark query failed: {first} (run with -vv for Spark's log)")
    error.__cause__ = exc
    return error
