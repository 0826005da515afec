"""Which tables of a micro-batch keep a history (``sluice run --history REGEX``), and their changes
for it: one ``HistoryBatch`` per such table (``sluice.lake.mirror.history``).

The changes come from the change-log files the batch's tasks staged, every one in ``seq`` order,
each with its transaction's commit time (the ``ChangelogFile`` descriptor's runs of commit times)
and ``seq``, less those a snapshot already holds (``SnapshotFilter``, as for the mirror). A table
gets a ``HistoryBatch`` when the batch changes it, when a DDL of the batch names it (its history is
then compared with the mirror the DDL left, at the DDL's commit time and ``seq``), and, at the first
batch of a run, when it has a mirror and no history yet (the history starts from the mirror).

A table a snapshot read again while the lake kept its history (``sluice snapshot``, ``--snapshot
when-needed``, a DDL's re-read: flagged ``RESYNC_HISTORY`` in ``snapshot.json``) has its history
compared with the mirror the read left at its next batch, at the batch's first commit time and no
``seq``: a row that changed in between opens a version, one gone closes its version, as after a DDL.
The flags are cleared once that batch is committed; a kill before leaves them, and the next batch
compares again, finding nothing more to change.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sluice.cdc.schema import Catalog, SchemaHistory
from sluice.errors import ConfigError
from sluice.lake.changelog.rows import to_row_changes
from sluice.lake.layout import Lake
from sluice.lake.mirror.batch import TableBatch
from sluice.lake.mirror.history import HistoryBatch
from sluice.lake.mirror.versions import Change, converted
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.spark.snapshot.filter import SnapshotFilter
from sluice.spark.snapshot.state import RESYNC_HISTORY, SnapshotState
from sluice.spark.source.descriptors import ChangelogFile

__all__ = ["HistoryFeed", "history_pattern"]


def history_pattern(text: str | None) -> re.Pattern[str] | None:
    """``--history``'s regex, compiled (None: no table keeps a history); ``ConfigError`` when bad."""
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as exc:
        raise ConfigError(f"--history {text!r} is not a regular expression ({exc}); it matches 'db.table' in full, "
                          r"e.g. --history 'shop\.(orders|customers)'") from None


