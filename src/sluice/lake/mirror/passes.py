"""A MERGE in passes: a source too large to hold at once MERGEd into its mirror in bounded memory,
still one Delta commit.

delta-rs MERGEs through a hash join whose build side is the whole source, which it does not spill:
a batch of millions of keys holds them all on the driver (bench/README.md has the figures). A mirror row
whose key the source touches is replaced (an upsert brings the whole row) or dropped (a delete), so
the same MERGE is done here file by file without a join:

1. ``KeyIndex`` reads the source's pieces' key columns (``sluice.lake.mirror.pieces``): the keys
   touched, which end deleted, which piece wins a key several carry.
2. Each mirror file whose key bounds (its ``add`` action's statistics) hold a touched key has its key
   column read, a row group at a time: which touched keys the mirror holds.
3. Side by side: each file with a touched key is rewritten without those rows, read page by page
   in batches (delta-rs writes row groups of a million rows, which a dataset scan decodes whole),
   into new files of about ``file_rows`` rows, and removed (a row group whose rows are all touched
   is not read, unless the change data feed needs them); each piece is read again and its winning
   upserts written as new files. Two threads take the work in four shares (each half of the pieces,
   each half of the files by size), each share's files its own.
4. One commit (``sluice.lake.mirror.own_commit``) removes the old files and adds the new ones, with
   the batch's app transaction. With Delta's change data feed on, it also adds the change data:
   the rows dropped (``update_preimage`` or ``delete``) and written (``update_postimage`` or
   ``insert``), as a MERGE by delta-rs gives.

The driver then holds the key index, a batch of a mirror file, a piece, and the open row group of
each data file being written, whatever the size of the source. Files are written before the commit: a kill
leaves only files no commit names (``VACUUM`` removes them), and a replay of the batch finds the
mirror as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable

from sluice.lake.data_files import DataFileWriter
from sluice.lake.mirror.merge_source import DELETE_FLAG
from sluice.lake.mirror.own_commit import commit_rewrite
from sluice.lake.mirror.pending import conform
from sluice.lake.mirror.pieces import KeyIndex, Piece, table_dataset
from sluice.lake.storage import LakeStore

__all__ = ["merge_in_passes"]

_CHANGE_TYPE = "_change_type"  # Delta's change data column
_CHANGE_DATA = "_change_data"  # and the folder of its files
_BATCH_ROWS = 65_536  # rows of a mirror file read at once


class _Files:
    """Rows written into data files of about ``rows`` rows each, a table at a time as they come."""

    def __init__(self, folder: str, store: LakeStore, rows: int, prefix: str = "") -> None:
        self.folder, self.store, self.rows, self.prefix = folder, store, rows, prefix
        self.file: DataFileWriter | None = None
        self.count = 0
        self.rows_written = 0
        self.written: list[dict[str, Any]] = []

    def add(self, rows: pa.Table) -> None:
        if not rows.num_rows:
            return
        if self.file is None:
            self.file = DataFileWriter(self.folder, rows.schema, self.store)
        self.file.write(rows)
        self.count += rows.num_rows
        self.rows_written += rows.num_rows
        if self.count >= self.rows:
            self.flush()

    def flush(self) -> None:
        if self.file is None:
            return
        written = self.file.close()
        self.file, self.count = None, 0
        self.written.append({**written, "path": self.prefix + written["path"]})


def merge_in_passes(dt: DeltaTable, path: str, store: LakeStore, pieces: Sequence[Piece], key: str, *,
                    app_id: str, batch_id: int | None, file_rows: int, change_feed: bool) -> dict[str, int]:
    """MERGE ``pieces`` (a MERGE source of full rows and deletes, in order; the single integer
    ``key``) into the mirror ``dt`` at ``path`` as described in the module; delta-rs' MERGE metrics.
    Once the touched keys the mirror holds are known, the rewrite of its files and the writing of
    the upserts run side by side (Parquet's decoding and encoding leave the GIL)."""
    index = KeyIndex(pieces, key)
    dataset = table_dataset(dt, path, store)
    schema = dataset.schema
    fragments = {f.path: f for f in dataset.get_fragments()}
    hit = np.zeros(len(index.keys), dtype=bool)
    removed = [file for file in _candidates(dt, key, index) if _holds_touched(fragments[file["path"]], key, index, hit)]

    def outputs() -> tuple[_Files, _Files | None]:
        feed = _Files(f"{path}/{_CHANGE_DATA}", store, file_rows, f"{_CHANGE_DATA}/") if change_feed else None
        return _Files(path, store, file_rows), feed

    def rewrite(files: Sequence[dict[str, Any]]) -> tuple[_Files, _Files | None]:
        data, feed = outputs()
        for file in files:
            _rewrite(fragments[file["path"]], key, index, schema, data, feed)
        return data, feed

    def upsert(share: Sequence[Piece]) -> tuple[_Files, _Files | None]:
        data, feed = outputs()
        for piece in share:
            rows = piece.read()
            keep = index.wins(piece, rows) & ~rows.column(DELETE_FLAG).to_numpy(zero_copy_only=False)
            if not keep.any():
                continue
            rows = conform(rows.filter(pa.array(keep)), schema)
            data.add(rows)
            if feed is not None:
                place, _ = index.touched(rows.column(key).to_numpy())
                feed.add(rows.append_column(_CHANGE_TYPE, _change_types(hit[place], "update_postimage", "insert")))
        return data, feed

    # Two threads take four shares of the work, each share's files its own: the upserts of each half
    # of the pieces (the larger shares, first), then the rewrite of each half of the files by size.
    half = (len(pieces) + 1) // 2
    sizes = np.cumsum([file["size"] for file in removed])
    cut = int(np.searchsorted(sizes, sizes[-1] / 2)) + 1 if len(removed) > 1 else len(removed)
    with ThreadPoolExecutor(max_workers=2) as pool:
        ups = [pool.submit(upsert, share) for share in (pieces[:half], pieces[half:]) if share]
        rewrites = [pool.submit(rewrite, files) for files in (removed[:cut], removed[cut:]) if files]
        upserted = [f.result() for f in ups]
        done = upserted + [f.result() for f in rewrites]
    added: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    for data, feed in done:
        data.flush()
        added += data.written
        if feed is not None:
            feed.flush()
            changes += feed.written
    upserts = sum(data.rows_written for data, _ in upserted)
    updated = int((hit & ~index.deleted).sum())
    metrics = {"num_target_rows_inserted": upserts - updated, "num_target_rows_updated": updated,
               "num_target_rows_deleted": int((hit & index.deleted).sum()),
               "num_target_files_removed": len(removed), "num_target_files_added": len(added)}
    commit_rewrite(store, path, dt.version() + 1, removed=removed, added=added, changes=changes, app_id=app_id,
                   batch_id=batch_id, metrics=metrics)
    return metrics


def _holds_touched(fragment: Any, key: str, index: KeyIndex, hit: np.ndarray) -> bool:
    """Whether a mirror file holds a touched key; those it holds are marked in ``hit``."""
    with fragment.filesystem.open_input_file(fragment.path) as handle:
        parquet = pq.ParquetFile(handle, pre_buffer=False)
        return any([_touched(parquet, g, key, index, hit)[1].any() for g in range(parquet.metadata.num_row_groups)])


def _rewrite(fragment: Any, key: str, index: KeyIndex, schema: pa.Schema, data: _Files, feed: _Files | None) -> None:
    """A mirror file's rows but those of touched keys into ``data``, those into ``feed`` as the
    change data of the rows the MERGE drops; read page by page (a row group may be a million rows)."""
    with fragment.filesystem.open_input_file(fragment.path) as handle:
        parquet = pq.ParquetFile(handle, pre_buffer=False)
        for g in range(parquet.metadata.num_row_groups):  # a row group's keys at a time: 17 bytes a row
            place, found = index.touched(parquet.read_row_group(g, columns=[key]).column(key).to_numpy())
            if feed is None and found.all():
                continue  # every row replaced or deleted: nothing of the group is kept, nothing to read
            at = 0
            for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, row_groups=[g]):
                rows = conform(pa.Table.from_batches([batch]), schema)
                gone = found[at:at + rows.num_rows]
                where = place[at:at + rows.num_rows]
                at += rows.num_rows
                data.add(rows.filter(pa.array(~gone)))
                if feed is not None and gone.any():
                    kinds = _change_types(index.deleted[where[gone]], "delete", "update_preimage")
                    feed.add(rows.filter(pa.array(gone)).append_column(_CHANGE_TYPE, kinds))


