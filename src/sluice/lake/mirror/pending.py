"""A mirror's pending changes: batches folded but not yet MERGEd, and when to MERGE them.

delta-rs MERGEs copy-on-write: a MERGE rewrites every file of the mirror holding a key it touches,
and changes at random keys touch them all. MERGEd every batch, a large mirror is rewritten whole
at every batch. So a batch whose table has a large mirror is not MERGEd at once: its MERGE source
(one row per key, the full row or a delete flag, ``sluice.lake.mirror.merge``) is appended to the
table's pending table ``LAKE/_sluice/pending/<db>/<table>`` (Delta, a small file per batch) and
MERGEd later, folded with everything pending before it, in one MERGE. ``MirrorCadence.due`` says
when: once the pending changes times ``bytes_per_change`` reach the mirror's size (what a MERGE
rewrites is then at most ``bytes_per_change`` per change, whatever the table's size), once the
oldest pending change is ``max_lag`` old, and always for a mirror smaller than ``merge_below``.

Exactly once: an append and a MERGE each carry the batch's app transaction, and the pending table
is emptied after the MERGE that took its rows, with the same transaction (a batch is in the lake
for a table when the mirror or its pending table records it). A kill between a batch's MERGE and
the emptying leaves rows older than the mirror, which then records a later batch than its pending
table: the writer empties such a pending table before it plans or flushes that mirror again, as
MERGEd again those rows would undo the newer changes the batch MERGEd with them. A flush's MERGE
records no batch: a kill between it and the emptying leaves the rows it MERGEd, and nothing after
them, so MERGEd again they leave the mirror as it is. Anything else that writes a mirror (DDL, a
snapshot) MERGEs its pending changes first (``DeltaLake.flush``).

Readers: the Delta mirror is as of its last MERGE; ``read_mirror`` gives the state as of the change
log's last commit, the mirror with its pending changes laid over it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, write_deltalake

from sluice.errors import ConfigError
from sluice.lake.kept_table import KeptTable
from sluice.lake.layout import Lake, open_lake
from sluice.lake.mirror.merge_source import DELETE_FLAG, fold_sources, last_per_key
from sluice.lake.mirror.pieces import PendingPiece, table_dataset
from sluice.lake.storage import LakeStore

__all__ = [
    "KEY_METADATA", "SEQ", "MirrorCadence", "PendingChanges", "combine", "conform", "mirror_bytes", "overlay",
    "primary_key_of", "read_mirror", "with_pending",
]

SEQ: Final = "_sluice_seq"  # the pending table's column: the order in which rows were appended
APPENDED: Final = "_sluice_appended"  # and when (milliseconds since the epoch; kept by a compaction)
FILES_AT_ONCE: Final = 64  # a pending table's data files read side by side
KEY_METADATA: Final = b"sluice.key"  # field metadata of a primary key column: its place in the key


@dataclass(frozen=True, slots=True)
class MirrorCadence:
    """When a table's pending changes are MERGEd into its mirror (``[mirror]`` in the config), and
    how many mirrors of a batch are committed at once (``sluice.lake.at_once``).

    ``max_lag = 0`` MERGEs every batch; ``commits_at_once = 1`` commits the mirrors one by one.
    """

    bytes_per_change: int = 1024  # MERGE once pending changes x this reach the mirror's bytes
    max_lag: float = 600.0  # seconds: MERGE once the oldest pending change is this old
    merge_below: int = 1 << 20  # bytes: a mirror smaller than this is MERGEd every batch
    max_pending_rows: int = 2_000_000  # MERGE once this many rows are pending (the driver holds them)
    commits_at_once: int = 4  # mirrors of one batch (or of a clean stop) MERGEd or appended to side by side
    pass_rows: int = 200_000  # a MERGE of more keys than this is done in passes (sluice.lake.mirror.passes)

    def __post_init__(self) -> None:
        for name in ("bytes_per_change", "merge_below", "max_pending_rows", "commits_at_once", "pass_rows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"mirror {name} must be a whole number >= 1; found {value!r}")
        lag = self.max_lag
        if isinstance(lag, bool) or not isinstance(lag, int | float) or not math.isfinite(lag) or lag < 0:
            raise ConfigError(f"mirror max_lag must be a number of seconds >= 0; found {lag!r}")

    def due(self, mirror_bytes: int, pending_rows: int, oldest: float | None, now: float) -> bool:
        """Whether to MERGE now a mirror of ``mirror_bytes`` with ``pending_rows`` rows pending (this
        batch's included), the oldest pending since ``oldest`` (epoch seconds; None: none before)."""
        return (self.max_lag == 0 or mirror_bytes < self.merge_below
                or pending_rows * self.bytes_per_change >= mirror_bytes
                or pending_rows >= self.max_pending_rows
                or (oldest is not None and now - oldest >= self.max_lag))


class PendingChanges:
    """The pending table of one mirror, as its log said when opened; each write here keeps the
    state up to date without reading the log again. ``kept``: the table kept between batches at
    this path (``sluice.lake.kept_table``), brought up to date instead of read whole."""

    def __init__(self, store: Lake, db: str, table: str, *, kept: KeptTable | None = None) -> None:
        self.path = store.pending(db, table)
        self.store = store
        self.options = store.delta_options()
        self.table = (kept or KeptTable(self.path, self.options)).current()  # None: no pending table yet
        self.version = -1  # the pending table's version (-1: none yet)
        self.rows = 0  # pending rows
        self.oldest: float | None = None  # epoch seconds of the oldest pending rows' append
        if self.table is None:
            return
        self.version = self.table.version()
        actions = self.table.get_add_actions(flatten=True)
        self.rows = sum(n or 0 for n in actions.column("num_records").to_pylist())
        times = [t for t in actions.column(f"min.{APPENDED}").to_pylist() if t is not None] if self.rows else []
        self.oldest = min(times) / 1000.0 if times else None

    def read(self) -> pa.Table | None:
        """The pending rows in the order they came (a later row of a key wins), without ``SEQ``;
        None when nothing is pending."""
        if self.table is None or not self.rows:
            return None
        # Side by side: pyarrow reads four files at a time by default, each a footer and a body one
        # after the other, which on an object store is two round trips per four files; this way as
        # many as pyarrow's I/O threads (8 by default) go at once.
        rows = self.table.to_pyarrow_dataset().to_table(fragment_readahead=FILES_AT_ONCE)
        rows = rows.take(pc.sort_indices(rows.column(SEQ)))  # a stable sort: a batch's rows keep their order
        return rows.drop_columns([SEQ, APPENDED])

    def append(self, source: pa.Table, primary_key: tuple[str, ...], txn: CommitProperties) -> None:
        """Add a batch's MERGE source (no presence flags: full rows and deletes only)."""
        seq = self.version + 1  # this commit's version: the pipeline is the table's one writer
        appended = time.time()
        rows = _with_key(source, primary_key).append_column(SEQ, pa.array(np.full(source.num_rows, seq, np.int64)))
        rows = rows.append_column(APPENDED, pa.array(np.full(source.num_rows, int(appended * 1000), np.int64)))
        target = self.path if self.table is None else self.table  # a table object is kept up to date by the write
        if not self.rows:  # empty: take this batch's schema as it is
            write_deltalake(target, rows, mode="overwrite", schema_mode="overwrite", commit_properties=txn,
                            storage_options=self.options)
        else:
            write_deltalake(target, rows, mode="append", schema_mode="merge", commit_properties=txn,
                            storage_options=self.options)
        self.version, self.rows = seq, self.rows + source.num_rows
        self.oldest = int(appended * 1000) / 1000.0 if self.oldest is None else self.oldest  # as the table keeps it

    def pieces(self) -> list[PendingPiece]:
        """The pending rows as pieces of a MERGE in passes: a piece per data file, each row ordered
        by the batch that appended it."""
        if self.table is None or not self.rows:
            return []
        dataset = table_dataset(self.table, self.path, self.store)
        return [PendingPiece(f, dataset.schema, SEQ) for f in dataset.get_fragments()]

    def clear(self, txn: CommitProperties | None) -> None:
        """Empty the pending table (after a MERGE took its rows), recording ``txn``."""
        if self.table is None:
            return
        empty = pa.schema(self.table.schema().to_arrow()).empty_table()
        write_deltalake(self.table, empty, mode="overwrite", commit_properties=txn, storage_options=self.options)
        self.version, self.rows, self.oldest = self.version + 1, 0, None


def combine(pending: pa.Table | None, source: pa.Table, primary_key: tuple[str, ...]) -> pa.Table:
    """One MERGE source from the pending rows and a batch's source after them."""
    if pending is None:
        return source
    return fold_sources([conform(pending, source.schema), source], primary_key)


def overlay(mirror: pa.Table, pending: pa.Table, primary_key: tuple[str, ...]) -> pa.Table:
    """The mirror's rows as of its pending changes: a pending key's mirror row gives way to its
    last pending state (its row, or nothing for a delete)."""
    last = last_per_key(pending, primary_key)
    names = mirror.column_names
    keys = pa.table({**{f"k{j}": mirror.column(k) for j, k in enumerate(primary_key)},
                     "at": pa.array(np.arange(mirror.num_rows, dtype=np.int64))})
    touched = pa.table({f"k{j}": last.column(k) for j, k in enumerate(primary_key)})
    hit = keys.join(touched, [f"k{j}" for j in range(len(primary_key))], join_type="left semi")
    keep = np.ones(mirror.num_rows, dtype=bool)
    keep[hit.column("at").to_numpy()] = False
    upserts = last.filter(pc.invert(last.column(DELETE_FLAG)))
    return pa.concat_tables([conform(mirror.filter(pa.array(keep)), mirror.schema),
                             conform(upserts, mirror.schema).select(names)])


def read_mirror(lake: str | LakeStore, db: str, table: str, storage: dict[str, str] | None = None) -> pa.Table:
    """The rows of ``db.table``'s mirror as of the change log's last commit: the Delta mirror with the
    changes pending for it laid over it (``overlay``). ``storage``: the lake's storage options."""
    store = open_lake(lake, storage)
    mirror = DeltaTable(store.mirror(db, table), storage_options=store.delta_options()).to_pyarrow_table()
    return with_pending(mirror, PendingChanges(store, db, table).read())


def with_pending(mirror: pa.Table, pending: pa.Table | None) -> pa.Table:
    """``mirror`` with the pending rows ``pending`` (``PendingChanges.read``; None: none) laid over it."""
    return mirror if pending is None else overlay(mirror, pending, primary_key_of(pending.schema))


def primary_key_of(schema: pa.Schema) -> tuple[str, ...]:
    """The primary key of a pending table's rows, from its columns' metadata."""
    keyed = [(int((f.metadata or {})[KEY_METADATA]), f.name) for f in schema if KEY_METADATA in (f.metadata or {})]
    return tuple(name for _, name in sorted(keyed))


def mirror_bytes(dt: DeltaTable) -> int:
    """The bytes of a mirror's data files (what a MERGE touching every file rewrites)."""
    sizes = dt.get_add_actions().column("size_bytes").to_pylist()
    return int(sum(sizes))


def _with_key(source: pa.Table, primary_key: tuple[str, ...]) -> pa.Table:
    """``source`` with its key columns marked in their metadata, so a reader finds the key."""
    fields = [f.with_metadata({KEY_METADATA: str(primary_key.index(f.name)).encode()}) if f.name in primary_key else f
              for f in source.schema]
    return source.cast(pa.schema(fields))


def conform(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` with ``schema``'s columns, in its order (a column it lacks is NULL), metadata dropped."""
    arrays = []
    for f in schema:
        if f.name in rows.column_names:
            arrays.append(rows.column(f.name).cast(f.type))
        else:
            arrays.append(pa.nulls(rows.num_rows, f.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema([pa.field(f.name, f.type) for f in schema]))
