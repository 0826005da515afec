"""Sharded tables routed into one mirror (``--route REGEX=TARGET``): which source tables go to which
mirror, and what makes several tables one mirror's sources.

A route is a regex matched in full on a source table's ``db.table`` and a target ``db.table`` that
may use the regex's groups as Python's ``re`` does in a replacement (``\\1``, ``\\g<name>``). Routes
are tried in the order given; the first that matches names the table's mirror. A table no route
matches keeps its own mirror. The mirror of routed tables holds every source table's rows with two
more columns, ``_source_db`` and ``_source_table`` (``SOURCE_COLUMNS``), which follow the tables'
primary key in the mirror's key (``mirror_key``), so equal keys from two shards stay two rows.

Routed tables must agree on their primary key (the same column names in the same order): one mirror
has one key. ``Routes.check`` refuses a catalog where they do not, with ``RouteConflictError``
naming both tables and both keys. Routing touches only the mirrors: the change log keeps every
change's own ``db`` and ``table``.

This module owns the rule and its text form; the lake applies it (``sluice.lake.mirror.routed``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sluice.errors import ConfigError, RouteConflictError

__all__ = ["SOURCE_COLUMNS", "SOURCE_DB", "SOURCE_TABLE", "Route", "Routes", "mirror_key", "parse_routes"]

SOURCE_DB = "_source_db"
SOURCE_TABLE = "_source_table"
SOURCE_COLUMNS = (SOURCE_DB, SOURCE_TABLE)

Name = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Route:
    """One ``REGEX=TARGET``: the regex on ``db.table`` and the target's template."""

    pattern: re.Pattern[str]
    target: str

    @property
    def text(self) -> str:
        """The route as it was given: ``REGEX=TARGET``."""
        return f"{self.pattern.pattern}={self.target}"

    def apply(self, db: str, table: str) -> Name | None:
        """The mirror of ``db.table`` by this route, None when the regex does not match it in full."""
        m = self.pattern.fullmatch(f"{db}.{table}")
        if m is None:
            return None
        try:
            name = m.expand(self.target)
        except (re.error, IndexError) as exc:
            raise ConfigError(f"--route {self.text!r}: the target does not expand for {db}.{table}: {exc}") from None
        target_db, dot, target_table = name.partition(".")
        if not dot or not target_db or not target_table or "." in target_table:
            raise ConfigError(f"--route {self.text!r} names {name!r} as the mirror of {db}.{table}; "
                              "a target is db.table")
        return target_db, target_table


@dataclass(frozen=True)
class Routes:
    """The routes in the order given: the first that matches a table names its mirror."""

    routes: tuple[Route, ...]
    _cache: dict[Name, Name | None] = field(default_factory=dict, repr=False, compare=False)

    @property
    def texts(self) -> list[str]:
        """The routes as given, in order (what ``capture.json`` and the source's options hold)."""
        return [r.text for r in self.routes]

    def target(self, db: str, table: str) -> Name | None:
        """The mirror ``(db, table)`` of a routed table, None for a table no route matches."""
        key = (db, table)
        if key not in self._cache:
            self._cache[key] = next((t for r in self.routes if (t := r.apply(db, table)) is not None), None)
        return self._cache[key]

    def mirror_of(self, db: str, table: str) -> Name:
        """The mirror of ``db.table``: its route's target, else its own name."""
        return self.target(db, table) or (db, table)

    def groups(self, names: Iterable[Name]) -> dict[Name, list[Name]]:
        """The routed tables among ``names`` by their mirror, each group in the order given."""
        out: dict[Name, list[Name]] = {}
        for db, table in names:
            target = self.target(db, table)
            if target is not None:
                out.setdefault(target, []).append((db, table))
        return out

    def check(self, schemas: Iterable[Any], unrouted: Iterable[Name] = ()) -> None:
        """Refuse routed tables that cannot share their mirror: two whose primary keys differ, or
        one without a key, or a target that is also a table mirrored as itself (``unrouted``).
        ``schemas``: ``TableSchema``s of the captured tables."""
        by_target: dict[Name, list[Any]] = {}
        for s in schemas:
            target = self.target(s.db, s.name)
            if target is not None:
                by_target.setdefault(target, []).append(s)
        own = set(unrouted)
        for target, group in by_target.items():
            first = group[0]
            for s in group:
                if not s.primary_key:
                    raise RouteConflictError(
                        f"--route sends {s.db}.{s.name} to the mirror {target[0]}.{target[1]}, but the table has no "
                        "primary key: only keyed tables are mirrored. Leave it out of the route")
                if tuple(s.primary_key) != tuple(first.primary_key):
                    raise RouteConflictError(
                        f"--route sends {first.db}.{first.name} (primary key {', '.join(first.primary_key)}) and "
                        f"{s.db}.{s.name} (primary key {', '.join(s.primary_key)}) to the one mirror "
                        f"{target[0]}.{target[1]}, which has one key: give them the same primary key, or route them "
                        "to different mirrors")
                for c in SOURCE_COLUMNS:
                    if any(col.name == c for col in s.columns):
                        raise RouteConflictError(
                            f"{s.db}.{s.name} has a column {c}, the name a routed mirror keeps for the source "
                            f"table's name: route it elsewhere or leave it out of --route")
            if any((s.db, s.name) == target for ss in by_target.values() for s in ss):
                raise RouteConflictError(
                    f"--route sends {target[0]}.{target[1]} itself into the routed mirror of that name: a mirror of "
                    "routed tables is named apart from every source table. Route to another name")
            if target in own:
                raise RouteConflictError(
                    f"--route sends tables to {target[0]}.{target[1]}, which is also a captured table mirrored as "
                    "itself: route to another name, or exclude that table")


def mirror_key(primary_key: Sequence[str]) -> tuple[str, ...]:
    """The key of a routed mirror: the tables' primary key, then ``_source_db``, ``_source_table``."""
    return (*primary_key, *SOURCE_COLUMNS)


def parse_routes(texts: Iterable[str] | None, where: str = "--route") -> Routes | None:
    """``Routes`` of ``REGEX=TARGET`` texts (None: none given). The target is after the last ``=``
    (a regex may hold ``=``, a table name in the target may not); a bad regex or target is a
    ``ConfigError``."""
    if texts is None:
        return None
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise ConfigError(f"{where} is a list of 'REGEX=TARGET' strings; found {texts!r}")
    routes = []
    for text in texts:
        regex, eq, target = text.rpartition("=")
        if not eq or not regex or not target:
            raise ConfigError(f"{where} {text!r} is not REGEX=TARGET, e.g. 'shop_[0-9]+\\.orders=shop.orders'")
        try:
            pattern = re.compile(regex)
        except re.error as exc:
            raise ConfigError(f"{where} {text!r}: {regex!r} is not a regular expression: {exc}") from None
        if target.count(".") != 1 or "/" in target:
            raise ConfigError(f"{where} {text!r}: the target {target!r} is not db.table")
        group_refs = re.findall(r"\\(\d+)|\\g<(\w+)>", target)
        for number, name in group_refs:
            if (number and int(number) > pattern.groups) or (name and not (
                    name in pattern.groupindex or (name.isdigit() and int(name) <= pattern.groups))):
                raise ConfigError(f"{where} {text!r}: the target names group {number or name}, which the regex "
                                  "does not have")
        routes.append(Route(pattern, target))
    return Routes(tuple(routes)) if routes else None
