"""Verify a lake: compare every Delta mirror with its table on the source server, row by row.

``verify_lake`` finds the mirrors under ``LAKE/<db>/<table>`` (the change log's ``_sluice`` folder
is not one; a history ``LAKE/<db>/<table>__history`` is compared as a mirror too, by its current
versions, ``sluice.spark.verify.datasets``), reads each table's schema from the server
(``bootstrap_catalog``) and compares the two sides in the same terms: the source's text-protocol
values are turned into decoded values (``sluice.cdc.textvalues``) and then into the mirror's Arrow
values by the same column conversions the pipeline uses
(``sluice.lake.types.table_layout.mirror_columns_for_schema``), cast to the type the Delta table
actually holds when that differs. Each row becomes one canonical text (a JSON array of its
values; DECIMALs with their exact digits, binary values as base64, temporal values in ISO form) and
a BLAKE2b checksum of it (``sluice.spark.verify.rows``); rows are matched by primary key (without
one, as multisets of checksums). Only the mirror's key -> checksum map is held in memory; the
source is read as one streamed ``SELECT`` per table (one consistent snapshot for the whole run) and
compared chunk by chunk. Columns only the mirror has (dropped at the source) are ignored; a source
column the mirror lacks is a difference. Every captured source table is compared too
(``sluice.spark.verify.scope``): one with a primary key whose mirror is missing or cannot be read
differs (its rows count as missing); one without a key has no mirror by design and is listed as not
compared. The result is one ``TableVerdict`` per table. Compare a quiet source, or a lake that has
caught up: changes not yet mirrored show as differences.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from deltalake.exceptions import DeltaError

from sluice.cdc.column_rules import hash_value
from sluice.cdc.schema import bootstrap_catalog
from sluice.cdc.schema.model import TableSchema
from sluice.cdc.textvalues import convert_rows, row_converter, select_list, text_converters
from sluice.dsn import ConnectionConfig
from sluice.errors import ConfigError, SchemaError
from sluice.io.connection import Connection
from sluice.lake.layout import HISTORY_SUFFIX, Lake, open_lake
from sluice.lake.storage import LakeStore
from sluice.lake.types import mirror_columns as _mc
from sluice.lake.types.mirror_columns import MirrorColumn, column_array, mirror_schema
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.verify.datasets import current_versions, lake_mirrors, mirror_dataset
from sluice.spark.verify.routed import routed_into, routed_tables, shard_rows, stray_verdict
from sluice.spark.verify.rows import canonical_column, row_checksums
from sluice.spark.verify.scope import captured_tables, recorded_routes

__all__ = ["TableVerdict", "verify_lake"]

#: Source rows converted and compared at a time.
CHUNK_ROWS = 10_000
#: Keys kept per verdict to show which rows differ.
SAMPLE_KEYS = 5
# The conversion of columns whose decoded value is already the Arrow value (it only maps ABSENT).
_IDENTITY = _mc._identity


@dataclass(frozen=True, slots=True)
class TableVerdict:
    """How one mirror compares with its source table.

    ``missing``: rows in the source but not in the mirror; ``extra``: in the mirror but not in the
    source; ``different``: same primary key, other values (always 0 for a table without one).
    ``note`` says what else is wrong or why the table could not be compared; ``first_keys`` shows
    up to five differing rows, e.g. ``id=7 (missing)``. ``compared`` is False for a captured table
    that has no mirror by design (no primary key: its rows are in the change log).
    """

    db: str
    table: str
    source_rows: int
    mirror_rows: int
    missing: int
    extra: int
    different: int
    ok: bool
    note: str | None = None
    first_keys: tuple[str, ...] = ()
    compared: bool = True

    @property
    def name(self) -> str:
        """``db.table`` of the compared table."""
        return f"{self.db}.{self.table}"


def verify_lake(
    connection: ConnectionConfig,
    lake: str | os.PathLike[str] | LakeStore,
    *,
    tables: Callable[[str, str], bool] | None = None,
    columns: Any = None,
    routes: Any = None,
) -> list[TableVerdict]:
    """Compare every mirror of ``lake`` and every captured source table (those ``tables(db, table)``
    accepts) with the source.

    Raises ``ConfigError`` when there is nothing to compare (no mirror and no captured table, or
    none the filter accepts), and the connection's ``ServerError`` / ``TransportError`` /
    ``AuthError``. ``columns``: the ``ColumnRules`` the lake was written with: an excluded column is
    not compared, a hashed one is compared as the hash of the source's value under the same key. A
    table that cannot be compared (a type sluice does not read, a mirror missing or unreadable) gets a
    verdict that is not ok, saying why. ``routes``: the lake's (None: those its run recorded)."""
    store = open_lake(lake)
    root = store.uri
    found = lake_mirrors(store)
    captured = captured_tables(store, tables)
    routes = routes if routes is not None else recorded_routes(store)
    if not found and captured is None:
        raise ConfigError(
            f"the lake {root!r} holds no Delta tables (expected {root}/<db>/<table>/_delta_log); "
            "run sluice run --lake on it first, or check the path"
        )
    mirrors = {(db, t) for db, t in found if tables is None or tables(db, t)}
    histories = [(db, t) for db, t in store.histories() if tables is None or tables(db, t)]
    none_match = ConfigError(
        f"none of the {len(found)} tables of the lake {root!r} matches --tables / --exclude-tables "
        f"(the lake has {', '.join(f'{db}.{t}' for db, t in found[:10])}{', ...' if len(found) > 10 else ''})"
    )
    if not mirrors and captured is None:
        raise none_match
    with Connection.open(connection) as conn:
        for statement in ("SET NAMES utf8mb4", "SET time_zone = '+00:00'", "SET SESSION sql_mode = ''",
                          "SET SESSION net_write_timeout = 3600"):
            conn.execute(statement)
        catalog = bootstrap_catalog(conn, lambda db, t: (db, t) in mirrors or (db, t) in histories or routed_into(
            routes, db, t) in mirrors or (captured is not None and captured(db, t)))
        flavor = catalog.flavor
        shards = routed_tables(routes, catalog.tables(), captured)  # a routed table -> its mirror
        wanted = sorted(mirrors | set(shards) | {(s.db, s.name) for s in catalog.tables() if captured is not None
                                                 and captured(s.db, s.name)})
        if not wanted:
            raise none_match if found else ConfigError(
                f"the lake {root!r} holds no mirror and the source has no table it captures "
                "(--tables / --exclude-tables of sluice run and of verify); check both")
        conn.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        verdicts = []
        for db, table in wanted:
            schema = catalog.get(db, table)
            if schema is not None:
                schema = schema.selected()  # a system-versioned table's current rows, as its mirror holds them
            if (db, table) in shards.values():  # a routed mirror: its tables are compared on lines of their own
                verdicts.append(TableVerdict(db, table, *stray_verdict(store, (db, table), shards)))
            else:
                verdicts.append(_verify_routed(conn, db, table, schema, flavor, store, shards[(db, table)], columns)
                                if (db, table) in shards else
                                _verify_one(conn, db, table, schema, flavor, store, (db, table) in mirrors, columns))
        for db, table in histories:  # a history's current versions are the table's rows too
            verdicts.append(_verify_history(conn, db, table, catalog.get(db, table), flavor, store, columns))
        conn.execute("COMMIT")
    return verdicts


