"""The change log's ``seq``: one int64 per change-log row, total, never null, and growing in the
order the rows were committed to the change log, whatever the binlog file names do.

``(file, pos, row)`` orders the changes of one server's binlog only: the numbering of files starts
again after a ``RESET``, and after a failover the names belong to another server. ``seq`` does not
come from a position. It comes from the change log itself: each commit that adds rows records the
highest ``seq`` the change log holds after it (``SEQ_KEY`` in its commit metadata, beside
``sluice.position``), and the next rows take the numbers after it. A restart, a new Spark
checkpoint or a new server read the same number from the lake, so nothing restarts at 0.

The executors number a batch's rows without asking anyone: the driver hands the batch's first
number to the batch's tasks as the job's local property ``sluice.seq`` (``SEQ_PROPERTY``), and the
task of the batch's range ``i`` (ranges are planned in binlog order) numbers its rows from
``first + i * RANGE_STRIDE``, one by one in binlog order (``range_first``). A range holds fewer than
``RANGE_STRIDE`` (2^32) changes, so the ranges of a batch never overlap and a later range's numbers
are larger; the numbers between two ranges are left unused. The batch's commit records the largest
number its files hold (their Delta statistics), and the next batch starts after it. A batch
replayed after a crash before its change-log commit is numbered again from the same start.

Everything else that appends to the change log (a key-less table's snapshot ``read`` rows, the
rows a writer builds in process) takes the numbers after the recorded one at the moment it commits
(``ChangeSequence.next``). A table read again while a DDL batch is committed is the one case whose
rows commit before the batch's own: they are numbered after the batch's staged rows
(``ChangeSequence.claim``), which is also their place in the stream, since the table was read after
the DDL.

A change log written before ``seq`` existed gains the column (null in its older rows) at its first
commit by this version; the numbers then start at 0. ``committed_seq`` reads the recorded number
from the newest commits, and from the files' statistics when none of them has one (a change log
with very many commits since, or rows written by hand).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import pyarrow as pa

from sluice.errors import ConfigError, UnsupportedError

if TYPE_CHECKING:  # the tasks import this module without the Delta writer
    from deltalake import DeltaTable

__all__ = [
    "RANGE_STRIDE", "SEQ_KEY", "SEQ_PROPERTY", "ChangeSequence", "committed_seq", "files_high", "numbered",
    "range_first",
]

#: The change log's commit metadata key holding the highest ``seq`` it holds after the commit.
SEQ_KEY: Final = "sluice.seq"
#: The job's local property with the batch's first ``seq`` (decimal), set by the pipeline's driver
#: and read by its tasks (``sluice.spark.source.staging.task_seq``).
SEQ_PROPERTY: Final = "sluice.seq"
#: The numbers each range of a batch may use: more changes than this in one range is refused.
RANGE_STRIDE: Final = 1 << 32


def range_first(batch_first: int, index: int, rows: int) -> int:
    """The ``seq`` of the first of ``rows`` changes of a batch's range ``index`` (module docstring);
    ``UnsupportedError`` when the range holds ``RANGE_STRIDE`` changes or more."""
    if rows >= RANGE_STRIDE:
        raise UnsupportedError(
            f"a range of {rows:,} changes: the change log numbers at most {RANGE_STRIDE - 1:,} changes per "
            "range of a batch, and one transaction is never split; lower maxRowsPerBatch / maxBytesPerBatch, "
            "or split the transaction on the source"
        )
    return batch_first + index * RANGE_STRIDE


def numbered(log: pa.Table, first: int) -> pa.Table:
    """``log`` (the change log's rows, in the order they are committed) with ``seq`` from ``first`` on."""
    seq = pa.array(range(first, first + log.num_rows), type=pa.int64())
    index = log.schema.get_field_index("seq")
    return log.append_column("seq", seq) if index < 0 else log.set_column(index, "seq", seq)


def files_high(stats: Sequence[str]) -> int | None:
    """The largest ``seq`` of change-log files, from their Delta statistics (JSON), None if none says."""
    highs = [m for s in stats if (m := json.loads(s).get("maxValues", {}).get("seq")) is not None]
    return max(highs) if highs else None


def committed_seq(log: DeltaTable | None, *, look_back: int = 1000) -> int | None:
    """The highest ``seq`` the change log ``log`` holds: ``SEQ_KEY`` of its newest commit that has
    one, else the largest in its files' statistics; None when it holds none (no ``seq`` yet)."""
    if log is None:
        return None
    for limit in (16, look_back):  # nearly always in the newest few: read more only when not
        commits = log.history(limit)
        for commit in commits:
            text = commit.get(SEQ_KEY)
            if text is not None:
                if not str(text).isdigit():
                    raise ConfigError(f"the change log's commit {commit.get('version')} records a {SEQ_KEY} "
                                      f"sluice cannot read: {text!r}")
                return int(text)
        if len(commits) < limit:
            break
    actions = log.get_add_actions(flatten=True)
    if "max.seq" not in actions.column_names:
        return None
    highs = [h for h in actions.column("max.seq").to_pylist() if h is not None]
    return max(highs) if highs else None


class ChangeSequence:
    """Where a writer's next change-log rows are numbered from: the change log's recorded ``seq``,
    read again only when the change log moved past the version this writer last saw, and the
    numbers ``claim``ed for rows staged but not committed yet."""

    def __init__(self) -> None:
        self._seen: tuple[int, int | None] | None = None  # (change-log version, its highest seq)
        self._claimed: int | None = None

    def high(self, log: DeltaTable | None) -> int | None:
        """The highest ``seq`` taken: in ``log`` (the change log, None: none yet) or claimed."""
        recorded = None
        if log is not None:
            version = log.version()
            if self._seen is None or self._seen[0] != version:
                self._seen = (version, committed_seq(log))
            recorded = self._seen[1]
        return max((h for h in (recorded, self._claimed) if h is not None), default=None)

    def next(self, log: DeltaTable | None) -> int:
        """The first ``seq`` free after everything ``log`` holds or was claimed."""
        high = self.high(log)
        return 0 if high is None else high + 1

    def claim(self, high: int | None) -> None:
        """Numbers up to ``high`` belong to rows staged and not committed yet: ``next`` skips them."""
        if high is not None and (self._claimed is None or high > self._claimed):
            self._claimed = high

    def batch_high(self, log: DeltaTable | None, stats: Sequence[str], rows: pa.Table | None) -> int | None:
        """The highest ``seq`` once a batch commits to ``log`` its files (their Delta statistics) or
        its ``rows`` (numbered already): what its commit records."""
        appended = rows.column("seq")[-1].as_py() if rows is not None and rows.num_rows else None
        return max((h for h in (self.high(log), files_high(stats), appended) if h is not None), default=None)

    def committed(self, before: int, high: int | None) -> None:
        """A commit of this writer went to the change log at version ``before`` (-1: none), recording
        ``high``: while the change log is one version further, nothing needs reading."""
        self._seen = (before + 1, high)
        self.claim(high)

    def metadata(self, high: int | None) -> dict[str, str]:
        """The commit metadata recording ``high`` (nothing while the change log has no ``seq``)."""
        return {} if high is None else {SEQ_KEY: str(high)}
