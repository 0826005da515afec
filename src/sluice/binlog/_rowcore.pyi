"""Types of the compiled row core (``_rowcore.pyx``)."""

from typing import Any

class Reject(Exception): ...

class RowProgram:
    def __init__(self, column_count: int, images: list[list[tuple[int, tuple[str, int, int, Any]]]],
                 absent: object) -> None: ...
    def decode(self, buf: bytes, start: int, end: int) -> list[Any]: ...
