"""The initial snapshot of ``sluice run``: every captured table read in chunks on Spark, then the stream.

DBLog's watermark method (``sluice.cdc.snapshot``): the driver records the binlog position ``start``
before anything is read and splits each table into primary-key chunks; Spark tasks read the chunks
in parallel, each between a low and a high binlog watermark with a connection of its own, and
reconcile the chunk with the table's binlog changes between the two, so every chunk holds the
table's rows as of its high watermark. The driver MERGEs each chunk into the table's Delta mirror as
it arrives. Tables without a primary key are not mirrorable (the pipeline writes their changes to
the change log only) and are not snapshotted. The stream then starts at ``start``;
``SnapshotFilter`` tells the pipeline which early changes a chunk already contains (same table, key
inside the chunk, position before its high watermark): those are left out of the mirror's MERGE but
still go to the change log, which so holds every committed change once.

Resumable: ``LAKE/_sluice/snapshot.json`` holds the start, the chunk plan and every finished chunk
with its watermarks; a chunk's watermarks are saved before its MERGE and each MERGE carries the
chunk's sequence number as a Delta app transaction, so a restart knows whether an interrupted MERGE
landed (keep its watermarks) or not (read the chunk again). A killed snapshot resumes at the first
unfinished chunk.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from sluice.cdc.capture import CaptureConfig, ChangeCapture
from sluice.cdc.follow import FollowConfig, follow
from sluice.cdc.position import Checkpoint, position_key
from sluice.cdc.records import RowChange
from sluice.cdc.schema import Catalog, SchemaTracker, TableSchema, bootstrap_catalog
from sluice.cdc.snapshot.chunks import Chunk, ChunkRead
from sluice.cdc.snapshot.reader import TablePlan, binlog_position, plan_table, prepare_session, read_chunk
from sluice.cdc.snapshot.reconcile import KeyOrder, after_high, key_order, reconcile, split_key_move
from sluice.dsn import parse_dsn
from sluice.errors import ConfigError
from sluice.io.atomic import write_atomically
from sluice.io.connection import Connection
from sluice.spark.delta_sink import CHANGELOG_SCHEMA, DeltaLake, TableBatch

__all__ = ["SnapshotFilter", "SnapshotRunner", "SnapshotState"]

log = logging.getLogger(__name__)

STATE_VERSION = 1


@dataclass
class SnapshotState:
    """What ``snapshot.json`` holds."""

    start: dict[str, Any] | None = None
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)  # "db.t" -> {schema, key, chunks, done, ...}
    complete: bool = False
    flavor: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "start": self.start, "tables": self.tables, "complete": self.complete,
                "flavor": self.flavor}

    @classmethod
    def load(cls, path: Path) -> SnapshotState:
        if not path.exists():
            return cls()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("version") != STATE_VERSION:
                raise ValueError(f"version {data.get('version')!r}")
            return cls(data["start"], data["tables"], bool(data["complete"]), data.get("flavor"))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path} is damaged ({exc}); delete the lake's _sluice directory to start over") from None

    def save(self, path: Path) -> None:
        write_atomically(path, json.dumps(self.to_json()).encode("utf-8"), what="the snapshot state")


def _cp(data: dict[str, Any]) -> Checkpoint:
    return Checkpoint.from_json(data)


def _read_and_reconcile(payload: tuple[str, dict[str, Any], dict[str, Any], list[str], dict[str, Any], str]) -> Any:
    """A Spark task: read one chunk between watermarks and reconcile it with the binlog between them."""
    dsn, catalog_json, schema_json, key, chunk_json, flavor = payload
    schema = TableSchema.from_json(schema_json)
    chunk = Chunk.from_json(chunk_json)
    config = parse_dsn(dsn)
    with Connection.open(config) as conn:
        prepare_session(conn)
        read = read_chunk(conn, TablePlan(schema, tuple(key), (chunk,), 0), chunk)
    changes: list[RowChange] = []
    if position_key(read.low.file, read.low.pos) < position_key(read.high.file, read.high.pos):
        tracker = SchemaTracker(Catalog.from_json(catalog_json), None, flavor=flavor)
        only = (schema.db, schema.name)
        capture = ChangeCapture(
            CaptureConfig(table_filter=lambda d, t: (d, t) == only), Checkpoint(read.low.file, read.low.pos), tracker
        )
        high = position_key(read.high.file, read.high.pos)
        for committed in follow(FollowConfig(config, until_end=True, heartbeat_period=0, retries=8), capture):
            if position_key(committed.start.file, committed.start.pos) >= high:
                break
            changes.extend(r for r in committed.records if type(r) is RowChange)
    rows = reconcile(read, changes, key_order(schema, tuple(key)))
    return chunk_json, read.low.to_json(), read.high.to_json(), rows


class SnapshotRunner:
    """Runs (or resumes) the snapshot of every captured table into the lake."""

    def __init__(self, spark: Any, source: str, lake_root: str, state_dir: Path, app_id: str,
                 include: Callable[[str, str], bool] | None, *, chunk_rows: int = 50_000,
                 progress: Callable[[str], None] | None = None) -> None:
        self.spark = spark
        self.source = source
        self.state_path = state_dir / "snapshot.json"
        self.lake = DeltaLake(lake_root, f"{app_id}-snapshot")
        self.include = include
        self.chunk_rows = chunk_rows
        self.progress = progress or (lambda text: log.info("%s", text))

    def run(self, *, only_new: bool = False) -> SnapshotState:
        """Snapshot every captured table not snapshotted yet (all of them on the first run; with
        ``only_new`` a finished snapshot looks only for tables added to the capture since)."""
        state = SnapshotState.load(self.state_path)
        if state.complete and not only_new:
            return state
        config = parse_dsn(self.source)
        with Connection.open(config) as conn:
            prepare_session(conn)
            state.flavor = "mariadb" if conn.is_mariadb else "mysql"
            if state.start is None:
                state.start = binlog_position(conn).to_json()
                state.save(self.state_path)
            catalog = bootstrap_catalog(conn, self.include)
            for schema in catalog.tables():
                name = f"{schema.db}.{schema.name}"
                if name in state.tables:
                    continue
                if state.complete:
                    self.progress(f"snapshot: {name} is newly captured: snapshotting it before the stream goes on")
                    state.complete = False
                if not schema.primary_key:
                    self.progress(f"snapshot: {name} has no primary key: not mirrorable, not snapshotted "
                                  "(its changes go to the change log)")
                    state.tables[name] = {"schema": schema.to_json(), "key": [], "chunks": [], "done": {},
                                          "writing": None}
                    continue
                plan = plan_table(conn, schema, self.chunk_rows)  # keyed by the primary key when there is one
                state.tables[name] = {
                    "schema": schema.to_json(), "key": list(plan.key), "estimate": plan.rows_estimate,
                    "chunks": [c.to_json() for c in plan.chunks], "done": {}, "writing": None,
                }
                state.save(self.state_path)
        if state.complete:
            return state
        self._settle_interrupted(state)
        self._chunks(catalog, state)
        state.complete = True
        state.save(self.state_path)
        return state

    # -- chunks --------------------------------------------------------------------------------------
    def _pending(self, state: SnapshotState) -> list[tuple[str, dict[str, Any]]]:
        return [(name, c) for name, t in state.tables.items() for c in t["chunks"]
                if Chunk.from_json(c).id not in t["done"]]

    def _chunks(self, catalog: Catalog, state: SnapshotState) -> None:
        pending = self._pending(state)
        total = sum(len(t["chunks"]) for t in state.tables.values())
        if not pending:
            return
        catalog_json = catalog.to_json()
        payloads = [(self.source, catalog_json, state.tables[name]["schema"], state.tables[name]["key"], c,
                     state.flavor or "") for name, c in pending]
        started = time.monotonic()
        rows_done = 0
        done = total - len(pending)
        rdd = self.spark.sparkContext.parallelize(payloads, len(payloads)).map(_read_and_reconcile)
        for chunk_json, low, high, rows in rdd.toLocalIterator(prefetchPartitions=True):
            chunk = Chunk.from_json(chunk_json)
            name = f"{chunk.db}.{chunk.table}"
            table = state.tables[name]
            seq = self._seq(state, name, chunk)
            table["writing"] = {"chunk": chunk.id, "seq": seq, "low": low, "high": high, "rows": len(rows)}
            state.save(self.state_path)
            self._write(table, seq, rows, _cp(high))
            table["done"][chunk.id] = {"low": low, "high": high, "rows": len(rows)}
            table["writing"] = None
            state.save(self.state_path)
            done += 1
            rows_done += len(rows)
            elapsed = max(time.monotonic() - started, 1e-9)
            rate = rows_done / elapsed
            left = (total - done) * (rows_done / max(done - (total - len(pending)), 1))
            eta = f", ETA {left / rate:.0f}s" if rate > 0 and done < total else ""
            self.progress(f"snapshot: {done}/{total} chunks, {rows_done:,} rows ({rate:,.0f} rows/s){eta}")

    def _seq(self, state: SnapshotState, name: str, chunk: Chunk) -> int:
        """A chunk's number in the plan: its Delta app-transaction version (increasing per table)."""
        return [Chunk.from_json(c).id for c in state.tables[name]["chunks"]].index(chunk.id)

    def _settle_interrupted(self, state: SnapshotState) -> None:
        """A MERGE interrupted by a crash either landed (keep its watermarks) or not (read it again)."""
        for name, table in state.tables.items():
            writing = table.get("writing")
            if not writing:
                continue
            db, _, t = name.partition(".")
            path = self.lake.table_path(db, t)
            landed = False
            if DeltaTable.is_deltatable(path):
                version = DeltaTable(path).transaction_version(self.lake.app_id)
                landed = version is not None and int(version) >= int(writing["seq"])
            if landed:
                table["done"][writing["chunk"]] = {k: writing[k] for k in ("low", "high", "rows")}
            table["writing"] = None
            state.save(self.state_path)

    def _write(self, table: dict[str, Any], seq: int, rows: list[dict[str, Any]], at: Checkpoint) -> None:
        from sluice.spark.layout import mirror_columns_for_schema

        schema = TableSchema.from_json(table["schema"])
        columns = mirror_columns_for_schema(schema)
        pk = tuple(schema.primary_key) or tuple(table["key"])
        changes = [RowChange("insert", schema.db, schema.name, None, row, pk, at.file, at.pos, i, None, 0)
                   for i, row in enumerate(rows)]
        empty_log = CHANGELOG_SCHEMA.empty_table()
        self.lake.write_batch(seq, [TableBatch(schema.db, schema.name, columns, pk, changes)], changelog=empty_log)


