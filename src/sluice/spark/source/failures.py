"""How an error inside the ``binlog`` source leaves its Python worker: as sluice's own, in one line.

Spark runs the source's driver half (offsets, planning) and its tasks in Python workers of their
own and hands their errors to the driver as text, a traceback inside Spark's message.
``typed_failures`` wraps each entry point Spark calls: a ``SluiceError`` leaves it as
``SourceFailure`` whose message is ``sluice.errors.carry``'s line, and so does an ``OSError`` that
says the lake's disk is full (as ``StorageFullError``, naming the path). The driver reads the
error back with ``sluice.errors.carried`` (``sluice.spark.runtime.query_error``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from sluice.errors import SluiceError, carry, storage_full

__all__ = ["SourceFailure", "typed_failures"]

F = TypeVar("F", bound=Callable[..., Any])


class SourceFailure(Exception):
    """A sluice error on its way out of a Spark worker, as ``carry``'s one line."""


def _outgoing(exc: BaseException) -> SourceFailure | None:
    if isinstance(exc, SluiceError):
        return SourceFailure(carry(exc))
    if isinstance(exc, OSError):
        full = storage_full(exc, str(exc.filename or "the lake"))
        if full is not None:
            return SourceFailure(carry(full))
    return None


def typed_failures(fn: F) -> F:
    """``fn`` (a method or a generator method) with its sluice errors leaving as ``SourceFailure``."""
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def generator(*args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from fn(*args, **kwargs)
            except (SluiceError, OSError) as exc:
                out = _outgoing(exc)
                if out is None:
                    raise
                raise out from None

        return generator  # type: ignore[return-value]

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (SluiceError, OSError) as exc:
            out = _outgoing(exc)
            if out is None:
                raise
            raise out from None

    return call  # type: ignore[return-value]
