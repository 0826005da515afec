"""``SchemaTracker``: the schema the pipeline decodes rows with, kept in step with the binlog.

The pipeline calls ``on_query`` for every QUERY event (DDL is replayed on the catalog and recorded
in the history with its position) and ``resolve`` for every new TABLE_MAP (the caller caches the
answer by ``(table_map.raw, tracker.version)``). A DDL is replayed with the server's character set
and default collations its QUERY event carries (``SessionCharsets``: ``collation_server`` of
``Q_CHARSET_CODE``, MariaDB's ``character_set_collations``, MySQL's
``default_collation_for_utf8mb4``), as a replica applies it. ``resolve`` follows three rules:

1. The TABLE_MAP names all its columns (``binlog_row_metadata=FULL``): the map is trusted. When the
   tracked definition disagrees (names, count, types, primary key) it is replaced by one derived
   from the map, keeping tracked facts the map lacks where the column still has the same type, and
   the correction is kept in ``corrections`` and recorded in the history.
2. Otherwise the tracked definition must fit the map (``check_table_map``), or ``SchemaError``
   says where, both definitions and the remedy. The column facts come from the tracked
   definition; whatever the map itself carries (MINIMAL metadata: signedness, charsets) wins.
   A character column whose character set is known from neither (its table was created in a
   database whose defaults sluice never saw) stops with ``SchemaError`` naming it and the
   remedies, or with ``positional="fallback"`` (archived files) is read marked
   (``ColumnInfo.mark_unsure``) with a warning: sluice does not guess a character set.
3. An unknown table whose map has no names: ``SchemaError`` saying how to give sluice its columns.

Reading archived files (``positional="fallback"``, ``sluice dump``), rules 2 and 3 do not stop:
such a table is read by position instead (columns ``@1``…``@n`` with the map's types, no primary
key, values decoded with ``ColumnInfo.mark_unsure``) and one warning per table says why; never are
names given to columns they may not belong to. ``positional="all"`` reads every table so.

A catalog read from a live server for an older start (``read_at`` later than the start) already
holds the effect of the DDL logged between the two, so a statement there is replayed by what it
does to a table it is the first since the start to touch, when the catalog holds that table:

* it creates the table (``CREATE TABLE``, also ``IF NOT EXISTS``, or the new name of a rename):
  the table did not exist before it, and it is replayed without today's definition;
* it alters the table: the table's definition before it is not known, a warning says so and
  today's is used up to ``read_at`` (an ALTER of it there is already in it and is not replayed);
  a DROP or rename ends that, and what follows is replayed as logged.

Nothing has to read the binlog ahead of the capture for this.

A DDL statement that is not understood never stops anything: it is kept in ``unparsed`` for the
caller to report and the tables it touched keep their old definition, so ``resolve`` fails loudly
later only if the binlog then disagrees with it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sluice.binlog.column_info import ColumnInfo, inspection_columns
from sluice.binlog.constants import ColumnType
from sluice.binlog.events import TableMapEvent
from sluice.binlog.position import Checkpoint, position_key
from sluice.cdc.schema.catalog import Catalog
from sluice.cdc.schema.ddl import is_ddl
from sluice.cdc.schema.history import SchemaHistory
from sluice.cdc.schema.logged_columns import merged, refreshed, with_schema_types
from sluice.cdc.schema.map_columns import column_from_map
from sluice.cdc.schema.model import TableSchema
from sluice.cdc.schema.session_charsets import SessionCharsets
from sluice.cdc.schema.table_map_fit import check_column, check_table_map
from sluice.cdc.schema.typemap import CHARACTER_TYPES
from sluice.errors import SchemaError

if TYPE_CHECKING:
    from sluice.cdc.schema.ddl import DdlOutcome

__all__ = ["Correction", "ResolvedTable", "SchemaTracker"]

log = logging.getLogger(__name__)

_REMEDY_MISMATCH = (
    "The schema history is out of step with the server. Re-bootstrap the schema from the server "
    "(delete the schema history file, or run with a fresh checkpoint directory), or set "
    "binlog_row_metadata=FULL on the server so that the binlog names the columns itself."
)
_REMEDY_CHARSET = (
    "sluice does not guess a character set. Give it the binlog files from the one holding that "
    "database's CREATE DATABASE on, or the table's definition (sluice dump --schema: a server or a "
    "mysqldump --no-data file), or have the server name the character sets in the binlog "
    "(binlog_row_metadata=FULL; MINIMAL on MySQL), or follow the live server (sluice tail), whose "
    "schema is read from information_schema."
)
_REMEDY_UNKNOWN = (
    "Set binlog_row_metadata=FULL on the server, or give sluice the table's CREATE TABLE: start from "
    "binlog files that contain its DDL, or bootstrap the schema from a live server."
)


@dataclass(frozen=True, slots=True)
class ResolvedTable:
    """The column facts for decoding one TABLE_MAP's rows."""

    columns: tuple[ColumnInfo, ...]  # one per TABLE_MAP column, names filled in
    names: tuple[str, ...]
    primary_key: tuple[str, ...]
    row_end: int | None = None  # a system-versioned table's row end column (``TableSchema.system_time``)


