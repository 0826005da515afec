"""The initial snapshot of ``sluice run``: every captured table read in chunks on Spark, then the stream.

DBLog's watermark method (``sluice.cdc.table_read``): the driver records the binlog position ``start``
(with the executed GTID set exactly there, ``sluice.cdc.executed_at``, and the server's identity)
before anything is read and splits each table into primary-key chunks; Spark tasks read the chunks
in parallel (Spark jobs of a wave of chunks, the next wave running ahead of the driver's writes; at
most ``connections`` at once, one per core up to 8 by default: ``waves.chunk_waves``), each between a
low and a high binlog watermark with a connection of its own, and reconcile the chunk with the
table's binlog changes between the two, so every chunk holds the table's rows as of its high
watermark. Each watermark names the server it was read on and carries the executed GTID set there,
established by reading forward from the nearest boundary the driver knows exactly (the start, the
high watermarks of the chunks done: ``cdc.table_read.watermarks``), so that chunks read on two
servers (a failover in the middle of the snapshot) and the stream compare by GTID set. Every
keyed table's mirror is created, empty and with its columns, when the table is planned (a table
with no rows has one too). A mirror with no rows when its snapshot is planned gets its chunks,
disjoint key ranges, as appends: the task cuts the text rows into the mirror's Arrow columns
(``sluice.spark.snapshot.text_rows``, ``snapshot_arrow``) and writes the mirror's data file, which the
driver commits in plan order; only the keys of the rows meet the binlog changes. A mirror that
holds rows gets each chunk as a MERGE of decoded rows. Tables without a primary key are read in
one consistent scan into the change log as ``read`` records (``sluice.spark.snapshot.keyless``).
The stream then starts at ``start``; ``SnapshotFilter`` (``sluice.spark.snapshot.filter``) tells
the pipeline which early changes a chunk already holds (same table, key inside the chunk, before
its high watermark): they stay out of the mirror's MERGE but go to the change log, which so holds
every committed change once. A table DDL changed while it was planned or read is planned again;
one found gone then (renamed or dropped) is left to the stream, which meets its RENAME or DROP.

Resumable: ``LAKE/_sluice/snapshot.json`` holds the start, the chunk plan (with the table's write
mode, append or MERGE) and every finished chunk with its watermarks; a chunk's watermarks are saved
before its write and each write carries the chunk's sequence number as a Delta app transaction
(chunks of a table are written in plan order), so a restart knows whether an interrupted write
landed (keep its watermarks) or not (read the chunk again). A killed snapshot resumes at the first
unfinished chunk. A stop asked for (``stopping``: Ctrl-C, SIGTERM) ends the snapshot, unfinished, at
the end of the wave of chunks being read (the wave submitted ahead is cancelled) or before the next
key-less table's scan; the next run resumes it there.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from deltalake import DeltaTable

from sluice.binlog.position import Checkpoint, position_key
from sluice.cdc.column_rules import open_chunk
from sluice.cdc.executed_at import executed_at
from sluice.cdc.follow import FollowConfig, retrying
from sluice.cdc.schema import Catalog, SchemaHistory, TableSchema, bootstrap_catalog
from sluice.cdc.schema_start import ddl_between, read_schema
from sluice.cdc.table_read.chunks import Chunk
from sluice.cdc.table_read.reader import (
    TABLE_CHANGED,
    LowMark,
    binlog_position,
    low_mark,
    plan_table,
    prepare_session,
)
from sluice.cdc.table_read.watermarks import recent
from sluice.dsn import Flavor, parse_dsn
from sluice.errors import SchemaError, ServerError
from sluice.io.connection import Connection
from sluice.io.replication import server_identity
from sluice.lake.layout import Lake
from sluice.lake.sink import DeltaLake
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.runtime.session import start_python_workers
from sluice.spark.snapshot.keyless import snapshot_keyless
from sluice.spark.snapshot.mirror_writes import (
    RoutedChunks,
    append_chunk,
    append_target,
    merge_chunk,
    mirror_empty,
    settle_interrupted,
)
from sluice.spark.snapshot.state import RESYNC_HISTORY, SnapshotState
from sluice.spark.snapshot.task import ChunkTask
from sluice.spark.snapshot.waves import in_waves

__all__ = ["SnapshotRunner"]

log = logging.getLogger(__name__)

_PASSES = 5  # snapshot passes over tables that DDL changed under the read, before giving up


class _Stopped(Exception):
    """A stop was asked for: the snapshot ends here, unfinished, its state saved."""


class SnapshotRunner:
    """Runs (or resumes) the snapshot of every captured table into the lake."""

    def __init__(self, spark: Any, source: str, store: Lake, app_id: str,
                 include: Callable[[str, str], bool] | None, *, chunk_rows: int | None = None,
                 connections: int | None = None,
                 progress: Callable[[str], None] | None = None, history: SchemaHistory | None = None,
                 on_chunk: Callable[[int, int, int], None] | None = None, change_feed: bool = True,
                 stopping: Callable[[], bool] | None = None, columns: Any = None, routes: Any = None) -> None:
        self.spark = spark
        self.columns = columns  # ColumnRules: a table it touches is merged chunk by chunk, its rows masked
        self.routes = routes  # Routes: a routed table is merged chunk by chunk into its mirror (RoutedChunks)
        self._routed: RoutedChunks | None = None
        self.source = source
        self.store = store
        self.lake = DeltaLake(store, f"{app_id}-snapshot", change_feed=change_feed)
        self.include = include
        self.chunk_rows = chunk_rows
        self.connections = connections  # chunks read at once (``chunk_waves``)
        self.progress = progress or (lambda text: log.info("%s", text))
        self.history = history  # the stream's schema history: the schema at ``start`` goes there
        self.on_chunk = on_chunk  # (chunks done, chunks planned, rows written) after every chunk
        self._failed: dict[str, str] = {}  # chunk errors of this pass that DDL may explain
        self._mirrors: dict[str, DeltaTable] = {}  # appended mirrors, open: reopening replays the log
        self.stopping = stopping or (lambda: False)  # whether to stop at the next wave boundary
        self._jobs = f"sluice-snapshot-{uuid.uuid4().hex[:8]}"  # the Spark job group of the chunks' waves

    def run(self, *, only_new: bool = False, only: frozenset[str] | None = None) -> SnapshotState:
        """Snapshot every captured table not snapshotted yet (all of them on the first run; with
        ``only_new`` a finished snapshot looks only for tables added to the capture since; ``only``
        limits it to those ``db.table`` names, e.g. tables a DDL made the pipeline read again). A
        connection of the driver's that is lost or stalls is made again (``retrying``): the run
        resumes from the state in the lake, as the next run would."""

        def attempt() -> SnapshotState:
            self._failed, self._mirrors = {}, {}
            return self._run(only_new, only)

        return retrying(FollowConfig(parse_dsn(self.source), retries=8), "planning the snapshot", attempt)

    def _run(self, only_new: bool, only: frozenset[str] | None) -> SnapshotState:
        state = SnapshotState.load(self.store)
        state.finish_discards(self.store)  # a read dropped before a kill: its mirror goes before any plan
        if state.complete and not only_new:
            return state
        if not state.complete:  # the chunks' workers come up while the tables are planned
            start_python_workers(self.spark, ("sluice.spark.snapshot.task",), kind="rdd")
        for _attempt in range(_PASSES):
            try:
                stale = self._pass(state, only)
            except _Stopped:
                done = sum(len(t["done"]) for t in state.tables.values())
                total = sum(len(t["chunks"]) for t in state.tables.values())
                self.progress(f"snapshot: stopped at {done}/{total} chunks; the next run resumes it there")
                return state
            if not stale:
                break
            only_new = True  # plan the tables a DDL changed under the read again, and only those
            only = frozenset(stale)
        else:
            raise SchemaError(
                f"the tables {', '.join(sorted(stale))} kept changing (DDL) while they were snapshotted, "
                f"{_PASSES} times: run again when their DDL is done"
            )
        return state

    def _pass(self, state: SnapshotState, only: frozenset[str] | None) -> set[str]:
        """Plan the tables not snapshotted yet and read their chunks; returns the names of tables a
        DDL changed (or removed) while they were read: their reads are dropped, to be planned again."""
        config = parse_dsn(self.source)
        moved: set[str] = set()
        with Connection.open(config) as conn:
            prepare_session(conn)
            state.flavor = conn.flavor
            if state.start is None:
                # The stream starts at `start` and decodes with the schema in force there: read both
                # so that no DDL falls between them (every table: one added to the capture later too).
                everything, read_at = read_schema(conn)
                # its GTID set exactly there, read from the file's start: SHOW BINARY LOG STATUS reads
                # the set and the position at two moments, and a set past the position would skip
                # the transactions between as executed before
                start = executed_at(FollowConfig(config, retries=8),
                                    Checkpoint(read_at.file, read_at.pos, None, server_identity(conn)))
                if self.history is not None:
                    self.history.record_bootstrap(start.file, start.pos, everything, at=start)
                state.start = start.to_json()
                state.save(self.store)
            # MySQL: the first wave's low watermark is taken here, so its settle passes while the
            # tables are planned (an older mark only widens a chunk's reconcile window; _in_order)
            on = server_identity(conn)
            first = low_mark(conn, on) if conn.flavor == Flavor.MYSQL else None
            planned_at = first.low if first is not None else binlog_position(conn, on)
            catalog = bootstrap_catalog(conn, self.include)
            self._routed = RoutedChunks.of(self.lake, self.routes, conn.flavor, self.columns, catalog)
            for name in only or ():
                if name not in state.tables and catalog.get(*name.split(".", 1)) is None:
                    # Gone (renamed or dropped) before it could be read again: its mirror stays away and
                    # the stream leaves it alone until it meets that RENAME / DROP.
                    state.tables[name] = {"lost": True, "key": [], "chunks": [], "done": {}, "writing": None}
            for table_schema in catalog.tables():
                schema = table_schema.selected()  # what the chunks' SELECT reads: a versioned table's current rows
                name = f"{schema.db}.{schema.name}"
                if name in state.tables or (only is not None and name not in only):
                    continue
                if self.columns is not None:
                    self.columns.mask_schema(schema)  # a rule the lake cannot follow fails before anything is kept
                if state.complete:
                    why = "is read again" if only is not None else "is newly captured: snapshotting it"
                    self.progress(f"snapshot: {name} {why} before the stream goes on")
                    state.complete = False
                if not schema.primary_key:
                    self.progress(f"snapshot: {name} has no primary key: not mirrorable; it is read in one "
                                  "consistent scan into the change log (as are its changes)")
                    state.tables[name] = {"schema": schema.to_json(), "key": [], "chunks": [], "done": {},
                                          "writing": None, "scan": None, "read": None}
                    state.save(self.store)
                    continue
                self.lake.flush(schema.db, schema.name)  # the stream's changes pending for it: older than the read
                routed = self._routed is not None and self._routed.plan(schema)  # its rows leave its routed mirror
                append = not routed and self._mirror_empty(schema.db, schema.name) and not (
                    self.columns is not None and self.columns.touches(schema.db, schema.name,
                                                                      tuple(c.name for c in schema.columns)))
                try:
                    plan = plan_table(conn, schema, self.chunk_rows, merged=not append)  # keyed by the primary key
                except ServerError as exc:
                    if exc.errno not in TABLE_CHANGED:
                        raise
                    moved.add(name)  # renamed, dropped or altered since the catalog was read: plan it again
                    continue
                state.tables[name] = {
                    "schema": schema.to_json(), "key": list(plan.key), "estimate": plan.rows_estimate,
                    "chunks": _kept(self.columns, schema, plan.key, plan.chunks), "done": {}, "writing": None,
                    "append": append, "planned_at": planned_at.to_json(), **_under_history(self.store, schema),
                }
                state.save(self.store)
                if append:  # a mirror from the start, with its columns, even for a table with no rows
                    self.lake.create_mirror(schema.db, schema.name, mirror_columns_for_schema(schema, conn.flavor))
        if state.complete:
            return set()
        self._settle_interrupted(state)
        self._failed = {}
        reading = {name for name, _ in self._pending(state)}
        stale = self._chunks(catalog, state, first)
        if self.stopping() and self._pending(state):
            raise _Stopped
        if reading:  # DDL on a table between its planning and its last chunk makes its read stale
            touched = _touched_since(config, state, reading, planned_at)
            stale |= touched & reading
            unexplained = {n: why for n, why in self._failed.items() if n not in touched}
            if unexplained:
                raise SchemaError("; ".join(unexplained.values()))
        stale = (stale | moved) or self._scan_keyless(state)
        for name in stale:
            self.progress(f"snapshot: {name} changed (DDL) while it was read: reading it again")
            self._mirrors.pop(self.lake.table_path(*name.split(".", 1)), None)  # its log is removed here
        if stale:
            state.discard(self.store, sorted(stale))  # the state first, then the mirrors
            return stale
        state.complete = True
        state.save(self.store)
        return set()

    def _scan_keyless(self, state: SnapshotState) -> set[str]:
        """Read each key-less table not read yet in one consistent scan; returns the names of those
        a DDL renamed, dropped or altered before their scan, to be planned again."""
        moved = set()
        for name, table in state.tables.items():
            if "read" in table and table["read"] is None:  # key-less (not in older states)
                if self.stopping():
                    raise _Stopped
                try:
                    snapshot_keyless(self.source, self.lake, table, lambda: state.save(self.store),
                                     self.progress, self.columns)
                except ServerError as exc:
                    if exc.errno not in TABLE_CHANGED:
                        raise
                    moved.add(name)
        return moved

    # -- chunks --------------------------------------------------------------------------------------
    def _pending(self, state: SnapshotState) -> list[tuple[str, dict[str, Any]]]:
        return [(name, open_chunk(self.columns, c)) for name, t in state.tables.items() for c in t["chunks"]
                if Chunk.json_id(c) not in t["done"]]

    def _chunks(self, catalog: Catalog, state: SnapshotState, first: LowMark | None) -> set[str]:
        pending = self._pending(state)
        total = sum(len(t["chunks"]) for t in state.tables.values())
        stale: set[str] = set()
        if not pending:
            return stale
        catalog_json = catalog.to_json()
        tasks = [
            ChunkTask(self.source, catalog_json, state.tables[name]["schema"], tuple(state.tables[name]["key"]), c,
                      state.flavor or "", append_target(self.lake, self.store, state.tables[name]))
            for name, c in pending
        ]
        started = time.monotonic()
        rows_done = 0
        done = total - len(pending)
        known = _exact_points(state)  # and each chunk's high watermark as it comes
        for result in in_waves(self.spark, self.source, tasks, first, self.connections, self.stopping, self._jobs,
                               lambda: tuple(p.to_json() for p in recent(known))):
            chunk = Chunk.from_json(result.chunk)
            name = f"{chunk.db}.{chunk.table}"
            table = state.tables[name]
            if result.stale or name in stale:
                stale.add(name)
                if result.error is not None:
                    self._failed[name] = result.error  # stale if DDL explains it, else this error stands
                continue
            low, high, count = result.low, result.high, result.rows
            if high is not None:
                known.append(Checkpoint.from_json(high))
            seq = self._seq(state, name, chunk)
            table["writing"] = {"chunk": chunk.id, "seq": seq, "low": low, "high": high, "rows": count}
            state.save(self.store)
            if result.appended is not None:
                self._append(table, seq, result.appended, state.flavor)
            else:
                assert high is not None and result.merged is not None
                merge_chunk(self.lake, table, seq, result.merged, Checkpoint.from_json(high), state.flavor,
                            self.columns, self._routed)
            table["done"][chunk.id] = {"low": low, "high": high, "rows": count}
            table["writing"] = None
            state.save(self.store)
            done += 1
            rows_done += count
            elapsed = max(time.monotonic() - started, 1e-9)
            rate = rows_done / elapsed
            left = (total - done) * (rows_done / max(done - (total - len(pending)), 1))
            eta = f", ETA {left / rate:.0f}s" if rate > 0 and done < total else ""
            self.progress(f"snapshot: {done}/{total} chunks, {rows_done:,} rows ({rate:,.0f} rows/s){eta}")
            if self.on_chunk is not None:
                self.on_chunk(done, total, rows_done)
        return stale

    # The steps into the mirrors (``mirror_writes``), as methods: where a run's subclass steps in.
    def _mirror_empty(self, db: str, name: str) -> bool:
        return mirror_empty(self.lake, db, name)

    def _settle_interrupted(self, state: SnapshotState) -> None:
        settle_interrupted(self.lake, self.store, state, self._routed)

    def _append(self, table: dict[str, Any], seq: int, rows: Any, flavor: str | None) -> None:
        append_chunk(self.lake, self._mirrors, table, seq, rows, flavor)

    def _seq(self, state: SnapshotState, name: str, chunk: Chunk) -> int:
        """A chunk's number in the plan: its Delta app-transaction version (increasing per table)."""
        return [Chunk.json_id(c) for c in state.tables[name]["chunks"]].index(chunk.id)