def _verify_one(conn: Connection, db: str, table: str, schema: TableSchema | None, flavor: str | None,
                store: Lake, mirrored: bool, rules: Any = None) -> TableVerdict:
    """The verdict of one table: its mirror compared, or what is wrong with its mirror."""
    path = store.mirror(db, table)
    if not mirrored and schema is not None and not schema.primary_key:
        return TableVerdict(db, table, 0, 0, 0, 0, 0, True, "no primary key: not mirrored by design; its rows "
                            "and changes are in the change log (_sluice/changes)", compared=False)
    if not mirrored and schema is not None:  # its rows all count as missing
        masked = schema if rules is None else rules.mask_schema(schema)
        empty = pa.Table.from_batches([], schema=mirror_schema(mirror_columns_for_schema(masked, flavor)))
        verdict = _verify_table(conn, db, table, schema, flavor, _pads().dataset(empty), rules)
        note = f"the table has no mirror in the lake (expected a Delta table at {path})"
        return replace(verdict, ok=False, note=f"{note}; {verdict.note}" if verdict.note else note)
    try:
        dataset = mirror_dataset(store, path, db, table)
    except (DeltaError, OSError, pa.ArrowException) as exc:
        return TableVerdict(db, table, 0, 0, 0, 0, 0, False, f"the mirror at {path} cannot be read ({exc})")
    return _verify_table(conn, db, table, schema, flavor, dataset, rules)


