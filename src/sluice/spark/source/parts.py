"""A task's range written to the lake in parts of bounded size, each part as its own files.

``PartWriter`` is what a pipeline task (``sluice.spark.source.staging``) writes with. A part is a
run of consecutive changes of the range, in binlog order, of about ``part_bytes``: a run of whole
transactions, or a piece of one transaction larger than that. Each part becomes

- a change-log Parquet file in the change log's folder, not committed (``ChangelogFile``), and
- per table with a primary key, its MERGE source (``sluice.lake.mirror.merge_source``) as an Arrow
  IPC file under the batch's staging folder (``TableSource``), or a descriptor without a path for
  the per-row path; a DDL statement among them is a ``DdlMet``.

Every file is written whole, in one PUT on an object store, the files of a range side by side
(``Uploads``: the range's descriptors are handed on only once all are in the lake). The change-log
files are written on the writer's own threads while the task decodes on (``PartWriter._changelog``).
A part of an open transaction is handed out by the capture before the transaction commits
(``CaptureConfig.hold_columns`` calls ``hold``): its MERGE sources are staged at once, but its
change-log rows carry the transaction's commit time, known only at its commit, so they wait in an
anonymous temporary file of the task's machine (``TMPDIR``; nothing of it outlives the process) and
are written by ``committed`` once the transaction commits. A transaction rolled back, or cut off,
leaves its staged sources as strays of the staging folder, which goes after every batch; no
descriptor names them.

The staged sources are named by the range's start and the part's number, so a retried task writes
the same names over again with the same content; change-log files have names of their own
(``lake.data_files``), and an attempt's that no commit named are what ``VACUUM`` removes.

The writer's threads also build a held part's MERGE sources and its temporary file (``hold``), so
that the task goes on decoding the transaction meanwhile. They take their work in order, two at a
time (a large transaction's held change-log files are all written at its commit, side by side), and
at most ``_QUEUED`` pieces of work wait for them or are under way, which bounds what the task holds.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import IO, Any, Final, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sluice.binlog.position import Checkpoint
from sluice.cdc.schema import Catalog
from sluice.errors import ConfigError
from sluice.lake.changelog.rows import changelog_from_rows
from sluice.lake.changelog.sequence import range_first
from sluice.lake.data_files import write_data_file
from sluice.lake.layout import Lake
from sluice.lake.mirror.merge_source import merge_source, no_changes, typed_merge_source
from sluice.lake.mirror.versioned import mirror_rows
from sluice.lake.types.table_layout import mirror_columns_for_schema
from sluice.lake.types.typed_images import typed_rows
from sluice.spark.source.change_frame import columns_batch
from sluice.spark.source.descriptors import ChangelogFile, DdlMet, Descriptor, TableSource

__all__ = ["HeldPart", "PartWriter", "Uploads", "layout_key"]

T = TypeVar("T")

# A held part's change-log rows in their temporary file: LZ4 frames, which the JSON images compress
# well in, and which are written and read back faster than the plain bytes.
_SPILL: Final = pa.ipc.IpcWriteOptions(compression="lz4" if pa.Codec.is_available("lz4_frame") else None)

# The writer's threads, and how many pieces of its work (each a part's rows) wait or are under way.
_WRITERS: Final = 2
_QUEUED: Final = 3

# Delta data skipping reads these bounds: exact ones for the short columns, none for the images.
_BOUNDED: Final = ("op", "db", "table", "file", "gtid", "pos", "row", "batch_id", "seq")


def layout_key(columns: Iterable[Any], primary_key: Iterable[str]) -> str:
    """What a MERGE source was built for: the mirror's column names and types, and the key."""
    return json.dumps([[[c.name, str(c.arrow_type)] for c in columns], list(primary_key)])


@dataclass(frozen=True, slots=True)
class HeldPart:
    """A part of an open transaction, ``rows`` change-log rows: once a writer's thread has done
    with it (``staged``), its staged sources' descriptors and its change-log rows, waiting for the
    commit time in a temporary file (an Arrow IPC stream, its buffers LZ4 frames)."""

    staged: Future[tuple[tuple[Descriptor, ...], IO[bytes]]]
    rows: int


def _spill(batch: pa.RecordBatch) -> IO[bytes]:
    """A held part's change-log rows written to an anonymous temporary file (the ``HeldPart`` owns it)."""
    try:
        spill = tempfile.TemporaryFile(prefix="sluice-part-")  # noqa: SIM115 - the HeldPart owns it
        with pa.ipc.new_stream(pa.PythonFile(spill, mode="w"), batch.schema, options=_SPILL) as writer:
            writer.write_batch(batch)
    except OSError as e:
        raise ConfigError(
            f"cannot write the temporary file in {tempfile.gettempdir()} that holds part of a large "
            f"transaction's change-log rows until its commit: {e}. Give the executors' TMPDIR room"
        ) from e
    return spill


