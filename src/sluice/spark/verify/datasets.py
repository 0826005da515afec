"""What ``sluice verify`` reads of the lake for one table: the mirror as of the change log's last
commit (its pending changes laid over it), and a history's current versions (``__end_at`` NULL,
without the history's own columns), each as a pyarrow dataset the comparison reads in batches.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow.compute as pc
import pyarrow.fs as pafs
from deltalake import DeltaTable

from sluice.errors import ConfigError
from sluice.lake.layout import Lake
from sluice.lake.mirror.pending import PendingChanges, with_pending
from sluice.lake.mirror.versions import END_AT, VERSION_COLUMNS

__all__ = ["current_versions", "lake_mirrors", "mirror_dataset"]


def lake_mirrors(store: Lake) -> list[tuple[str, str]]:
    """``(db, table)`` of every mirror of the lake; ``ConfigError`` when the lake folder does not exist."""
    if not store.remote and not os.path.isdir(store.uri):
        raise ConfigError(
            f"the lake {store.uri!r} is not a directory; give the folder sluice run writes to (its --lake)"
        )
    return store.mirrors()


def mirror_dataset(store: Lake, path: str, db: str, table: str) -> Any:
    """The mirror of ``db.table`` at ``path`` as of the change log's last commit."""
    import pyarrow.dataset as pads

    pending = PendingChanges(store, db, table).read()
    if pending is not None:  # the mirror as of the change log: its pending changes laid over it
        mirror = DeltaTable(path, storage_options=store.delta_options()).to_pyarrow_table()
        return pads.dataset(with_pending(mirror, pending))
    if store.remote:  # the mirror's rows read by delta-rs itself, into memory
        return pads.dataset(DeltaTable(path, storage_options=store.delta_options()).to_pyarrow_table())
    # Read through a local pyarrow filesystem: delta-rs' own object store read from pyarrow's threads
    # can abort the interpreter at exit.
    fs = pafs.SubTreeFileSystem(os.path.abspath(path), pafs.LocalFileSystem())
    return DeltaTable(path).to_pyarrow_dataset(filesystem=fs)


def current_versions(store: Lake, db: str, table: str, source_columns: Sequence[str] | None) -> Any:
    """The current versions of ``db.table``'s history, with the source's columns only
    (``source_columns``, matched without case; None: every column but the history's own): a column
    the source dropped is NULL there and not the table's any more."""
    import pyarrow.dataset as pads

    rows = DeltaTable(store.history(db, table), storage_options=store.delta_options()).to_pyarrow_table()
    rows = rows.filter(pc.is_null(rows.column(END_AT)))
    own = {f.name for f in VERSION_COLUMNS}
    wanted = None if source_columns is None else {c.lower() for c in source_columns}
    keep = [n for n in rows.column_names if n not in own and (wanted is None or n.lower() in wanted)]
    return pads.dataset(rows.select(keep))