def _verify_routed(conn: Connection, db: str, table: str, schema: TableSchema | None, flavor: str | None,
                   store: Lake, target: tuple[str, str], rules: Any) -> TableVerdict:
    """A routed table against its rows in its routed mirror, where its columns' others are NULL."""
    path, into = store.mirror(*target), f"in the routed mirror {target[0]}.{target[1]}"
    try:
        rows = shard_rows(mirror_dataset(store, path, *target), db, table, schema)
        verdict, foreign = _verify_table(conn, db, table, schema, flavor, rows, rules), rows.foreign_values()
    except (DeltaError, OSError, pa.ArrowException) as exc:
        return TableVerdict(db, table, 0, 0, 0, 0, 0, False, f"{into}: the mirror at {path} cannot be read ({exc})")
    note = into + (f"; {foreign} of its rows hold values in columns the table does not have" if foreign else "")
    return replace(verdict, ok=verdict.ok and not foreign, note=f"{note}; {verdict.note}" if verdict.note else note)


def _verify_history(conn: Connection, db: str, table: str, schema: TableSchema | None, flavor: str | None,
                    store: Lake, rules: Any) -> TableVerdict:
    """The verdict of a table's history: its current versions compared as a mirror, named ``db.table__history``."""
    name = table + HISTORY_SUFFIX
    schema = None if schema is None else schema.selected()
    try:
        dataset = current_versions(store, db, table, None if schema is None else [c.name for c in schema.columns])
    except (DeltaError, OSError, pa.ArrowException) as exc:
        return TableVerdict(db, name, 0, 0, 0, 0, 0, False, f"the history at {store.history(db, table)} cannot be "
                            f"read ({exc})")
    return replace(_verify_table(conn, db, table, schema, flavor, dataset, rules), table=name)


# -- one table ------------------------------------------------------------------------------------

def _verify_table(conn: Connection, db: str, table: str, schema: TableSchema | None, flavor: str | None,
                  dataset: Any, rules: Any = None) -> TableVerdict:
    if schema is None:
        rows = dataset.count_rows()
        return TableVerdict(db, table, 0, rows, 0, rows, 0, False,
                            "the table is not on the source (dropped or renamed?); remove its mirror if that is meant")
    try:
        plan = _Plan.make(schema, flavor, dataset.schema, rules)
    except SchemaError as exc:
        return TableVerdict(db, table, 0, dataset.count_rows(), 0, 0, 0, False, f"not compared: {exc}")
    mirror = _MirrorSide(plan)
    for batch in dataset.to_batches(columns=[name for name, _ in plan.mirror_fields]):
        mirror.add(batch)
    source = _SourceSide(plan, mirror)
    stream = conn.stream_rows(f"SELECT {select_list(plan.schema)} FROM {_quote(db)}.{_quote(table)}", CHUNK_ROWS)
    try:
        for chunk in stream:
            source.add(chunk)
    except SchemaError as exc:
        for _ in stream:  # read the rest of the result: the connection serves the next table
            pass
        return TableVerdict(db, table, source.rows, mirror.rows, 0, 0, 0, False, f"not compared: {exc}")
    return source.verdict(db, table)