def _read_held(spill: IO[bytes], commit_us: int) -> pa.Table:
    """A held part's change-log rows read back from its temporary file, with their commit time."""
    spill.seek(0)
    rows = pa.ipc.open_stream(spill.read()).read_all()
    spill.close()
    at = rows.schema.get_field_index("commit_ts")
    commit = pa.array(np.full(rows.num_rows, commit_us, dtype=np.int64)).cast(rows.schema.field(at).type)
    return rows.set_column(at, rows.schema.field(at), commit)


class Uploads:
    """A task's files PUT whole to an object store on threads of their own, a part's change-log file
    and its tables' sources side by side rather than one after another; at most ``limit`` wait at a
    time (their bytes are held until sent). ``done`` waits for all and raises the first failure. On a
    local path a file is written at once."""

    def __init__(self, store: Lake, limit: int = 8) -> None:
        self.store = store
        self.limit = limit
        self._pool: ThreadPoolExecutor | None = None
        self._sending: list[Future[None]] = []
        self._lock = threading.Lock()  # the task's thread and its change-log writer both hand files over

    @property
    def remote(self) -> bool:
        """Whether the lake is on an object store (``LakeStore.remote``)."""
        return self.store.remote

    def write_file(self, uri: str, data: bytes) -> None:
        """PUT ``data`` as ``uri`` (``LakeStore.write_file``), on a thread when remote."""
        if not self.store.remote:
            self.store.write_file(uri, data)
            return
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="sluice-put")
            while len(self._sending) >= self.limit:
                self._sending.pop(0).result()
            self._sending.append(self._pool.submit(self.store.write_file, uri, data))

    def done(self) -> None:
        """Every file handed over is in the lake (the first failure raised)."""
        with self._lock:
            sending, self._sending = self._sending, []
        for f in sending:
            f.result()