@dataclass(frozen=True, slots=True)
class Correction:
    """A tracked definition replaced by what a FULL-metadata TABLE_MAP said."""

    file: str
    pos: int
    db: str
    table: str
    before: TableSchema
    after: TableSchema
    reason: str


def _type_names(table_map: TableMapEvent) -> str:
    out = []
    for t in table_map.column_types:
        try:
            out.append(ColumnType(t).name)
        except ValueError:
            out.append(str(t))
    return ", ".join(out)


class SchemaTracker:
    """The catalog in force at the current binlog position, its history and what went wrong.

    ``catalog`` is the catalog at the position the pipeline starts from (``bootstrap_catalog`` of a
    live server, or ``history.catalog_at(file, pos)`` on a restart); None starts empty, for binlogs
    with FULL metadata or that hold every table's CREATE TABLE. ``flavor`` ("mysql" / "mariadb")
    decides how DDL types map (MariaDB's JSON is a LONGTEXT) and which binlog types to expect.
    ``read_at`` is where the server stood when ``catalog`` was read, when that is after the start;
    ``met`` the tables changed since the start up to where this tracker begins (a restart's, from
    ``SchemaHistory.read_ahead``). ``read_later`` names a catalog read after every position this
    tracker will see (a live server's or a dump's, for archived files): the DDL met is replayed as
    for ``read_at``. ``positional``: "never" (default), "fallback" or "all" (module docstring).
    """

    def __init__(self, catalog: Catalog | None = None, history: SchemaHistory | None = None, *,
                 flavor: str | None = None, read_at: tuple[str, int] | None = None,
                 met: set[tuple[str, str]] | None = None, read_later: str | None = None,
                 positional: str = "never") -> None:
        cat = catalog if catalog is not None else Catalog(flavor=flavor)
        if flavor is not None and cat.flavor is None:
            cat = cat.with_server_defaults(flavor=flavor)
        self.catalog: Catalog = cat
        self.history = history
        self.flavor = flavor or cat.flavor
        self.version = 0
        self.unparsed: list[tuple[str, int, str, str]] = []
        self.corrections: list[Correction] = []
        self.read_at = read_at
        # Where the catalog was read, while DDL before it is still to come (read_later: after every position).
        self._ahead: tuple[str, int, int] | None = None if read_at is None else position_key(*read_at)
        self.read_later = read_later
        if positional not in ("never", "fallback", "all"):
            raise ValueError(f"positional is never, fallback or all, not {positional!r}")
        self.positional = positional
        self.by_position: dict[tuple[str, str], str] = {}  # tables read by position -> why
        self.unsure_text: set[tuple[str, str]] = set()  # tables with text of an unknown charset, marked
        self._met: set[tuple[str, str]] = set(met or ())
        self._later: set[tuple[str, str]] = set()  # met first by an ALTER: their definition is read_at's

    def _set(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.version += 1

    def learn_flavor(self, flavor: str) -> None:
        """The binlog says which server wrote it (FORMAT_DESCRIPTION): DDL replayed from here on maps
        types the way that server does (MariaDB's JSON is a LONGTEXT), also with no live server."""
        if self.flavor is None:
            self.flavor = flavor
            if self.catalog.flavor is None:
                self._set(self.catalog.with_server_defaults(flavor=flavor))

    # ------------------------------------------------------------------ DDL

    def on_query(self, sql: str, default_db: str, file: str, pos: int, gtid: str | None = None,
                 session: SessionCharsets | None = None, at: Checkpoint | None = None) -> DdlOutcome | None:
        """Replay a QUERY event's statement if it is DDL, with the server defaults of ``session``
        (the event's own, ``SessionCharsets.of``); None for anything else. ``at``: the boundary its
        transaction starts at, recorded with the change in the history."""
        if not is_ddl(sql):
            return None
        from sluice.cdc.schema.ddl import apply_ddl  # sqlglot, imported at the first DDL

        if session is not None:
            learned = session.applied(self.catalog)
            if learned is not self.catalog:
                self._set(learned)

        new, outcome = apply_ddl(self.catalog, sql, default_db)
        if self.read_later is not None or (self._ahead is not None and position_key(file, pos) < self._ahead):
            new, outcome = self._replay_ahead(new, outcome, sql, default_db, file, pos, gtid, at)
        else:
            self._ahead = None
        if not outcome.understood:
            self.unparsed.append((file, pos, sql, outcome.message or "not understood"))
        if new is not self.catalog:
            self._set(new)
            if self.history is not None:
                self.history.record(file, pos, gtid, new, sql=sql, tables=outcome.tables, at=at)
        return outcome

    def _replay_ahead(self, new: Catalog, outcome: DdlOutcome, sql: str, default_db: str, file: str,
                      pos: int, gtid: str | None, at: Checkpoint | None) -> tuple[Catalog, DdlOutcome]:
        """A DDL logged before the catalog was read (module docstring)."""
        from sluice.cdc.schema.ddl import apply_ddl

        first = [key for key in dict.fromkeys(outcome.tables) if key not in self._met]
        self._met.update(outcome.tables)
        known = [key for key in first if self.catalog.get(*key) is not None]
        made = set(_brought_into_being(outcome)).intersection(known)
        if made:
            # The first statement on them since the start makes them: they did not exist before it, and
            # today's definitions are later ones.
            before = self.catalog
            for db, table in made:
                before = before.without_table(db, table)
            again, redone = apply_ddl(before, sql, default_db)
            if redone.understood:
                new, outcome = again, redone
        later = [key for key in known if key not in made]
        if later:
            self._later.update(later)
            read = (f"the position the schema was read at ({self.read_at[0]}:{self.read_at[1]})"
                    if self.read_at is not None else f"the schema of {self.read_later}")
            log.warning(
                "%s: %s at %s:%d, before %s. The definition before that statement is not known; the one "
                "read then is used up to there (with binlog_row_metadata=FULL the binlog's own names and "
                "types win; otherwise a row that does not fit %s)",
                ", ".join(f"{db}.{table}" for db, table in later), outcome.kind, file, pos, read,
                "stops the capture with the table and position named" if self.positional == "never"
                else "is read by position",
            )
        if outcome.kind == "alter_table" and len(outcome.tables) == 1 and outcome.tables[0] in self._later:
            # Today's definition already has this change (and every later one up to read_at). The
            # history still gets the statement: a restart after it knows the table was met.
            if self.history is not None:
                self.history.record(file, pos, gtid, self.catalog, sql=sql, tables=outcome.tables, at=at)
            return self.catalog, replace(outcome, understood=True, message=None)
        self._later.difference_update(outcome.tables)
        return new, outcome

    # ------------------------------------------------------------------ TABLE_MAP

    def resolve(self, table_map: TableMapEvent, file: str, pos: int) -> ResolvedTable:
        """The column facts for a TABLE_MAP at ``file:pos`` (rules in the module docstring)."""
        n = table_map.column_count
        cols = tuple(table_map.columns)
        db, name = table_map.schema, table_map.table
        if self.positional == "all":
            return _by_position(table_map)
        tracked = self.catalog.get(db, name)
        if n and len(cols) == n and all(c.name for c in cols):
            names = tuple(c.name or "" for c in cols)
            pk = tuple(names[i] for i, _ in table_map.primary_key or () if i < n)
            if tracked is None:
                return ResolvedTable(cols, names, pk)
            if tracked.system_time is not None:  # the server appends the row end to the key
                pk = tuple(k for k in pk if k.lower() != tracked.system_time.end.lower())
            reason = self._disagreement(tracked, table_map, names, pk)
            if reason is not None:
                self._correct(tracked, table_map, names, pk, file, pos, reason)
            now = self.catalog.get(db, name) or tracked
            return ResolvedTable(with_schema_types(now, cols), names, pk, now.row_end_index())
        if tracked is None:
            if self.positional == "fallback":
                return self._fall_back(table_map, file, pos, "the binlog does not name its columns and no schema "
                                       "sluice has knows the table (give the table's definition: a server or a "
                                       "dump of its CREATE TABLE as the schema, or the binlog files from its "
                                       "CREATE TABLE on)")
            raise SchemaError(
                f"the binlog does not name the columns of {db}.{name} at {file}:{pos} (binlog_row_metadata "
                f"is not FULL) and the schema history does not know that table. {_REMEDY_UNKNOWN}"
            )
        problem = check_table_map(tracked, table_map, flavor=self.flavor)
        if problem is not None:
            if self.positional == "fallback":
                source = f" in {self.read_later}" if self.read_later else ""
                return self._fall_back(table_map, file, pos, f"its definition{source}, {tracked.describe()}, does "
                                       f"not fit the binlog: {problem} (the TABLE_MAP's types: "
                                       f"{_type_names(table_map)}); the table changed since")
            raise SchemaError(
                f"the schema tracked for {db}.{name} does not match the binlog at {file}:{pos}: {problem}. "
                f"Tracked definition: {tracked.describe()}; the TABLE_MAP has {n} columns of types "
                f"({_type_names(table_map)}). {_REMEDY_MISMATCH}"
            )
        infos = tracked.column_infos()
        if len(cols) == n:
            infos = tuple(merged(t, m) for t, m in zip(infos, cols, strict=True))
        unknown = [i for i, (c, info) in enumerate(zip(tracked.columns, infos, strict=True))
                   if c.data_type in _DECODED_TEXT and info.collation is None]
        if unknown:
            why = (f"the character set of {db}.{name} column(s) "
                   f"{', '.join(f'`{tracked.columns[i].name}`' for i in unknown)} is not known at {file}:{pos}: the "
                   f"definition names none and the default of the database {db} was never seen (it was set before "
                   "the binlog read, or by a server that did not log its own)")
            if self.positional != "fallback":
                raise SchemaError(f"{why}. {_REMEDY_CHARSET}")
            if (db, name) not in self.unsure_text:  # archived files: those values marked, said once a table
                self.unsure_text.add((db, name))
                log.warning("%s; their values are printed as {\"hex\": ...}. %s", why, _REMEDY_CHARSET)
            infos = tuple(replace(info, mark_unsure=True) if i in unknown else info for i, info in enumerate(infos))
        return ResolvedTable(infos, tracked.names, tracked.primary_key, tracked.row_end_index())

    def _fall_back(self, table_map: TableMapEvent, file: str, pos: int, why: str) -> ResolvedTable:
        """The table read by position, with one warning per table and reason."""
        key = (table_map.schema, table_map.table)
        if self.by_position.get(key) != why:
            self.by_position[key] = why
            log.warning("%s.%s at %s:%d: %s. Its rows are read by position (@1, @2, ...) without a primary key",
                        *key, file, pos, why)
        return _by_position(table_map)

    def _disagreement(self, tracked: TableSchema, table_map: TableMapEvent, names: tuple[str, ...],
                      pk: tuple[str, ...]) -> str | None:
        if tracked.names != names:
            return f"column names: tracked ({', '.join(tracked.names)}), binlog ({', '.join(names)})"
        problem = check_table_map(tracked, table_map, flavor=self.flavor)
        if problem is not None:
            return problem
        if tracked.primary_key != pk:
            return f"primary key: tracked ({', '.join(tracked.primary_key)}), binlog ({', '.join(pk)})"
        return None

    def _correct(self, tracked: TableSchema, table_map: TableMapEvent, names: tuple[str, ...], pk: tuple[str, ...],
                 file: str, pos: int, reason: str) -> None:
        n = table_map.column_count
        same_count = len(tracked.columns) == n
        columns = []
        for i in range(n):
            info = table_map.columns[i]
            code, meta, nullable = table_map.column_types[i], table_map.column_meta[i], table_map.nullable[i]
            old = tracked.columns[i] if same_count else None
            if old is not None and check_column(old, code, meta, self.flavor) is None:
                columns.append(refreshed(old, info, names[i], nullable))
            else:
                columns.append(column_from_map(code, meta, info, nullable, names[i]))
        st = tracked.system_time
        if st is not None and not {st.start, st.end} <= set(names):
            st = None
        after = TableSchema(tracked.db, tracked.name, tuple(columns), pk, tracked.charset, tracked.collation, st)
        self._set(self.catalog.with_table(after))
        self.corrections.append(Correction(file, pos, tracked.db, tracked.name, tracked, after, reason))
        self._met.add((tracked.db, tracked.name))  # it exists here: a CREATE ... IF NOT EXISTS after this does nothing
        if self.history is not None:
            self.history.record(file, pos, None, self.catalog, sql=None, tables=[(tracked.db, tracked.name)])


def _by_position(table_map: TableMapEvent) -> ResolvedTable:
    """A table read by position: ``@1``…``@n``, no primary key, unsure values marked."""
    columns = inspection_columns(table_map.columns)
    return ResolvedTable(columns, tuple(c.name or "" for c in columns), ())


def _brought_into_being(outcome: DdlOutcome) -> tuple[tuple[str, str], ...]:
    """The tables a statement creates: CREATE's, and the new names of a rename (listed old, new)."""
    if outcome.kind == "create_table":
        return outcome.tables
    if outcome.kind == "rename_table" or (outcome.kind == "alter_table" and len(outcome.tables) == 2):
        return outcome.tables[1::2]
    return ()


# Character columns whose values are text in their character set (ENUM / SET members come from the DDL).
_DECODED_TEXT = CHARACTER_TYPES - {"enum", "set"}
