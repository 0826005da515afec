"""What a capture keeps: the table filter (``--tables`` / ``--exclude-tables``) and the operations
filter (``--ops``), parsed once into the plain values the capture core and the Spark source take."""

from __future__ import annotations

import re
from collections.abc import Callable

from sluice.cdc.records import ROW_OPS
from sluice.errors import ConfigError

__all__ = ["parse_ops", "table_filter"]


def table_filter(include: str | None, exclude: str | None) -> Callable[[str, str], bool] | None:
    """A predicate on (db, table) from --tables / --exclude-tables regexes (full match on 'db.table')."""
    if include is None and exclude is None:
        return None
    try:
        inc = re.compile(include) if include is not None else None
        exc = re.compile(exclude) if exclude is not None else None
    except re.error as err:
        raise ConfigError(f"bad table regex: {err}") from None
    cache: dict[tuple[str, str], bool] = {}

    def keep(db: str, table: str) -> bool:
        key = (db, table)
        hit = cache.get(key)
        if hit is None:
            name = f"{db}.{table}"
            hit = (inc is None or inc.fullmatch(name) is not None) and (
                exc is None or exc.fullmatch(name) is None
            )
            cache[key] = hit
        return hit

    return keep


def parse_ops(text: str | None) -> frozenset[str] | None:
    """The ``--ops`` list (``insert,update,delete``, and ``history,delete_history`` of system-versioned
    tables: any of them) as a set; None keeps every operation."""
    if text is None:
        return None
    ops = frozenset(part.strip().lower() for part in text.split(",") if part.strip())
    unknown = ops - set(ROW_OPS)
    if unknown or not ops:
        raise ConfigError(f"--ops takes {', '.join(ROW_OPS)}, comma-separated; found {text!r}")
    return ops
