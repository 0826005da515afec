"""The period of a MariaDB system-versioned table, as ``TableSchema.system_time`` holds it.

A system-versioned table (``WITH SYSTEM VERSIONING``) keeps every old version of its rows in itself;
each row's period of validity is in its row start and row end columns (``cdc.schema.ddl.versioning``
says how DDL makes them, ``cdc.records.versioned_op`` how a row's op follows from its row end).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sluice.errors import ConfigError

__all__ = ["SystemTime"]


@dataclass(frozen=True, slots=True)
class SystemTime:
    """The period of a MariaDB system-versioned table (``WITH SYSTEM VERSIONING``): its row start and
    row end columns. ``implicit``: the server added them itself as ``row_start`` / ``row_end``, the
    last two columns of every row image, invisible (no ``SELECT *`` shows them, and
    ``information_schema.COLUMNS`` does not list them); otherwise they were declared ``GENERATED
    ALWAYS AS ROW START`` / ``ROW END`` and are columns like the others."""

    start: str
    end: str
    implicit: bool

    def to_json(self) -> dict[str, Any]:
        """``{"start": ..., "end": ..., "implicit": ...}``."""
        return {"start": self.start, "end": self.end, "implicit": self.implicit}

    @classmethod
    def from_json(cls, d: Any) -> SystemTime:
        """Inverse of ``to_json``; another shape raises ``ConfigError``."""
        if (not isinstance(d, dict) or set(d) != {"start", "end", "implicit"} or not isinstance(d["start"], str)
                or not isinstance(d["end"], str) or not isinstance(d["implicit"], bool)):
            raise ConfigError(f"system_time must be {{'start': name, 'end': name, 'implicit': bool}}, found {d!r:.200}")
        return cls(d["start"], d["end"], d["implicit"])
