"""The executed GTIDs of a stream: what a replica would hold in ``gtid_executed`` / ``gtid_binlog_pos``.

``ExecutedGtids`` starts from a checkpoint's GTID text (a MySQL set, a MariaDB position, an empty
text whose flavor the first GTID decides, or nothing: GTIDs are then tracked from the next
PREVIOUS_GTIDS on). ``add`` records a transaction's GTID and says whether it is new (False: executed
before, a transaction to skip); ``previous`` merges a PREVIOUS_GTIDS event, ``gtid_list`` takes a
MariaDB GTID_LIST when nothing is known yet. ``text`` is the checkpoint text, cached until the next
change; ``without`` is that text minus GTIDs that must not count yet (prepared XA transactions).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sluice.binlog.gtid import Gtid, GtidSyntaxError, MariadbGtid, MariadbGtidPosition, MysqlGtidSet
from sluice.errors import ConfigError

__all__ = ["ExecutedGtids"]

_UNSET: Any = object()


class ExecutedGtids:
    """The executed GTID set (MySQL) or position (MariaDB) of one stream (module docstring)."""

    def __init__(self, text: str | None, *, where: str = "") -> None:
        self.mysql: MysqlGtidSet | None = None
        self.maria: MariadbGtidPosition | None = None
        self._empty = False  # the start named an empty GTID set: flavor decided by the first GTID
        self._previous_empty = False  # an empty PREVIOUS_GTIDS was read: a set starts with the first GTID
        self._text: Any = _UNSET
        if text is None:
            return
        try:
            if not text.strip():
                self._empty = True
            elif ":" in text:
                self.mysql = MysqlGtidSet.parse(text)
            else:
                self.maria = MariadbGtidPosition.parse(text)
        except GtidSyntaxError as exc:
            raise ConfigError(
                f"the start checkpoint {where} has a GTID set that does not parse ({exc}); expected a MySQL "
                "set like 'uuid:1-5' or a MariaDB position like '0-1-100'"
            ) from None

    def add(self, gtid: Gtid | MariadbGtid | None) -> bool:
        """Record ``gtid`` as executed; False when it was executed before (a transaction to skip)."""
        if gtid is None:
            return True
        if type(gtid) is Gtid:
            s = self.mysql
            if s is None:
                if not (self._empty or self._previous_empty):
                    return True  # no executed set known: GTIDs are tracked from the next PREVIOUS_GTIDS on
                s = self.mysql = MysqlGtidSet()
                self._empty = False
            elif gtid in s:
                return False
            s.add(gtid)
        else:
            assert isinstance(gtid, MariadbGtid)
            p = self.maria
            if p is None:
                if not self._empty:
                    return True
                p = self.maria = MariadbGtidPosition()
                self._empty = False
            else:
                last = p.get(gtid.domain)
                if last is not None and last.server_id == gtid.server_id and gtid.seq <= last.seq:
                    return False
            p.advance(gtid)
        self._text = _UNSET
        return True

    def previous(self, previous: MysqlGtidSet) -> bool:
        """Merge a PREVIOUS_GTIDS event; True when the set changed."""
        if self.mysql is not None:
            merged = self.mysql.union(previous)
            if merged == self.mysql:
                return False
            self.mysql = merged
        elif previous or self._empty:
            self.mysql = previous.copy()
            self._empty = False
        else:
            self._previous_empty = True
            return False
        self._text = _UNSET
        return True

    def gtid_list(self, gtids: Iterable[MariadbGtid]) -> bool:
        """A MariaDB GTID_LIST: the position, when none is known yet; True when it was taken."""
        if self.maria is not None or self.mysql is not None:
            return False
        self.maria = MariadbGtidPosition(tuple(gtids))
        self._empty = False
        self._text = _UNSET
        return True

    def text(self) -> str | None:
        """The checkpoint text: the set / position, "" for a known empty one, None when unknown."""
        text: str | None = self._text
        if text is _UNSET:
            if self.mysql is not None:
                text = str(self.mysql)
            elif self.maria is not None:
                text = str(self.maria)
            else:
                text = "" if self._empty else None
            self._text = text
        return text

    def without(self, pending: Iterable[Gtid | MariadbGtid | None]) -> str | None:
        """The text without the MySQL GTIDs in ``pending`` (MariaDB positions stay as they are)."""
        if self.mysql is None:
            return self.text()
        held = MysqlGtidSet()
        for g in pending:
            if type(g) is Gtid:
                held.add(g)
        return str(self.mysql.subtract(held))
