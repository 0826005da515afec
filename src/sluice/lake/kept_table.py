"""A Delta table the driver commits to every batch, read once and then kept up to date.

A batch asks each table it writes (the change log, a mirror, a pending table) for its state and
for the pipeline's app transaction, every batch.
``DeltaTable(path)`` replays the table's log since its last checkpoint (up to a checkpoint interval
of commits, one GET each on an object store), and so does each ``transaction_version`` call, even
on a table already loaded. ``KeptTable`` reads the table once and afterwards only the commits since
(``update_incremental``: a GET of ``_last_checkpoint`` and a LIST of the log, then a GET per new
commit); it remembers an app transaction's version together with the table version it was true
at, and after a commit of its own that it knows to be the only one since (the table went exactly
one version up) it records the commit's app transaction without reading the log again. Any other
commit in between (a maintenance step, another writer) moves the version past what it recorded,
and the next question reads the log, so the answer is always the one a fresh read gives.

A sole writer (``KeptTables(sole=True)``: the running pipeline, which holds the lake's lease,
``sluice.lake.lease``) reads a table's log only once: after that the table moves only by its own
commits, and each of them moves the kept object too. A MERGE or ``write_deltalake`` through the
object leaves it at the version it committed; a commit that does not (``create_write_transaction``,
the change log's) is followed by ``advanced``, which loads that one version in the background
(``load_as_version``: a LIST and the commit's GET, off the batch's path; the next use waits for
it). Whatever else the pipeline commits through another handle (a maintenance step) is followed by
``stale``, and the next use reads the new commits. A commit made from an object that missed
another's commit lands on a version that exists and fails (every batch commit has
``max_commit_retries=0``), and the change log's fence looks for such a commit before each batch
(``sluice.lake.sink``): what is kept never makes a change land twice.

Reading only the commits since is right while the table's log goes on; a table removed and made
again at the same path (a DDL's archive or move, a snapshot read again) starts a new log at version
0, which ``update_incremental`` does not see. Whoever replaces a table drops what is kept
(``KeptTables.forget``).
"""

from __future__ import annotations

import threading

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

__all__ = ["KeptTable", "KeptTables"]


class KeptTable:
    """One Delta table at ``path``, read once (``current``) and kept up to date; ``sole``: only
    this writer's commits move it (module docstring)."""

    def __init__(self, path: str, storage_options: dict[str, str] | None, *, sole: bool = False) -> None:
        self.path = path
        self.options = storage_options
        self.sole = sole
        self._dt: DeltaTable | None = None
        self._stale = False  # sole: committed to through another handle since the last read
        self._loading: threading.Thread | None = None  # sole: the version a commit of ours made, loading
        self._txn: dict[str, tuple[int, int | None]] = {}  # app id -> (table version, its app transaction)

    @property
    def last_read(self) -> DeltaTable | None:
        """The table as of the last ``current()`` (or a commit of ours since), with no read of the
        store (None: none then)."""
        self._settle()
        return self._dt

    def current(self) -> DeltaTable | None:
        """The table as of its newest version; None while there is none."""
        self._settle()
        if self._dt is None:
            try:
                self._dt = DeltaTable(self.path, storage_options=self.options)
            except TableNotFoundError:
                return None
        elif not self.sole or self._stale:
            self._dt.update_incremental()
        self._stale = False
        return self._dt

    def stale(self) -> None:
        """Something other than this object committed to the table: read its new commits at the next use."""
        self._settle()
        self._stale = True

    def advanced(self, version: int) -> None:
        """A commit of ours made ``version`` without moving the object: a sole writer loads it in the
        background (the next use waits for it); else the next ``current()`` reads it."""
        self._settle()
        dt = self._dt
        if not self.sole or dt is None or dt.version() >= version:
            return

        def load() -> None:
            try:
                dt.load_as_version(version)
            except Exception:  # the store did not answer: the next use reads the log instead
                self._stale = True

        self._loading = threading.Thread(target=load, name="sluice-kept-table", daemon=True)
        self._loading.start()

    def _settle(self) -> None:
        loading, self._loading = self._loading, None
        if loading is not None:
            loading.join()

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
        self.advanced(before + 1)
        dt = self._dt
        if dt is not None and self.sole and not self._stale:
            self._txn[app_id] = (before + 1, txn_version)  # the object is (or is being) moved to before + 1
            return
        if dt is not None and dt.version() != before + 1:  # a commit through another handle: look
            dt = self.current()
        if dt is not None and dt.version() == before + 1:
            self._txn[app_id] = (before + 1, txn_version)


class KeptTables:
    """The ``KeptTable`` of each path asked for, until ``forget``; ``sole``: the tables of a lake this
    writer alone commits to (``KeptTable``)."""

    def __init__(self, storage_options: dict[str, str] | None, *, sole: bool = False) -> None:
        self.options = storage_options
        self.sole = sole
        self._kept: dict[str, KeptTable] = {}

    def get(self, path: str) -> KeptTable:
        """The kept table at ``path`` (made on first use; it reads nothing until asked)."""
        kept = self._kept.get(path)
        if kept is None:
            kept = self._kept[path] = KeptTable(path, self.options, sole=self.sole)
        return kept

    def stale(self, path: str) -> None:
        """The table at ``path`` was committed to through another handle (``KeptTable.stale``)."""
        kept = self._kept.get(path)
        if kept is not None:
            kept.stale()

    def forget(self) -> None:
        """Drop every kept table: one may have been removed and made again at its path."""
        for kept in self._kept.values():
            kept.stale()  # waits for a version loading in the background
        self._kept.clear()
