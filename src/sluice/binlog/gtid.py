"""GTIDs and GTID sets of both server families, as values.

MySQL: a GTID is ``uuid[:tag]:gno``; ``MysqlGtidSet`` is a set of them kept as sorted, merged,
closed intervals per ``(uuid, tag)`` (``sluice.binlog.gtid_intervals``), with parse/format of the
text form (``"uuid:1-5:7,uuid2:tag:1-3"``, canonical: lower-case, sorted, untagged intervals
first), union, difference, membership, and the binary form used by PREVIOUS_GTIDS events and
COM_BINLOG_DUMP_GTID (``Gtid_set::encode`` in sql/rpl_gtid_set.cc: the untagged format when no
tag is present, the tagged one otherwise). MariaDB: a GTID is ``domain-server-seq`` and a
replication position holds the last GTID of each domain (``MariadbGtidPosition``).
"""

from __future__ import annotations

import re
import struct
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from sluice.binlog import gtid_intervals
from sluice.binlog.decoders._reader import read_varlen, write_varlen
from sluice.binlog.gtid_intervals import GNO_MAX, Interval
from sluice.errors import ConfigError

_TAG_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
_U64 = struct.Struct("<Q")
_TAGGED_FORMAT = 1

Tsid = tuple[uuid.UUID, str]  # tag "" = untagged


class GtidSyntaxError(ConfigError, ValueError):
    """A GTID or GTID set in text form that does not parse (a ``ConfigError``: it comes from the user
    or a checkpoint; a ``ValueError`` as well, for callers that parse text generally)."""


def _norm_tag(tag: str | None) -> str:
    if not tag:
        return ""
    if not _TAG_RE.match(tag):
        raise GtidSyntaxError(
            f"invalid GTID tag {tag!r}: expected a letter or '_' then up to 31 letters, digits or '_'"
        )
    return tag.lower()


@dataclass(frozen=True, slots=True, order=True)
class Gtid:
    """One MySQL GTID, ``uuid[:tag]:gno``."""

    uuid: uuid.UUID
    gno: int
    tag: str | None = None

    def __str__(self) -> str:
        return f"{self.uuid}:{self.tag}:{self.gno}" if self.tag else f"{self.uuid}:{self.gno}"

    @classmethod
    def parse(cls, text: str) -> Gtid:
        """Parse ``uuid:gno`` or ``uuid:tag:gno``; ``GtidSyntaxError`` otherwise."""
        parts = text.strip().split(":")
        try:
            if len(parts) == 2:
                return cls(uuid.UUID(parts[0]), _gno(parts[1]))
            if len(parts) == 3:
                return cls(uuid.UUID(parts[0]), _gno(parts[2]), _norm_tag(parts[1]) or None)
        except ValueError as e:
            raise GtidSyntaxError(f"invalid GTID {text!r}: {e}") from e
        raise GtidSyntaxError(f"invalid GTID {text!r}: expected uuid:gno or uuid:tag:gno")


def _gno(text: str) -> int:
    s = text.strip()
    if not s.isdigit():
        raise GtidSyntaxError(f"invalid transaction number {text!r}")
    v = int(s)
    if not 1 <= v <= GNO_MAX:
        raise GtidSyntaxError(f"transaction number {v} outside 1..{GNO_MAX}")
    return v


