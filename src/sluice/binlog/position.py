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

A position a user writes has one rule, ``parse_position``: ``FILE:POS`` with a non-empty file name
and an offset of ASCII digits, 4 or more (the first event follows the 4-byte binlog header); a bare
``FILE`` means ``FILE:4``; a text that reads as a GTID set is not a position. ``start_checkpoint``
reads a start that may be either (the ``binlog`` source's ``startingPosition``, ``sluice run
--from``): a GTID set when it reads as one, else a position by that rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sluice.binlog.gtid import MariadbGtidPosition, MysqlGtidSet
from sluice.errors import ConfigError

__all__ = ["Checkpoint", "binlog_file_key", "parse_position", "position_key", "start_checkpoint"]

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


def parse_position(text: str, option: str) -> tuple[str, int]:
    """``FILE:POS`` -> ``(file, pos)``, a bare ``FILE`` -> ``(file, 4)``; anything else, a GTID set
    included, is a ``ConfigError`` naming ``option`` (see the module docstring for the rule)."""
    file, sep, digits = text.strip().rpartition(":")
    if not sep:
        file, digits = digits, "4"
    if (file and not any(c.isspace() for c in file) and digits.isascii() and digits.isdigit()
            and int(digits) >= 4 and not _is_gtid_set(text)):
        return file, int(digits)
    raise _bad_start(option, text, gtid=False)


def start_checkpoint(text: str, option: str) -> Checkpoint:
    """Where a start given as a GTID set or a binlog position begins: the GTID set when ``text``
    reads as one (MySQL ``uuid:1-100,...`` or MariaDB ``0-1-100,...``), else ``parse_position``'s
    position; a ``ConfigError`` naming ``option`` when it is neither."""
    if _is_gtid_set(text):
        return Checkpoint("", 4, text.strip())
    try:
        return Checkpoint(*parse_position(text, option))
    except ConfigError:
        raise _bad_start(option, text, gtid=True) from None


def _is_gtid_set(text: str) -> bool:
    if not text.strip():
        return False
    for parse in (MysqlGtidSet.parse, MariadbGtidPosition.parse):
        try:
            parse(text)
        except (ConfigError, ValueError):
            continue
        return True
    return False


def _bad_start(option: str, text: str, *, gtid: bool) -> ConfigError:
    """The one message for a start that does not parse: what it takes, an example, what was found."""
    either = "a GTID set (MySQL uuid:1-100, MariaDB 0-1-100) or " if gtid else ""
    return ConfigError(
        f"{option} takes {either}a binlog position FILE:POS: a binlog file name and a byte offset of 4 or "
        f"more, such as binlog.000003:4 (a bare FILE means FILE:4); found {text!r}"
    )