def _change_types(mask: np.ndarray, when: str, otherwise: str) -> pa.Array:
    """The change data's ``_change_type`` column: ``when`` where ``mask`` is true, else ``otherwise``
    (taken from a two-value array: a NumPy array of texts would be converted value by value)."""
    return pa.array([otherwise, when]).take(pa.array(mask.astype(np.int8)))


def _touched(parquet: pq.ParquetFile, group: int, key: str, index: KeyIndex,
             hit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The places in ``index`` of a row group's keys and which are touched, marked in ``hit``."""
    place, found = index.touched(parquet.read_row_group(group, columns=[key]).column(key).to_numpy())
    hit[place[found]] = True
    return place, found


def _candidates(dt: DeltaTable, key: str, index: KeyIndex) -> list[dict[str, Any]]:
    """The mirror's files whose key bounds hold a touched key (all files whose bounds are unknown)."""
    actions = pa.table(dt.get_add_actions(flatten=True))
    paths = actions.column("path").to_pylist()
    sizes = actions.column("size_bytes").to_pylist()
    names = actions.column_names
    lows = actions.column(f"min.{key}").to_pylist() if f"min.{key}" in names else [None] * len(paths)
    highs = actions.column(f"max.{key}").to_pylist() if f"max.{key}" in names else [None] * len(paths)
    return [{"path": p, "size": s} for p, s, low, high in zip(paths, sizes, lows, highs, strict=True)
            if low is None or high is None or index.any_between(int(low), int(high))]