class MysqlGtidSet:
    """A set of MySQL GTIDs. ``add`` changes the set in place; the operators return new sets."""

    __slots__ = ("_sets",)

    def __init__(self, intervals: dict[Tsid, list[Interval]] | None = None) -> None:
        self._sets: dict[Tsid, list[Interval]] = {}
        if intervals:
            for k, v in intervals.items():
                merged = gtid_intervals.merge(v)
                if merged:
                    self._sets[k] = merged

    # -- text form -------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> MysqlGtidSet:
        """Parse the text form (``uuid:1-5:7,uuid:tag:1-3``; empty text is the empty set)."""
        acc: dict[Tsid, list[Interval]] = {}
        text = text.strip()
        if not text:
            return cls()
        for group in text.split(","):
            parts = [p.strip() for p in group.strip().split(":")]
            if len(parts) < 2:
                raise GtidSyntaxError(f"invalid GTID set element {group.strip()!r}: expected uuid:interval")
            try:
                sid = uuid.UUID(parts[0])
            except ValueError as e:
                raise GtidSyntaxError(f"invalid UUID {parts[0]!r} in GTID set") from e
            tag = ""
            for p in parts[1:]:
                if p and (p[0].isalpha() or p[0] == "_"):
                    tag = _norm_tag(p)
                    acc.setdefault((sid, tag), [])
                    continue
                lo, sep, hi = p.partition("-")
                a = _gno(lo)
                b = _gno(hi) if sep else a
                if b < a:
                    raise GtidSyntaxError(f"invalid interval {p!r}: end before start")
                acc.setdefault((sid, tag), []).append((a, b))
        return cls(acc)

    def __str__(self) -> str:
        by_uuid: dict[uuid.UUID, list[str]] = {}
        for (sid, tag), ivs in sorted(self._sets.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            parts = by_uuid.setdefault(sid, [str(sid)])
            if tag:
                parts.append(tag)
            parts.extend(f"{a}" if a == b else f"{a}-{b}" for a, b in ivs)
        return ",".join(":".join(p) for p in by_uuid.values())

    def __repr__(self) -> str:
        return f"MysqlGtidSet({str(self)!r})"

    # -- algebra ---------------------------------------------------------------------------
    def add(self, gtid: Gtid) -> None:
        """Add one GTID to the set, in place."""
        key = (gtid.uuid, _norm_tag(gtid.tag))
        ivs = self._sets.get(key)
        g = gtid.gno
        if ivs is None:
            self._sets[key] = [(g, g)]
            return
        a, b = ivs[-1]
        if g == b + 1:
            ivs[-1] = (a, g)
        elif g > b + 1:
            ivs.append((g, g))
        elif g not in self:
            self._sets[key] = gtid_intervals.merge([*ivs, (g, g)])

    def __contains__(self, gtid: object) -> bool:
        if not isinstance(gtid, Gtid):
            return False
        ivs = self._sets.get((gtid.uuid, _norm_tag(gtid.tag)))
        if not ivs:
            return False
        return gtid_intervals.contains(ivs, gtid.gno)

    def union(self, other: MysqlGtidSet) -> MysqlGtidSet:
        """The GTIDs in either set (``|``)."""
        acc = {k: list(v) for k, v in self._sets.items()}
        for k, v in other._sets.items():
            acc.setdefault(k, []).extend(v)
        return MysqlGtidSet(acc)

    def subtract(self, other: MysqlGtidSet) -> MysqlGtidSet:
        """The GTIDs of this set that are not in ``other`` (``-``)."""
        acc = {}
        for k, v in self._sets.items():
            ov = other._sets.get(k)
            acc[k] = gtid_intervals.subtract(v, ov) if ov else list(v)
        return MysqlGtidSet(acc)

    __or__ = union
    __sub__ = subtract

    def issubset(self, other: MysqlGtidSet) -> bool:
        """True when every GTID of this set is in ``other``."""
        return not self.subtract(other)

    def __bool__(self) -> bool:
        return bool(self._sets)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MysqlGtidSet) and self._sets == other._sets

    __hash__ = None  # type: ignore[assignment]

    def copy(self) -> MysqlGtidSet:
        """An independent copy (``add`` on it leaves this set alone)."""
        s = MysqlGtidSet()
        s._sets = {k: list(v) for k, v in self._sets.items()}
        return s

    def intervals(self) -> dict[Tsid, tuple[Interval, ...]]:
        """``{(uuid, tag or ""): ((first, last), ...)}`` in canonical order."""
        return {k: tuple(v) for k, v in sorted(self._sets.items(), key=lambda kv: (kv[0][0].bytes, kv[0][1]))}

    def __iter__(self) -> Iterator[Gtid]:
        for (sid, tag), ivs in self.intervals().items():
            for a, b in ivs:
                for g in range(a, b + 1):
                    yield Gtid(sid, g, tag or None)

    @property
    def tagged(self) -> bool:
        """True when some GTID has a tag: ``encode`` then writes the tagged format."""
        return any(tag for _, tag in self._sets)

    # -- binary form -----------------------------------------------------------------------
    def encode(self) -> bytes:
        """The ``Gtid_set::encode`` form: intervals are stored half-open ``[first, last + 1)``."""
        items = self.intervals()
        tagged = self.tagged
        n = len(items)
        out = bytearray(_U64.pack((_TAGGED_FORMAT << 56) | (n << 8) | _TAGGED_FORMAT if tagged else n))
        for (sid, tag), ivs in items.items():
            out += sid.bytes
            if tagged:
                t = tag.encode("ascii")
                out += write_varlen(len(t)) + t
            out += gtid_intervals.encode(ivs)
        return bytes(out)

    @classmethod
    def decode(cls, buf: bytes | memoryview, pos: int = 0, end: int | None = None) -> MysqlGtidSet:
        """Inverse of ``encode``; the encoding must fill ``buf[pos:end]`` exactly."""
        end = len(buf) if end is None else end
        (head,) = _U64.unpack_from(buf, pos)
        pos += 8
        tagged = (head >> 56) == _TAGGED_FORMAT
        if tagged:
            n = (head >> 8) & ((1 << 48) - 1)
        elif head >> 56:
            raise ValueError(f"unknown GTID set format {head >> 56}")
        else:
            n = head
        acc: dict[Tsid, list[Interval]] = {}
        for _ in range(n):
            if pos + 16 > end:
                raise ValueError("GTID set ends inside a UUID")
            sid = uuid.UUID(bytes=bytes(buf[pos : pos + 16]))
            pos += 16
            tag = ""
            if tagged:
                tlen, pos = read_varlen(buf, pos)
                if pos + tlen > end:
                    raise ValueError("GTID set ends inside a tag")
                tag = _norm_tag(bytes(buf[pos : pos + tlen]).decode("ascii"))
                pos += tlen
            ivs, pos = gtid_intervals.decode(buf, pos, end)
            acc.setdefault((sid, tag), []).extend(ivs)
        if pos != end:
            raise ValueError(f"{end - pos} bytes left after the GTID set")
        return cls(acc)