def _pads() -> Any:
    import pyarrow.dataset as pads

    return pads


@dataclass(frozen=True, slots=True)
class _Plan:
    """What is compared: the source columns the mirror has, their conversions and Arrow types."""

    schema: TableSchema  # the compared columns only, in source order
    flavor: str | None
    mirror_fields: tuple[tuple[str, pa.DataType], ...]  # the same columns' names and types in the mirror
    columns: tuple[MirrorColumn, ...]  # the pipeline's conversion of each compared column
    key: tuple[int, ...]  # positions of the primary key among the compared columns; () = multiset
    notes: tuple[str, ...]
    failing: bool  # a note that makes the table differ (a source column the mirror lacks)
    hashed: tuple[bytes | None, ...] = ()  # per compared column: the key its source values are hashed with

    @classmethod
    def make(cls, schema: TableSchema, flavor: str | None, mirror: pa.Schema, rules: Any = None) -> _Plan:
        by_lower = {name.lower(): name for name in mirror.names}
        rule = (lambda _c: None) if rules is None else (lambda c: rules.rule(schema.db, schema.name, c))
        masked = schema if rules is None else replace(schema, columns=tuple(
            c for c in schema.columns if rule(c.name) != "exclude"))  # an excluded column is compared nowhere
        columns = mirror_columns_for_schema(masked if rules is None else rules.mask_schema(schema), flavor)
        schema = masked
        text_converters(schema, flavor)  # a type the text cannot be read as fails here, before reading
        kept, fields, conv, absent, hashed = [], [], [], [], []
        for col, mcol in zip(schema.columns, columns, strict=True):
            name = by_lower.get(col.name.lower())
            if name is None:
                absent.append(col.name)
                continue
            kept.append(col)
            fields.append((name, mirror.field(name).type))
            conv.append(mcol)
            hashed.append(rules.key if rule(col.name) == "hash" else None)
        notes = []
        if absent:
            notes.append("source column(s) " + ", ".join(f"`{n}`" for n in absent) + " not in the mirror")
        source_names = {c.name.lower() for c in schema.columns}
        extra = [n for n in mirror.names if n.lower() not in source_names]
        if extra:  # the mirror's columns are the source's: one the source no longer has is a difference
            notes.append("mirror column(s) " + ", ".join(f"`{n}`" for n in extra) + " not on the source")
        if not kept:
            raise SchemaError("the mirror has none of the source table's columns")
        names = [c.name.lower() for c in kept]
        key: tuple[int, ...] = ()
        if schema.primary_key:
            if all(k.lower() in names for k in schema.primary_key):
                key = tuple(names.index(k.lower()) for k in schema.primary_key)
            else:
                notes.append("primary key column(s) not in the mirror: rows compared as a multiset")
        return cls(replace(schema, columns=tuple(kept)), flavor, tuple(fields), tuple(conv), key, tuple(notes),
                   bool(absent or extra), tuple(hashed))


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class _MirrorSide:
    """The mirror as key -> checksum (or checksum -> count without a key)."""

    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self.rows = 0
        self.duplicates: list[str] = []  # keys seen twice: the extra copies
        self.by_key: dict[str | None, bytes] = {}
        self.counts: dict[bytes, int] = {}

    def add(self, batch: pa.RecordBatch) -> None:
        columns = [canonical_column(batch.column(i)) for i in range(batch.num_columns)]
        self.rows += batch.num_rows
        if self.plan.key:
            by_key = self.by_key
            for k, d in row_checksums(columns, self.plan.key):
                if k in by_key:
                    self.duplicates.append(k or "")
                else:
                    by_key[k] = d
        else:
            counts = self.counts
            for _, d in row_checksums(columns, ()):
                counts[d] = counts.get(d, 0) + 1


