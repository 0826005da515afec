"""The character-set facts a QUERY event carries about the session that ran it.

A replica applies a DDL statement with the session's ``collation_server`` and default collations
its QUERY event carries, so ``CREATE DATABASE d`` without a character set gets the server's, as it
was when the statement ran. ``SessionCharsets`` reads them off a ``QueryEvent`` and lays them over a
``Catalog``'s server defaults before the tracker replays the statement.
"""

from __future__ import annotations

from dataclasses import dataclass

from sluice.binlog.events import QueryEvent
from sluice.binlog.values.charsets import COLLATION_CHARSETS
from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.typemap import collation_name

__all__ = ["SessionCharsets"]


@dataclass(frozen=True, slots=True)
class SessionCharsets:
    """The character-set facts a QUERY event carries about the session that ran it: the
    ``collation_server`` id (``Q_CHARSET_CODE``), MariaDB 11.2+'s ``character_set_collations``
    (status variable 131: (character set's default collation id, collation id) pairs; the
    character set is that of either) and MySQL 8.0+'s ``default_collation_for_utf8mb4``."""

    collation_server: int | None = None
    collations: tuple[tuple[int, int], ...] = ()
    utf8mb4_default: int | None = None

    @classmethod
    def of(cls, event: QueryEvent) -> SessionCharsets | None:
        """The facts of a QUERY event; None when it carries none."""
        server = event.charset[2] if event.charset is not None else None
        pairs = event.character_set_collations or ()
        if server is None and not pairs and event.default_collation_for_utf8mb4 is None:
            return None
        return cls(server, pairs, event.default_collation_for_utf8mb4)

    def applied(self, catalog: Catalog) -> Catalog:
        """``catalog`` with the server's defaults of this session; the same object when it has them."""
        defaults = catalog.default_collations()
        ids = [*self.collations, *(((0, self.utf8mb4_default),) if self.utf8mb4_default is not None else ())]
        for _, cid in ids:
            cs, name = COLLATION_CHARSETS.get(cid), collation_name(cid)
            if cs is not None and name is not None:
                defaults[cs] = name
        cs = COLLATION_CHARSETS.get(self.collation_server) if self.collation_server is not None else None
        if cs is None:
            cs, coll = catalog.server_charset, catalog.server_collation
        else:
            coll = collation_name(self.collation_server)
            if coll is None:  # an id sluice has no name for: its character set is what decoding needs
                coll = catalog.server_collation if catalog.server_charset == cs else defaults.get(cs)
        if (cs, coll, defaults) == (catalog.server_charset, catalog.server_collation, catalog.default_collations()):
            return catalog
        return catalog.with_server_defaults(server_charset=cs, server_collation=coll, default_collations=defaults)