class HistoryFeed:
    """The ``HistoryBatch``es of each batch of one pipeline (module docstring)."""

    def __init__(self, pattern: str | None, store: Lake, columns: Any = None) -> None:
        self.pattern = history_pattern(pattern)
        self.store = store
        self.rules = columns  # ColumnRules: columns kept out or hashed, as in the mirrors
        self._listed = False  # the lake's mirrors without a history were looked for (first batch)
        self.resync: set[tuple[str, str]] = set()  # tables read again since their history was written

    def __bool__(self) -> bool:
        return self.pattern is not None

    def check_lake(self, captured: Callable[[str, str], bool] | None, *, streams: bool = True) -> None:
        """``ConfigError`` when the lake keeps the history of a table the run captures (``captured``,
        None: every table) and ``--history`` does not take: the run's changes would be missing from it.
        Called before the run writes anything; a run that only snapshots (``streams`` False) writes no
        history, and is let be."""
        if not streams:
            return
        left = [f"{db}.{t}" for db, t in self.store.histories()
                if (captured is None or captured(db, t)) and not self.wants(db, t)]
        if left:
            shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
            raise ConfigError(
                f"the lake {self.store.uri} keeps the history of {shown}, which this run's --history does not take: "
                "the history would miss its changes. Give --history a regex that takes them, or, to stop keeping a "
                "history, move LAKE/<db>/<table>__history out of the lake first")

    def wants(self, db: str, table: str) -> bool:
        """Whether ``db.table`` keeps a history."""
        return self.pattern is not None and self.pattern.fullmatch(f"{db}.{table}") is not None

    def batches(self, files: Sequence[ChangelogFile], tables: Sequence[TableBatch], history: SchemaHistory,
                snapshot_filter: SnapshotFilter | None, *, ddl: bool, end: tuple[str, int]) -> list[HistoryBatch]:
        """The batch's ``HistoryBatch``es: ``files`` its staged change-log files, ``tables`` its
        tables' batches, ``history`` the schema history (read ahead of the batch, maybe), ``ddl``
        whether the batch has any, ``end`` where its last change is."""
        if self.pattern is None or not files:
            return []
        # the tables as the batch leaves them: after its last change (a DDL's entry is at its own offset)
        at_end = history.catalog_at(end[0], end[1] + 1) or history.latest()
        seed_us = min((c for f in files for c in f.commit_us), default=int(time.time() * 1_000_000))
        wanted = ddl or any(tb.primary_key and self.wants(tb.db, tb.table) for tb in tables)
        rows = _staged(self.store, files) if wanted else None
        out: dict[tuple[str, str], HistoryBatch] = {}
        for tb in tables:
            if tb.primary_key and self.wants(tb.db, tb.table) and rows is not None:
                changes = _changes(tb, rows, snapshot_filter)
                out[(tb.db, tb.table)] = HistoryBatch(tb.db, tb.table, tb.columns, tb.primary_key, changes, seed_us)
        ddl_rows = rows.filter(pc.equal(rows.column("op"), "ddl")) if rows is not None else None
        if ddl_rows is not None and ddl_rows.num_rows:
            at = (int(ddl_rows.column("commit_us")[-1].as_py()), int(ddl_rows.column("seq")[-1].as_py()))
            named: dict[tuple[str, str], tuple[str, int]] = {}  # each table the DDL names: where first
            for row in ddl_rows.select(["ddl", "file", "pos"]).to_pylist():
                for name in json.loads(row["ddl"]).get("tables", ()):
                    db, _, table = name.partition(".")
                    named.setdefault((db, table), (row["file"], row["pos"]))
            for (db, table), (file, pos) in sorted(named.items()):
                # a table the DDL dropped or renamed away is known by the catalog before it: its
                # current versions are closed, the mirror being gone
                hb = (out.get((db, table)) or self._whole(at_end, db, table, seed_us)
                      or self._whole(history.catalog_at(file, pos), db, table, seed_us))
                if hb is not None:
                    out[(db, table)] = HistoryBatch(hb.db, hb.table, hb.columns, hb.primary_key, hb.changes,
                                                    seed_us, at)
        for db, table in sorted(self.resync):  # read again by a snapshot: compared with the mirror it left
            hb = out.get((db, table)) or self._whole(at_end, db, table, seed_us)
            if hb is not None and hb.resync_at is None and self.store.is_delta(self.store.history(db, table)):
                out[(db, table)] = replace(hb, resync_at=(seed_us, None))
        if not self._listed:
            self._listed = True
            have = set(self.store.histories())
            for db, table in self.store.mirrors():
                if (db, table) not in out and (db, table) not in have:
                    hb = self._whole(at_end, db, table, seed_us)
                    if hb is not None:
                        out[(db, table)] = hb
        return list(out.values())

    def read_again(self, state: SnapshotState) -> None:
        """Take the tables ``state`` flags as read again under a history (module docstring)."""
        self.resync = state.history_resyncs() if self.pattern is not None else set()

    def resynced(self) -> None:
        """A batch that compared them is committed: clear the flags in ``snapshot.json``."""
        if not self.resync:
            return
        state = SnapshotState.find(self.store)
        if state is not None:
            for db, table in self.resync:
                state.tables.get(f"{db}.{table}", {}).pop(RESYNC_HISTORY, None)
            state.save(self.store)
        self.resync = set()

    def _whole(self, catalog: Catalog | None, db: str, table: str, seed_us: int) -> HistoryBatch | None:
        """A ``HistoryBatch`` without changes for a table the history takes and ``catalog`` knows with a key."""
        if not self.wants(db, table):
            return None
        schema = catalog.get(db, table) if catalog is not None else None
        if schema is None or not schema.primary_key:
            return None
        if self.rules is not None:
            schema = self.rules.mask_schema(schema)
        columns = mirror_columns_for_schema(schema, catalog.flavor if catalog is not None else None)
        return HistoryBatch(db, table, columns, tuple(schema.primary_key), (), seed_us)


def _staged(store: Lake, files: Sequence[ChangelogFile]) -> pa.Table:
    """The batch's staged change-log rows in ``seq`` order, each with its commit time (``commit_us``)."""
    parts = []
    for f in files:
        rows = pq.read_table(store.read_file(f"{store.changes}/{f.path}"))
        commits = np.repeat(np.asarray(f.commit_us, dtype=np.int64), np.asarray(f.commit_rows, dtype=np.int64))
        if len(commits) != rows.num_rows:
            raise ConfigError(f"the staged change-log file {f.path} holds {rows.num_rows} rows but its descriptor "
                              f"gives commit times for {len(commits)}: was it staged by another version of sluice?")
        parts.append(rows.append_column("commit_us", pa.array(commits)))
    rows = pa.concat_tables(parts)
    return rows.take(pc.sort_indices(rows.column("seq")))


def _changes(tb: TableBatch, rows: pa.Table, snapshot_filter: SnapshotFilter | None) -> list[Change]:
    """The table's row changes of the batch, in ``seq`` order, in the mirror's values."""
    mine = rows.filter(pc.and_(pc.equal(rows.column("db"), tb.db), pc.equal(rows.column("table"), tb.table)))
    mine = mine.filter(pc.not_equal(mine.column("op"), "ddl"))
    if not mine.num_rows:
        return []
    changes = to_row_changes(tb.columns, mine)
    stamps = {(c.file, c.pos, c.row): (us, seq) for c, us, seq in
              zip(changes, mine.column("commit_us").to_pylist(), mine.column("seq").to_pylist(), strict=True)}
    if snapshot_filter:
        changes = snapshot_filter.keep(changes)
    out = []
    for c in changes:
        v = converted(tb.columns, c, *stamps[(c.file, c.pos, c.row)])
        if v is not None:
            out.append(v)
    return out
