"""A Delta table the driver commits to every batch, read once and then kept up to date.

A batch asks each table it writes (the change log, a mirror, a pending table) for its state and
for the pipeline's app transaction, every batch.
``DeltaTable(path)`` replays the table's log since its last checkpoint (up to a checkpoint interval
of commits, one GET each on an object store), and so does each ``transaction_version`` call, even
on a table already loaded. ``KeptTable`` reads the table once and afterwards only the commits since
(``update_incremental``); it remembers an app transaction's version together with the table version
it was true at, and after a commit of its own that it knows to be the only one since (the table
went exactly one version up) it records the commit's app transaction without reading the log again.
Any other commit in between (a maintenance step, another writer) moves the version past what it
recorded, and the next question reads the log, so the answer is always the one a fresh read gives.

Reading only the commits since is right while the table's log goes on; a table removed and made
again at the same path (a DDL's archive or move, a snapshot read again) starts a new log at version
0, which ``update_incremental`` does not see. Whoever replaces a table drops what is kept
(``KeptTables.forget``).
"""

from __future__ import annotations

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

__all__ = ["KeptTable", "KeptTables"]


class KeptTable:
    """One Delta table at ``path``, read once (``current``) and kept up to date."""

    def __init__(self, path: str, storage_options: dict[str, str] | None) -> None:
        self.path = path
        self.options = storage_options
        self._dt: DeltaTable | None = None
        self._txn: dict[str, tuple[int, int | None]] = {}  # app id -> (table version, its app transaction)

    @property
    def last_read(self) -> DeltaTable | None:
        """The table as of the last ``current()``, with no read of the store (None: none then)."""
        return self._dt

    def current(self) -> DeltaTable | None:
        """The table as of its newest version; None while there is none."""
        if self._dt is None:
            try:
                self._dt = DeltaTable(self.path, storage_options=self.options)
            except TableNotFoundError:
                return None
        else:
            self._dt.update_incremental()
        return self._dt

    def transaction_version(self, app_id: str) -> int | None:
        """The newest version of ``app_id``'s app transaction in the table (None: none, or no table)."""
        dt = self.current()
        if dt is None:
            return None
        version = dt.version()
        known = self._txn.get(app_id)
        if known is not None and known[0] == version:
            return known[1]
        found = dt.transaction_version(app_id)
        self._txn[app_id] = (version, found)
        return found

    def committed(self, before: int, app_id: str, txn_version: int) -> None:
        """A commit of ours carrying ``app_id``'s ``txn_version`` went to the table as of version
        ``before``: remember it when it is the only commit since."""
        dt = self._dt
        if dt is not None and dt.version() != before + 1:  # a commit through another handle: look
            dt = self.current()
        if dt is not None and dt.version() == before + 1:
            self._txn[app_id] = (before + 1, txn_version)


class KeptTables:
    """The ``KeptTable`` of each path asked for, until ``forget``."""

    def __init__(self, storage_options: dict[str, str] | None) -> None:
        self.options = storage_options
        self._kept: dict[str, KeptTable] = {}

    def get(self, path: str) -> KeptTable:
        """The kept table at ``path`` (made on first use; it reads nothing until asked)."""
        kept = self._kept.get(path)
        if kept is None:
            kept = self._kept[path] = KeptTable(path, self.options)
        return kept

    def forget(self) -> None:
        """Drop every kept table: one may have been removed and made again at its path."""
        self._kept.clear()