class PartWriter:
    """Writes one task's parts (module docstring); ``catalog()`` types the tables. On an object store
    the files go out side by side (``Uploads``): ``done()`` before their descriptors are handed on."""

    def __init__(self, store: Lake, batch_id: int, start: Checkpoint, catalog: Any, *, seq_first: int = 0,
                 range_index: int = 0, columns: Any = None) -> None:
        self.store = store
        self.columns = columns  # the capture's ColumnRules: the mirrors' columns follow them (rows are masked)
        self.batch_id = batch_id
        self._seq = (seq_first, range_index, 0)  # the batch's first number, the range's place, rows numbered
        self.folder = store.staging(batch_id)
        self._name = f"{start.file}.{start.pos}"
        self._catalog = catalog
        self._parts = 0
        self.uploads = Uploads(store)
        self._thread: ThreadPoolExecutor | None = None  # the writer's threads: their work begun in order
        self._writing: deque[Future[Any]] = deque()

    def done(self) -> None:
        """Every file written so far is in the lake (``Uploads.done``), the first failure raised."""
        try:
            while self._writing:
                self._writing.popleft().result()
        finally:
            if self._thread is not None:
                self._thread.shutdown(wait=True)
                self._thread = None
        self.uploads.done()

    def abandon(self) -> None:
        """The range failed: no change-log file not yet begun is written (those written are strays),
        and the one being written is waited for, so that the task leaves no thread behind."""
        if self._thread is not None:
            self._thread.shutdown(wait=True, cancel_futures=True)
            self._thread = None
        self._writing.clear()

    def write(self, rows: pa.Table, typed: Sequence[dict[Any, Any]]) -> list[Descriptor | Future[ChangelogFile]]:
        """A part of committed changes (``change_frame.ARROW_SCHEMA``, commit times set) and the
        typed images the compiled core kept of them: its change-log file (being written,
        ``_changelog``), sources and DDL."""
        if not rows.num_rows:
            return []
        out: list[Descriptor | Future[ChangelogFile]] = [self._changelog(rows.num_rows, lambda: rows)]
        return out + self._sources(rows, typed, self._catalog(), self._next_part())

    def hold(self, rows: Any, gtid: str | None) -> HeldPart:
        """``CaptureConfig.hold_columns``: a part of an open transaction's rows (the core's
        ``ChangeRows``), its sources staged and its change-log rows spilled on the writer's threads,
        those rows kept until ``committed``. The part is typed by the catalog in force now."""
        typed = rows.typed
        batch = columns_batch(rows, gtid=gtid)  # the rows are one transaction's: no copy to give each its GTID
        catalog, part = self._catalog(), self._next_part()

        def stage() -> tuple[tuple[Descriptor, ...], IO[bytes]]:
            return tuple(self._sources(pa.Table.from_batches([batch]), [typed], catalog, part)), _spill(batch)

        return HeldPart(self._submit(stage), batch.num_rows)

    def committed(self, part: HeldPart, commit_us: int) -> list[Descriptor | Future[ChangelogFile]]:
        """A held part of a transaction that committed at ``commit_us``: its change-log file
        (being written, ``_changelog``), with its sources' descriptors."""
        descriptors, spill = part.staged.result()
        return [self._changelog(part.rows, lambda: _read_held(spill, commit_us)), *descriptors]

    def _changelog(self, count: int, rows: Callable[[], pa.Table]) -> Future[ChangelogFile]:
        """The change-log file of ``count`` rows (``rows()`` makes them), written on the writer's own
        threads while the task decodes on: Parquet's encoding and compression hold no lock Python's
        other threads need. ``done`` waits for it. Its content is settled here, whichever order the
        files are written in."""
        # The range's parts are written in binlog order, so its rows are numbered on from part to part.
        batch_first, index, done = self._seq
        first = range_first(batch_first, index, done + count) + done
        self._seq = (batch_first, index, done + count)
        return self._submit(lambda: self._changelog_file(rows(), first))

    def _submit(self, work: Callable[[], T]) -> Future[T]:
        """``work`` on the writer's threads, begun after the work handed to them before; first waits
        until fewer than ``_QUEUED`` pieces of work wait or are under way."""
        while len(self._writing) >= _QUEUED:
            self._writing.popleft().result()
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=_WRITERS, thread_name_prefix="sluice-changes")
        future = self._thread.submit(work)
        self._writing.append(future)
        return future

    def _changelog_file(self, rows: pa.Table, first: int) -> ChangelogFile:
        written = write_data_file(changelog_from_rows(rows, self.batch_id, first), self.store.changes,
                                  plain=("before", "after", "json_diffs", "ddl"), bounded=_BOUNDED, store=self.uploads)
        commits = rows.column("commit_ts").cast(pa.int64()).to_numpy()
        starts = np.concatenate([[0], np.flatnonzero(np.diff(commits)) + 1])
        counts = np.diff(np.concatenate([starts, [len(commits)]]))
        return ChangelogFile(
            written["path"], written["size"], written["mtime"], written["stats"], rows.num_rows,
            rows.column("file")[0].as_py(), rows.column("pos")[0].as_py(), rows.column("row")[0].as_py(),
            rows.column("file")[-1].as_py(), rows.column("pos")[-1].as_py(),
            tuple(commits[starts].tolist()), tuple(counts.tolist()))

    def _next_part(self) -> int:
        part = self._parts
        self._parts += 1
        return part

    def _sources(self, rows: pa.Table, typed: Sequence[dict[Any, Any]], catalog: Catalog,
                 part: int) -> list[Descriptor]:
        """A part's DDL and MERGE sources, typed by ``catalog``, named by its number ``part``."""
        out: list[Descriptor] = []
        is_ddl = pc.equal(rows.column("op"), "ddl")
        if pc.any(is_ddl).as_py():
            out += [DdlMet(d["db"], d["table"], d["file"], d["pos"], d["ddl"])
                    for d in rows.filter(is_ddl).to_pylist()]
            rows = rows.filter(pc.invert(is_ddl))
        if rows.num_rows:
            out.extend(self._tables(rows, catalog, typed, f"{self.folder}/{self._name}.{part}"))
        return out

    def _tables(self, rows: pa.Table, catalog: Catalog, typed: Sequence[dict[Any, Any]],
                prefix: str) -> Iterator[TableSource]:
        """Each table's MERGE source, or a descriptor without a path when the per-row path must build
        it (no primary key, a minimal image, a partial JSON update, a value Arrow will not convert)."""
        names = pc.binary_join_element_wise(rows.column("db"), rows.column("table"), "\x00")
        keys = pc.unique(names).to_pylist()
        for number, key in enumerate(keys):
            db, name = key.split("\x00", 1)
            part = rows if len(keys) == 1 else rows.filter(pc.equal(names, key))
            ops = dict(zip(*(v.to_pylist() for v in pc.value_counts(part.column("op")).flatten()), strict=True))
            entry = TableSource(db, name, part.num_rows, part.column("file")[0].as_py(),
                                part.column("pos")[0].as_py(), part.column("row")[0].as_py(), ops.get("insert", 0),
                                ops.get("update", 0), ops.get("delete", 0))
            schema = catalog.get(db, name)
            if schema is not None and self.columns is not None:
                schema = self.columns.mask_schema(schema)
            if schema is not None and schema.primary_key:
                columns = mirror_columns_for_schema(schema, catalog.flavor)
                images = typed_rows((t[(db, name)] for t in typed if (db, name) in t), part.num_rows)
                pk = tuple(schema.primary_key)
                source = None if images is None else typed_merge_source(columns, pk, part, images, positions=True)
                if source is None:
                    kept = mirror_rows(part, schema)
                    source = (merge_source(columns, pk, kept, positions=True) if kept.num_rows
                              else no_changes(columns, positions=True))
                if source is not None:
                    path = f"{prefix}.{number}.arrow"
                    self._put(path, source)
                    entry = replace(entry, path=path, layout=layout_key(columns, schema.primary_key))
            yield entry

    def _put(self, path: str, source: pa.Table) -> None:
        if self.store.remote:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_file(sink, source.schema) as writer:
                writer.write_table(source)
            self.uploads.write_file(path, sink.getvalue().to_pybytes())
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with pa.OSFile(path, "wb") as out, pa.ipc.new_file(out, source.schema) as writer:
            writer.write_table(source)