def _exact_points(state: SnapshotState) -> list[Checkpoint]:
    """The boundaries the snapshot knows exactly: its start and its chunks' high watermarks."""
    known = [Checkpoint.from_json(d["high"]) for t in state.tables.values() for d in t["done"].values()
             if d.get("high")]
    return [*known, Checkpoint.from_json(state.start)] if state.start else known


def _touched_since(config: Any, state: SnapshotState, reading: set[str], planned_at: Checkpoint) -> set[str]:
    """The ``db.table`` names a DDL logged since the tables ``reading`` were planned touches."""
    planned = [Checkpoint.from_json(state.tables[n]["planned_at"]) for n in reading
               if state.tables[n].get("planned_at")]
    with Connection.open(config) as conn:
        now = binlog_position(conn, server_identity(conn))
        since = _earliest(planned or [planned_at], now, state)
        return {f"{db}.{t}" for ddl in ddl_between(conn, since, now) for db, t in ddl.tables}


def _earliest(points: list[Checkpoint], now: Checkpoint, state: SnapshotState) -> Checkpoint:
    """Where the check for DDL under the chunks reads from: the earliest of the tables' planning
    points, when they were read on the server read now (``now``'s); else (a failover while the
    tables were read) the snapshot's start, whose GTID set is exact: a planning point's, read apart
    from its position, is not."""
    here = now.source
    if all(p.source is None or here is None or p.source.same_server(here) for p in points):
        return min(points, key=lambda c: position_key(c.file, c.pos))
    return Checkpoint.from_json(state.start) if state.start is not None else points[0]


def _under_history(store: Lake, schema: TableSchema) -> dict[str, bool]:
    """A planned table's ``RESYNC_HISTORY`` flag: set when the lake keeps its history (read again)."""
    return {RESYNC_HISTORY: True} if store.is_delta(store.history(schema.db, schema.name)) else {}


def _kept(rules: Any, schema: TableSchema, key: tuple[str, ...], chunks: Any) -> list[dict[str, Any]]:
    """A table's chunk plan as ``snapshot.json`` keeps it: bounds sealed when the key is hashed."""
    out = [c.to_json() for c in chunks]
    if rules is not None and rules.of(schema.db, schema.name, key, "hash"):
        out = [rules.seal_chunk(c) for c in out]
    return out
