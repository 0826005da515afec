"""``ABSENT``: a column that is not part of a (minimal) row image. SQL NULL is ``None``."""

from __future__ import annotations

from typing import Final

__all__ = ["ABSENT"]


class _Absent:
    """The type of :data:`ABSENT`."""

    __slots__ = ()
    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "ABSENT"


#: A column that is not part of a (minimal) row image. SQL NULL is ``None``.
ABSENT: Final = _Absent()