# -- MariaDB ---------------------------------------------------------------------------------
_MARIA_RE = re.compile(r"^\s*(\d+)-(\d+)-(\d+)\s*$")


@dataclass(frozen=True, slots=True, order=True)
class MariadbGtid:
    """One MariaDB GTID, ``domain-server_id-seq_no``."""

    domain: int
    server_id: int
    seq: int

    def __str__(self) -> str:
        return f"{self.domain}-{self.server_id}-{self.seq}"

    @classmethod
    def parse(cls, text: str) -> MariadbGtid:
        """Parse ``domain-server_id-seq_no``; ``GtidSyntaxError`` otherwise."""
        m = _MARIA_RE.match(text)
        if not m:
            raise GtidSyntaxError(f"invalid MariaDB GTID {text!r}: expected domain-server_id-seq_no")
        d, s, q = (int(x) for x in m.groups())
        if d >= 1 << 32 or s >= 1 << 32 or q >= 1 << 64:
            raise GtidSyntaxError(f"MariaDB GTID {text!r} out of range")
        return cls(d, s, q)


class MariadbGtidPosition:
    """A MariaDB replication position: the last GTID applied in each replication domain."""

    __slots__ = ("_by_domain",)

    def __init__(self, gtids: Iterable[MariadbGtid] = ()) -> None:
        self._by_domain: dict[int, MariadbGtid] = {}
        for g in gtids:
            self.advance(g)

    @classmethod
    def parse(cls, text: str) -> MariadbGtidPosition:
        """Parse a comma-separated list of GTIDs, at most one per domain (``gtid_slave_pos`` form)."""
        text = text.strip()
        pos = cls()
        if not text:
            return pos
        for part in text.split(","):
            g = MariadbGtid.parse(part)
            if g.domain in pos._by_domain:
                raise GtidSyntaxError(f"MariaDB GTID position {text!r} names domain {g.domain} twice")
            pos._by_domain[g.domain] = g
        return pos

    def advance(self, gtid: MariadbGtid) -> None:
        """Record ``gtid`` as the last transaction of its domain."""
        self._by_domain[gtid.domain] = gtid

    def get(self, domain: int) -> MariadbGtid | None:
        """The position's GTID of ``domain``, or None."""
        return self._by_domain.get(domain)

    # -- algebra ---------------------------------------------------------------------------
    # A position covers, per domain, every sequence number up to its GTID's (the server's
    # reading of gtid_slave_pos in gtid_strict_mode); server ids do not enter the order.
    def __contains__(self, gtid: object) -> bool:
        """True when ``gtid`` is at or before this position's GTID of its domain."""
        if not isinstance(gtid, MariadbGtid):
            return False
        last = self._by_domain.get(gtid.domain)
        return last is not None and gtid.seq <= last.seq

    def union(self, other: MariadbGtidPosition) -> MariadbGtidPosition:
        """Per domain the later GTID (higher sequence number; ``self`` wins a tie)."""
        out = self.copy()
        for g in other._by_domain.values():
            mine = out._by_domain.get(g.domain)
            if mine is None or g.seq > mine.seq:
                out._by_domain[g.domain] = g
        return out

    def subtract(self, other: MariadbGtidPosition) -> MariadbGtidPosition:
        """The GTIDs of this position that ``other`` does not cover."""
        return MariadbGtidPosition(g for g in self._by_domain.values() if g not in other)

    __or__ = union
    __sub__ = subtract

    def issubset(self, other: MariadbGtidPosition) -> bool:
        """True when ``other`` covers every GTID of this position."""
        return not self.subtract(other)

    def __iter__(self) -> Iterator[MariadbGtid]:
        return iter(sorted(self._by_domain.values()))

    def __len__(self) -> int:
        return len(self._by_domain)

    def __str__(self) -> str:
        return ",".join(str(g) for g in self)

    def __repr__(self) -> str:
        return f"MariadbGtidPosition({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MariadbGtidPosition) and self._by_domain == other._by_domain

    __hash__ = None  # type: ignore[assignment]

    def copy(self) -> MariadbGtidPosition:
        """An independent copy (``advance`` on it leaves this position alone)."""
        return MariadbGtidPosition(self._by_domain.values())
