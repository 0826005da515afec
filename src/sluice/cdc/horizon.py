"""The furthest transaction boundary a stream has passed on the server it is read on.

A reconnect that starts at a held-back boundary (before an XA transaction prepared and not yet
committed) reads again transactions that ended before; ``Horizon.passed`` says which, for the
positions of one binlog base name. A stream read on on another server (a failover) ``forget``s it:
the new server's files and offsets are other positions.
"""

from __future__ import annotations

from sluice.binlog.position import position_key

__all__ = ["Horizon"]


class Horizon:
    """The furthest ``position_key`` passed (module docstring)."""

    __slots__ = ("key",)

    def __init__(self, file: str, pos: int) -> None:
        self.key = position_key(file, pos)

    def reach(self, file: str, pos: int) -> None:
        """The stream is at ``file:pos``: the horizon moves there when it is further (or another base name)."""
        key = position_key(file, pos)
        if key[0] != self.key[0] or key > self.key:
            self.key = key

    def passed(self, file: str, end: int) -> bool:
        """Whether a transaction ending at ``file:end`` ended before: it is being read again."""
        key = position_key(file, end)
        return key[0] == self.key[0] and key <= self.key

    def forget(self) -> None:
        """The stream is read on another server: nothing of its positions was passed."""
        self.key = ("", -1, -1)
