"""The persisted schema history: which table definitions were in force at each binlog position.

A JSON-lines file owned by this module. The first line names the format; every other line is one
entry: a ``bootstrap`` (a whole catalog read from a server, for a capture starting at a binlog
position; ``read_at`` is where the server stood when it was read, when that is later: DDL logged
between the two is already in the catalog, see ``SchemaTracker``) or
a ``change`` (the new definitions of the tables a DDL statement, or a FULL-metadata correction,
touched at its position; ``null`` for a dropped table; plus the database defaults when they changed).
Each entry also names, when known, the transaction boundary it belongs to in the ``Checkpoint``
form every position of sluice has (``at``: file, offset, the executed GTID set there and the
server): a bootstrap its capture's start, a change the boundary its DDL's transaction starts at.
Lines written before entries carried it still load (``at`` None).
``catalog_at(file, pos)`` rebuilds the catalog an event at that position was written under: the
last bootstrap at or before it, then every change from the bootstrap's position up to, but not
including, the event's position, in binlog order (``sluice.binlog.position.position_key``). Recording
is idempotent on the position, so a restart that replays events already recorded writes nothing
twice. Every append is flushed and fsynced before ``record`` returns; an unterminated last line
(a crash in the middle of an append that therefore never returned) is dropped when the file is
opened, and any other damage raises ``ConfigError`` naming the file and line.
"""

from __future__ import annotations

import bisect
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sluice.binlog.position import Checkpoint, position_key
from sluice.cdc.schema.catalog import Catalog, DbDefaults
from sluice.cdc.schema.model import TableSchema
from sluice.errors import ConfigError
from sluice.io.atomic import fsync_directory

__all__ = ["HistoryEntry", "SchemaHistory"]

FORMAT = "sluice-schema-history"
VERSION = 1


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One line of the history."""

    kind: str  # "bootstrap" | "change"
    file: str
    pos: int
    gtid: str | None = None
    sql: str | None = None
    catalog: Catalog | None = None  # bootstrap only
    tables: tuple[tuple[str, str, TableSchema | None], ...] = ()  # change: new definitions, None = dropped
    databases: dict[str, DbDefaults] | None = None  # change: database defaults after it, when changed
    read_at: tuple[str, int] | None = None  # bootstrap: the server's position when the catalog was read
    at: Checkpoint | None = None  # the transaction boundary, GTIDs and server included (module docstring)

    @property
    def key(self) -> tuple[tuple[str, int, int], int]:
        """Sort key: binlog position, a bootstrap before a change at the same position."""
        return position_key(self.file, self.pos), 0 if self.kind == "bootstrap" else 1

    def to_json(self) -> dict[str, Any]:
        """The entry as its JSON line's object."""
        out: dict[str, Any] = {"kind": self.kind, "file": self.file, "pos": self.pos}
        if self.at is not None:
            out["at"] = self.at.to_json()
        if self.kind == "bootstrap":
            assert self.catalog is not None
            out["catalog"] = self.catalog.to_json()
            if self.read_at is not None:
                out["read_at"] = {"file": self.read_at[0], "pos": self.read_at[1]}
            return out
        out["gtid"] = self.gtid
        out["sql"] = self.sql
        out["tables"] = [{"db": db, "table": t, "schema": None if s is None else s.to_json()}
                         for db, t, s in self.tables]
        if self.databases is not None:
            out["databases"] = {db: {"charset": cs, "collation": coll} for db, (cs, coll) in self.databases.items()}
        return out

    @classmethod
    def from_json(cls, d: Any) -> HistoryEntry:
        """Inverse of ``to_json``; another shape raises ``ConfigError``."""
        if not isinstance(d, dict):
            raise ConfigError(f"expected a JSON object, found {type(d).__name__}")
        kind, file, pos = d.get("kind"), d.get("file"), d.get("pos")
        if kind not in ("bootstrap", "change") or not isinstance(file, str) or not isinstance(pos, int):
            raise ConfigError("expected 'kind' (bootstrap or change), a string 'file' and an integer 'pos'")
        at = None if d.get("at") is None else Checkpoint.from_json(d["at"])
        if kind == "bootstrap":
            server = d.get("read_at")
            if server is not None and not (isinstance(server, dict) and isinstance(server.get("file"), str)
                                           and isinstance(server.get("pos"), int)):
                raise ConfigError(f"'read_at' must be {{'file': ..., 'pos': ...}}, found {server!r:.200}")
            read_at = None if server is None else (server["file"], server["pos"])
            return cls(kind, file, pos, catalog=Catalog.from_json(d.get("catalog")), read_at=read_at, at=at)
        tables = []
        for t in d.get("tables") or []:
            if not isinstance(t, dict) or not isinstance(t.get("db"), str) or not isinstance(t.get("table"), str):
                raise ConfigError(f"a changed table needs string 'db' and 'table', found {t!r:.200}")
            schema = None if t.get("schema") is None else TableSchema.from_json(t["schema"])
            tables.append((t["db"], t["table"], schema))
        databases = None
        if d.get("databases") is not None:
            dbs = d["databases"]
            if not isinstance(dbs, dict) or not all(isinstance(v, dict) for v in dbs.values()):
                raise ConfigError("'databases' must map names to {'charset': ..., 'collation': ...}")
            databases = {db: (v.get("charset"), v.get("collation")) for db, v in dbs.items()}
        gtid, sql = d.get("gtid"), d.get("sql")
        if any(v is not None and not isinstance(v, str) for v in (gtid, sql)):
            raise ConfigError("'gtid' and 'sql' must be strings or null")
        return cls(kind, file, pos, gtid=gtid, sql=sql, tables=tuple(tables), databases=databases, at=at)

    def apply(self, catalog: Catalog) -> Catalog:
        """The catalog after this change."""
        for db, table, schema in self.tables:
            catalog = catalog.without_table(db, table) if schema is None else catalog.with_table(schema)
        if self.databases is not None:
            catalog = catalog.with_database_defaults(self.databases)
        return catalog