class _SourceSide:
    """The source rows, converted chunk by chunk and checked off against the mirror."""

    def __init__(self, plan: _Plan, mirror: _MirrorSide) -> None:
        self.plan = plan
        self.mirror = mirror
        self.rows = 0
        self.missing = 0
        self.different = 0
        self.samples: list[str] = []
        self.cast_notes: dict[str, str] = {}
        self._text = text_converters(plan.schema, plan.flavor)
        self._row = row_converter(self._text)

    def add(self, text_rows: list[tuple[str | None, ...]]) -> None:
        plan = self.plan
        rows = convert_rows(plan.schema, self._text, text_rows, self._row)
        if not rows:
            return
        self.rows += len(rows)
        columns = []
        keys = plan.hashed or (None,) * len(plan.columns)
        for values, mcol, (name, mtype), key in zip(zip(*rows, strict=True), plan.columns, plan.mirror_fields, keys,
                                                     strict=True):
            if key is not None:  # a hashed column: the source's value hashed as the pipeline hashes it
                values = tuple(hash_value(key, v) for v in values)
            convert = mcol.convert  # _IDENTITY only maps ABSENT, which the text never yields
            converted = list(values) if convert is _IDENTITY else [None if v is None else convert(v) for v in values]
            array = column_array(mcol, converted)
            if array.type != mtype:
                array = self._cast(array, mcol, name, mtype)
            columns.append(canonical_column(array))
        mirror = self.mirror
        if plan.key:
            by_key, samples = mirror.by_key, self.samples
            for k, d in row_checksums(columns, plan.key):
                have = by_key.pop(k, None)
                if have is None:
                    self.missing += 1
                    if len(samples) < SAMPLE_KEYS:
                        samples.append(f"{self._show(k)} (missing)")
                elif have != d:
                    self.different += 1
                    if len(samples) < SAMPLE_KEYS:
                        samples.append(f"{self._show(k)} (different)")
        else:
            counts = mirror.counts
            for _, d in row_checksums(columns, ()):
                n = counts.get(d, 0)
                if n:
                    counts[d] = n - 1
                else:
                    self.missing += 1

    def _cast(self, array: pa.Array, mcol: MirrorColumn, name: str, mtype: pa.DataType) -> pa.Array:
        try:
            return array.cast(mtype)
        except (pa.ArrowException, ValueError, TypeError) as exc:
            self.cast_notes.setdefault(
                name, f"column `{name}` is {mcol.mysql_type} ({array.type}) on the source but {mtype} in the mirror "
                      f"({exc}); re-snapshot the table")
            return array

    def _show(self, key: str | None) -> str:
        values = json.loads(key) if key else []
        names = [self.plan.schema.columns[i].name for i in self.plan.key]
        text = ", ".join(f"{n}={json.dumps(v, ensure_ascii=False)}" for n, v in zip(names, values, strict=True))
        return text if len(names) == 1 else f"({text})"

    def verdict(self, db: str, table: str) -> TableVerdict:
        plan, mirror = self.plan, self.mirror
        samples = list(self.samples)
        if plan.key:
            leftover = list(mirror.by_key)
            extra = len(leftover) + len(mirror.duplicates)
            for k in (leftover + mirror.duplicates)[: max(0, SAMPLE_KEYS - len(samples))]:
                samples.append(f"{self._show(k)} (extra)")
        else:
            extra = sum(mirror.counts.values())
        notes = [*plan.notes, *self.cast_notes.values()]
        ok = not (self.missing or extra or self.different or plan.failing or self.cast_notes)
        return TableVerdict(db, table, self.rows, mirror.rows, self.missing, extra, self.different, ok,
                            "; ".join(notes) or None, tuple(samples))