def forget_tables(state_dir: Path, lake: DeltaLake, names: Sequence[str]) -> list[str]:
    """Drop the snapshot (state and Delta mirror) of ``db.table`` names, so the next run reads them again."""
    import shutil

    path = state_dir / "snapshot.json"
    state = SnapshotState.load(path)
    dropped = [n for n in names if n in state.tables]
    for name in dropped:
        del state.tables[name]
        db, _, table = name.partition(".")
        shutil.rmtree(lake.table_path(db, table), ignore_errors=True)
    if dropped:
        state.complete = False
        state.save(path)
    return dropped


class SnapshotFilter:
    """Which streamed changes a finished snapshot already contains (left out of the mirror MERGE)."""

    def __init__(self, state: SnapshotState) -> None:
        self._tables: dict[tuple[str, str], tuple[KeyOrder, list[ChunkRead], tuple[str, int, int]]] = {}
        for table in state.tables.values():
            if not table["key"]:
                continue
            schema = TableSchema.from_json(table["schema"])
            order = key_order(schema, tuple(table["key"]))
            reads = []
            for c in table["chunks"]:
                chunk = Chunk.from_json(c)
                done = table["done"].get(chunk.id)
                if done is not None:
                    reads.append(ChunkRead(chunk, _cp(done["low"]), _cp(done["high"]), []))
            if reads:
                last = max(position_key(r.high.file, r.high.pos) for r in reads)
                self._tables[(schema.db, schema.name)] = (order, reads, last)

    def __bool__(self) -> bool:
        return bool(self._tables)

    def keep(self, changes: Sequence[RowChange]) -> list[RowChange]:
        """The changes the mirror still needs (key moves split into a delete and an insert)."""
        out: list[RowChange] = []
        for change in changes:
            entry = self._tables.get((change.db, change.table))
            if entry is None or position_key(change.file, change.pos) >= entry[2]:
                out.append(change)
                continue
            order, reads, _ = entry
            for part in split_key_move(change, order):
                if all(after_high(read, part, order) for read in reads):
                    out.append(part)
        return out


def stream_start(state: SnapshotState) -> str:
    """Where the stream starts after the snapshot: ``FILE:POS`` recorded before any chunk was read."""
    if state.start is None:
        raise ConfigError("the snapshot has no start position recorded")
    cp = _cp(state.start)
    return f"{cp.file}:{cp.pos}"
