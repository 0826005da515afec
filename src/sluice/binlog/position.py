"""Binlog positions and checkpoints: where a reader stands and where a resume may start.

A ``Checkpoint`` is a transaction boundary: a binlog file, the offset of the first event after the
boundary, and, when GTIDs are on, the executed GTID set at that point in its text form (MySQL
``"uuid:1-5[:tag:1-3],..."``, MariaDB ``"domain-server-seq,..."``, the value of
``gtid_executed`` / ``gtid_binlog_pos`` a replica would have there). Checkpoints are plain values:
they print as ``binlog.000003:1234 gtid=...`` and round-trip through a small JSON document.
``binlog_file_key`` orders binlog file names the way the server numbers them (the numeric
extension grows past six digits: ``.1000000`` follows ``.999999``), and ``position_key`` (also
``Checkpoint.key``) is the one order of ``(file, offset)`` positions that every part of sluice
compares by. It is the rule of the server's ``Relay_log_info::wait_for_pos`` (``MASTER_POS_WAIT``,
sql/rpl_rli.cc): base name first, then the extension as a number (``log_name_extension``), then
the offset. The server refuses to compare positions under two base names; here they order by the
base name's text, so that a list of positions sorts the same way wherever it is sorted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sluice.errors import ConfigError

__all__ = ["Checkpoint", "binlog_file_key", "position_key"]

_FIELDS = frozenset({"file", "pos", "gtid_set"})


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A transaction boundary in the binlog, with the executed GTIDs there when GTIDs are on."""

    file: str
    pos: int
    gtid_set: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"file": ..., "pos": ..., "gtid_set": ...}`` (``gtid_set`` null when GTIDs are off)."""
        return {"file": self.file, "pos": self.pos, "gtid_set": self.gtid_set}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Checkpoint:
        """Inverse of ``to_json``; a document of another shape raises ``ConfigError``."""
        if not isinstance(data, Mapping):
            raise ConfigError(
                f"a checkpoint must be a JSON object with file, pos and gtid_set; found {type(data).__name__}"
            )
        unknown = sorted(str(k) for k in data if k not in _FIELDS)
        if unknown:
            raise ConfigError(
                f"checkpoint has unknown fields {unknown}: expected only file, pos and gtid_set "
                "(was it written by another program or a newer sluice?)"
            )
        file, pos, gtid_set = data.get("file"), data.get("pos"), data.get("gtid_set")
        if not isinstance(file, str):
            raise ConfigError(f"checkpoint field 'file' must be a binlog file name (a string), found {file!r}")
        if isinstance(pos, bool) or not isinstance(pos, int) or pos < 0:
            raise ConfigError(
                f"checkpoint field 'pos' must be a non-negative integer byte offset, found {pos!r}"
            )
        if gtid_set is not None and not isinstance(gtid_set, str):
            raise ConfigError(
                f"checkpoint field 'gtid_set' must be a GTID set as text or null, found {gtid_set!r}"
            )
        return cls(file, pos, gtid_set)

    @property
    def key(self) -> tuple[str, int, int]:
        """Sort key of this position: ``position_key(file, pos)``."""
        return position_key(self.file, self.pos)

    def __str__(self) -> str:
        text = f"{self.file}:{self.pos}"
        if self.gtid_set is not None:
            text += f" gtid={self.gtid_set}"
        return text


def binlog_file_key(name: str) -> tuple[str, int]:
    """``("mysql-bin", 10)`` for ``"mysql-bin.000010"``: base name and numeric extension.

    A name without a numeric extension sorts before every numbered file of the same base (-1).
    """
    base, dot, ext = name.rpartition(".")
    if dot and ext.isascii() and ext.isdigit():
        return base, int(ext)
    return name, -1


def position_key(file: str, pos: int) -> tuple[str, int, int]:
    """Sort key of a binlog position: base name, numeric extension, then the byte offset (module
    docstring). Every comparison of binlog positions goes through this key."""
    base, number = binlog_file_key(file)
    return base, number, pos