class SchemaHistory:
    """The schema history file of one pipeline. Use ``SchemaHistory.open(path)``."""

    def __init__(self, path: str, entries: list[HistoryEntry]) -> None:
        self.path = path
        self._entries = sorted(entries, key=lambda e: e.key)
        self._keys = [e.key for e in self._entries]
        self._seen = {(e.kind, e.file, e.pos) for e in self._entries}
        self._latest: Catalog | None = None
        self._latest_valid = False

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> SchemaHistory:
        """Load the history file, or create it (with its format line) when it does not exist."""
        p = os.fspath(path)
        if not os.path.exists(p):
            try:
                with open(p, "x", encoding="utf-8") as f:
                    f.write(json.dumps({"format": FORMAT, "version": VERSION}) + "\n")
                    f.flush()
                    os.fsync(f.fileno())
                fsync_directory(os.path.dirname(os.path.abspath(p)))
            except OSError as exc:
                raise ConfigError(f"cannot create the schema history file {p}: {exc.strerror or exc}") from None
            return cls(p, [])
        try:
            with open(p, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise ConfigError(f"cannot read the schema history file {p}: {exc.strerror or exc}") from None
        if data and not data.endswith(b"\n"):
            # The last append did not complete (record() never returned): drop it; its event replays.
            keep = data.rfind(b"\n") + 1
            with open(p, "r+b") as f:
                f.truncate(keep)
                f.flush()
                os.fsync(f.fileno())
            data = data[:keep]
        return cls(p, _parse(p, data))

    # ------------------------------------------------------------------ writing

    def record(self, file: str, pos: int, gtid: str | None, catalog: Catalog, *, sql: str | None,
               tables: Iterable[tuple[str, str]], at: Checkpoint | None = None) -> None:
        """Append the definitions of ``tables`` in ``catalog`` (null when dropped) as the change made
        at ``(file, pos)``, in the transaction that starts at the boundary ``at``; nothing when a
        change at that position is already recorded."""
        if ("change", file, pos) in self._seen:
            return
        names = list(dict.fromkeys((db, t) for db, t in tables))
        key = (position_key(file, pos), 1)
        before = self.latest() if not self._keys or key >= self._keys[-1] else self.catalog_at(file, pos)
        dbs = catalog.database_defaults()
        changed_dbs = dbs if before is None or before.database_defaults() != dbs else None
        entry = HistoryEntry("change", file, pos, gtid=gtid, sql=sql,
                             tables=tuple((db, t, catalog.get(db, t)) for db, t in names), databases=changed_dbs,
                             at=at)
        self._append(entry)

    def record_bootstrap(self, file: str, pos: int, catalog: Catalog, read_at: tuple[str, int] | None = None,
                         at: Checkpoint | None = None) -> None:
        """Append a whole catalog for events from ``(file, pos)`` on (the start ``at``, when known),
        read from a server standing at ``read_at`` (None: at ``(file, pos)`` itself); nothing when a
        bootstrap at that position is already recorded."""
        if ("bootstrap", file, pos) in self._seen:
            return
        if read_at is not None and position_key(*read_at) <= position_key(file, pos):
            read_at = None
        self._append(HistoryEntry("bootstrap", file, pos, catalog=catalog, read_at=read_at, at=at))

    def _append(self, entry: HistoryEntry) -> None:
        line = json.dumps(entry.to_json(), separators=(",", ":")) + "\n"
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise ConfigError(f"cannot append to the schema history file {self.path}: {exc.strerror or exc}") from None
        i = bisect.bisect_right(self._keys, entry.key)
        at_end = i == len(self._keys)
        self._entries.insert(i, entry)
        self._keys.insert(i, entry.key)
        self._seen.add((entry.kind, entry.file, entry.pos))
        if at_end and self._latest_valid:
            # In binlog order (the usual case): bring the cached latest catalog forward.
            if entry.kind == "bootstrap":
                self._latest = entry.catalog
            elif self._latest is not None:
                self._latest = entry.apply(self._latest)
        else:
            self._latest_valid = False

    # ------------------------------------------------------------------ reading

    @property
    def entries(self) -> tuple[HistoryEntry, ...]:
        """Every entry, in binlog order."""
        return tuple(self._entries)

    def catalog_at(self, file: str, pos: int) -> Catalog | None:
        """The catalog in force for an event at ``(file, pos)``; None when no bootstrap precedes it."""
        return self._fold(position_key(file, pos))

    def read_ahead(self, file: str, pos: int) -> tuple[tuple[str, int] | None, set[tuple[str, str]]]:
        """For an event at ``(file, pos)``: the ``read_at`` of the bootstrap in force (None when it
        was read at its own position, or none precedes) and the tables changed since that bootstrap
        up to the event, for ``SchemaTracker(read_at=..., met=...)``."""
        entries = self._entries[:bisect.bisect_right(self._keys, (position_key(file, pos), 0))]
        met: set[tuple[str, str]] = set()
        for e in reversed(entries):
            if e.kind == "bootstrap":
                return e.read_at, met
            met.update((db, t) for db, t, _ in e.tables)
        return None, set()

    def latest(self) -> Catalog | None:
        """The catalog after every recorded entry; None without any bootstrap."""
        if not self._latest_valid:
            self._latest = self._fold(None)
            self._latest_valid = True
        return self._latest

    def _fold(self, before: tuple[str, int, int] | None) -> Catalog | None:
        # A bootstrap at the event's own position counts (it was read before that event); a change
        # there does not (it is that event).
        entries = self._entries if before is None else self._entries[:bisect.bisect_right(self._keys, (before, 0))]
        start = next((i for i in range(len(entries) - 1, -1, -1) if entries[i].kind == "bootstrap"), None)
        if start is None:
            return None
        catalog = entries[start].catalog
        assert catalog is not None
        for e in entries[start + 1:]:
            if e.kind == "change":
                catalog = e.apply(catalog)
        return catalog

    def __repr__(self) -> str:
        return f"SchemaHistory({self.path!r}, {len(self._entries)} entries)"


def _parse(path: str, data: bytes) -> list[HistoryEntry]:
    entries: list[HistoryEntry] = []
    lines = data.decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()

    def fail(n: int, what: str) -> ConfigError:
        return ConfigError(
            f"schema history {path}, line {n}: {what}. The file is damaged or not a sluice schema history; "
            "move it away to start a new history (the schema is then bootstrapped from the server again)"
        )

    if not lines:
        raise fail(1, "the file is empty, expected the format line")
    for n, line in enumerate(lines, 1):
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise fail(n, f"not JSON ({exc})") from None
        if n == 1:
            if not isinstance(value, dict) or value.get("format") != FORMAT:
                raise fail(n, f'expected {{"format": "{FORMAT}", "version": {VERSION}}}')
            if value.get("version") != VERSION:
                raise fail(n, f"format version {value.get('version')!r}, this sluice reads version {VERSION}")
            continue
        try:
            entries.append(HistoryEntry.from_json(value))
        except ConfigError as exc:
            raise fail(n, str(exc)) from None
    return entries


