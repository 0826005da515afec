"""Functions generated as Python source: the one place sluice compiles and runs code it wrote.

Four hot loops are generated per shape because straight-line code beats a loop over specs in
CPython: the twin's row loops (``binlog.rowgen``), DECIMAL decoders per precision and scale
(``binlog.values.decimal``), the builders of frozen event dataclasses (``binlog.header``) and the
snapshot's text-row converters (``cdc.textvalues``). Each builds its source from its own facts and
calls ``define``, which compiles it under a ``<sluice …>`` file name (so a traceback says which
generator made the frame) with only the names it binds in scope.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["define"]


def define(source: str, names: str | tuple[str, ...], bind: Mapping[str, Any], label: str) -> Any:
    """Compile ``source`` (one or more ``def``) with the names of ``bind`` global to it; returns the
    function ``names`` defines (or a tuple of them, for a tuple of names)."""
    namespace: dict[str, Any] = dict(bind)
    exec(compile(source, f"<sluice {label}>", "exec"), namespace)
    if isinstance(names, str):
        fn: Callable[..., Any] = namespace[names]
        return fn
    return tuple(namespace[n] for n in names)
