"""Binlog positions and checkpoints: where a reader stands and where a resume may start.

A ``Checkpoint`` is a transaction boundary: a binlog file, the offset of the first event after the
boundary, and, when GTIDs are on, the executed GTID set at that point in its text form (MySQL
``"uuid:1-5[:tag:1-3],..."``, MariaDB ``"domain-server-seq,..."``, the value of
``gtid_executed`` / ``gtid_binlog_pos`` a replica would have there). Checkpoints are plain values:
they print as ``binlog.000003:1234 gtid=...`` and round-trip through one small JSON document,
``{"file", "pos", "gtid_set"[, "source"]}``: every position sluice keeps (the stream's offsets, each
change-log commit, ``tail --checkpoint``, the snapshot's watermarks) is this document. ``from_json``
also reads the older ``{"file", "pos", "gtid"}`` form (``"gtid"`` ``""`` without GTIDs) and a
document without ``source``.

A checkpoint's ``source`` is the identity of the server whose binlog the file and offset belong to
(``SourceIdentity``: MySQL ``server_uuid``; MariaDB ``server_id`` and the GTID domains in use), None
when it was not recorded. A file and offset mean nothing on another server, while the GTID set means
the same on every server of a replication topology; ``source`` is not part of a checkpoint's
equality, which is the place in the stream.
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
--from``): a GTID set when it reads as one, a checkpoint's JSON document when it is one, else a
position by that rule.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sluice.binlog.gtid import MariadbGtidPosition, MysqlGtidSet
from sluice.errors import ConfigError

__all__ = ["Checkpoint", "SourceIdentity", "binlog_file_key", "furthest", "gtid_covers", "parse_gtids",
           "parse_position", "position_key", "precedes", "same_place", "start_checkpoint"]

_FIELDS = frozenset({"file", "pos", "gtid_set", "source"})
_OLD_FIELDS = frozenset({"file", "pos", "gtid"})


@dataclass(frozen=True, slots=True)
class SourceIdentity:
    """Which server a binlog file and offset belong to: MySQL ``server_uuid``; MariaDB ``server_id``
    (``server``, as decimal text) and the GTID domains in use (``domains``)."""

    flavor: str  # "mysql" or "mariadb"
    server: str
    domains: tuple[int, ...] = ()

    def same_server(self, other: SourceIdentity) -> bool:
        """Whether a file and offset of ``other`` mean the same place here (new domains do not matter)."""
        return (self.flavor, self.server) == (other.flavor, other.server)

    def to_json(self) -> dict[str, Any]:
        """``{"flavor": ..., "server": ..., "domains": [...]}``."""
        return {"flavor": self.flavor, "server": self.server, "domains": list(self.domains)}

    @classmethod
    def from_json(cls, data: Any) -> SourceIdentity:
        """Inverse of ``to_json``; another shape raises ``ConfigError``."""
        if (not isinstance(data, Mapping) or set(data) - {"flavor", "server", "domains"}
                or data.get("flavor") not in ("mysql", "mariadb") or not isinstance(data.get("server"), str)
                or not isinstance(data.get("domains", []), list)
                or not all(isinstance(d, int) and not isinstance(d, bool) for d in data.get("domains", []))):
            raise ConfigError(
                f"a checkpoint's source must be {{\"flavor\": \"mysql\"|\"mariadb\", \"server\": ..., "
                f"\"domains\": [...]}}; found {data!r}"
            )
        return cls(data["flavor"], data["server"], tuple(data.get("domains", ())))

    def __str__(self) -> str:
        if self.flavor == "mysql":
            return self.server
        domains = ",".join(str(d) for d in self.domains)
        return f"server_id {self.server}" + (f" (GTID domains {domains})" if domains else "")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A transaction boundary in the binlog, with the executed GTIDs there when GTIDs are on, and
    the server whose binlog ``file`` is when known (not part of equality: module docstring)."""

    file: str
    pos: int
    gtid_set: str | None = None
    source: SourceIdentity | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        """``{"file": ..., "pos": ..., "gtid_set": ...}`` (``gtid_set`` null when GTIDs are off), with
        ``"source"`` when the server is known."""
        doc: dict[str, Any] = {"file": self.file, "pos": self.pos, "gtid_set": self.gtid_set}
        if self.source is not None:
            doc["source"] = self.source.to_json()
        return doc

    def to_text(self) -> str:
        """The JSON document as compact text (``start_checkpoint`` reads it back)."""
        return json.dumps(self.to_json(), separators=(",", ":"))

    def on(self, source: SourceIdentity | None) -> Checkpoint:
        """This place, as a position on ``source``'s binlog."""
        return Checkpoint(self.file, self.pos, self.gtid_set, source)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Checkpoint:
        """Inverse of ``to_json``, and the older ``{file, pos, gtid}`` form (module docstring); a
        document of another shape raises ``ConfigError``."""
        if not isinstance(data, Mapping):
            raise ConfigError(
                f"a checkpoint must be a JSON object with file, pos and gtid_set; found {type(data).__name__}"
            )
        if "gtid" in data and "gtid_set" not in data and set(data) <= _OLD_FIELDS:
            gtid = data["gtid"]
            if gtid is not None and not isinstance(gtid, str):
                raise ConfigError(f"checkpoint field 'gtid' must be a GTID set as text, found {gtid!r}")
            data = {"file": data.get("file"), "pos": data.get("pos"), "gtid_set": gtid or None}
        unknown = sorted(str(k) for k in data if k not in _FIELDS)
        if unknown:
            raise ConfigError(
                f"checkpoint has unknown fields {unknown}: expected only file, pos, gtid_set and source "
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
        source = data.get("source")
        return cls(file, pos, gtid_set, None if source is None else SourceIdentity.from_json(source))

    @property
    def key(self) -> tuple[str, int, int]:
        """Sort key of this position: ``position_key(file, pos)``."""
        return position_key(self.file, self.pos)

    def __str__(self) -> str:
        text = f"{self.file}:{self.pos}"
        if self.gtid_set is not None:
            text += f" gtid={self.gtid_set}"
        return text


def parse_gtids(text: str) -> MysqlGtidSet | MariadbGtidPosition:
    """A checkpoint's GTID text as a value: a MySQL set (``uuid:1-5``) or a MariaDB position (``0-1-9``)."""
    return MysqlGtidSet.parse(text) if ":" in text else MariadbGtidPosition.parse(text)


def gtid_covers(outer: str, inner: str) -> bool:
    """Whether the GTID text ``outer`` holds every transaction of ``inner`` (both of one flavor)."""
    big, small = parse_gtids(outer), parse_gtids(inner)
    if isinstance(big, MysqlGtidSet) and isinstance(small, MysqlGtidSet):
        return small.issubset(big)
    if isinstance(big, MariadbGtidPosition) and isinstance(small, MariadbGtidPosition):
        return small.issubset(big)
    return not small


def _other_servers(a: Checkpoint, b: Checkpoint) -> bool:
    """Whether ``a`` and ``b`` are known to be read on two servers, each with its GTID set."""
    return (a.source is not None and b.source is not None and not a.source.same_server(b.source)
            and a.gtid_set is not None and b.gtid_set is not None)


def precedes(a: Checkpoint, b: Checkpoint) -> bool:
    """Whether ``a`` comes before ``b`` in one stream: by ``key`` on one server, by GTID set when the
    two were read on two servers (a file and offset mean nothing on another server)."""
    if _other_servers(a, b):
        return gtid_covers(b.gtid_set or "", a.gtid_set or "") and not gtid_covers(a.gtid_set or "", b.gtid_set or "")
    return a.key < b.key


def same_place(a: Checkpoint, b: Checkpoint) -> bool:
    """Whether ``a`` and ``b`` are one boundary: the same GTID set when read on two servers, else the
    same file and offset."""
    if _other_servers(a, b):
        return gtid_covers(a.gtid_set or "", b.gtid_set or "") and gtid_covers(b.gtid_set or "", a.gtid_set or "")
    return a.key == b.key


def furthest(points: list[Checkpoint]) -> Checkpoint:
    """The furthest of positions of one stream: by GTID set when each has one (the furthest holds all
    the others', whichever server each was read on), else by ``key``."""
    if all(p.gtid_set for p in points):
        for p in points:
            if all(gtid_covers(p.gtid_set or "", o.gtid_set or "") for o in points):
                return p
    return max(points, key=lambda p: p.key)


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
    """Where a start given as a GTID set, a checkpoint or a binlog position begins: the GTID set when
    ``text`` reads as one (MySQL ``uuid:1-100,...`` or MariaDB ``0-1-100,...``), the checkpoint when
    it is ``Checkpoint.to_text``'s document, else ``parse_position``'s position; a ``ConfigError``
    naming ``option`` when it is none of these."""
    if text.lstrip().startswith("{"):
        try:
            return Checkpoint.from_json(json.loads(text))
        except (ValueError, ConfigError) as exc:
            raise ConfigError(f"{option} is not a checkpoint's JSON document ({exc}): {text!r}") from None
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
