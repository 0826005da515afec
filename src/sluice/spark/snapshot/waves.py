"""The snapshot's chunks run on Spark in waves: one job of several chunks, the next submitted while
one runs, so that a job's start is paid per wave and not per chunk.

``chunk_waves`` says how many chunks a job holds and how many jobs are in flight, from the cores
and the connections the source may take; ``in_waves`` runs the chunk tasks so and yields their
results in plan order, taking each later chunk's low watermark a wave ahead of it (MySQL) and
handing each task the boundaries the driver knows exactly then (``known``). A
chunk task returns its sluice error in its result rather than failing (Spark's executor would log a
failed task's Python traceback on standard error); ``in_waves`` raises it, typed, at that chunk.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from sluice.cdc.table_read.reader import LowMark, low_mark
from sluice.dsn import parse_dsn
from sluice.errors import SluiceError, carried
from sluice.io.connection import Connection
from sluice.io.replication import server_identity
from sluice.spark.runtime.query_error import query_error
from sluice.spark.snapshot.task import ChunkResult, ChunkTask, read_and_reconcile

__all__ = ["DEFAULT_CONNECTIONS", "chunk_waves", "in_waves"]

#: Chunks read at once by default, at most: one per Spark core up to this many connections to the source.
DEFAULT_CONNECTIONS = 8


def _as_list(rows: Iterator[Any]) -> list[Any]:
    return list(rows)


def chunk_waves(cores: int, connections: int | None) -> tuple[int, int]:
    """(chunks in one Spark job, jobs in flight) for a snapshot on ``cores`` Spark cores that reads
    at most ``connections`` chunks at once, each a task on a connection of its own (None: one per
    core, at most ``DEFAULT_CONNECTIONS``). With as many connections as cores, a job holds two
    chunks per core and two jobs are in flight: Spark's cores are the limit. With fewer, two jobs
    of half as many chunks (an odd count leaves one unused), or one job of one chunk."""
    cores = max(1, cores)
    limit = min(cores, DEFAULT_CONNECTIONS) if connections is None else max(1, connections)
    if limit >= cores:
        return 2 * cores, 2
    if limit == 1:
        return 1, 1
    return limit // 2, 2


def in_waves(spark: Any, source: str, payloads: list[ChunkTask], first: LowMark | None, connections: int | None,
             stopping: Callable[[], bool], jobs: str,
             known: Callable[[], tuple[dict[str, Any], ...]] = tuple) -> Iterator[ChunkResult]:
    """The chunks' task results in plan order. Chunks run as Spark jobs of a wave of chunks
    (``chunk_waves``), one task per chunk, and the next wave is submitted while one runs, so
    that a job's start is paid per wave, not per chunk.
    ``first`` (MySQL): the low watermark taken when the tables were planned, the first wave's;
    every later chunk's is taken a wave ahead of it. So the settle after a mark
    (``sluice.cdc.table_read.reader``) has passed when its task runs, not holding a slot idle (an
    older mark only widens the window the chunk is reconciled with). ``stopping()`` ends it at a wave's
    boundary; ``jobs`` names the Spark job group its waves run in, cancelled when it ends early;
    ``known()``: the exact boundaries a wave's tasks read their windows from, asked at its submission."""
    sc = spark.sparkContext
    wave, ahead = chunk_waves(int(sc.defaultParallelism), connections)
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sluice-snapshot")
    futures: deque[Future[list[ChunkResult]]] = deque()
    submitted = 0
    marks: deque[LowMark] = deque()  # low watermarks taken ahead, oldest first
    conn = None
    if first is not None and payloads:
        marks.extend([first] * min(wave, len(payloads)))
        conn = Connection.open(parse_dsn(source))
        on = server_identity(conn)

    def run_wave(rdd: Any) -> list[ChunkResult]:
        sc.setJobGroup(jobs, "sluice snapshot chunks")  # this thread's jobs, for cancelJobGroup
        return sc.runJob(rdd, _as_list)

    try:
        while submitted < len(payloads) or futures:
            if stopping():  # the chunks of the waves read so far are written; the others wait
                break
            while submitted < len(payloads) and len(futures) < ahead:
                points = known()
                group = [replace(task, known=points) for task in payloads[submitted:submitted + wave]]
                if conn is not None:
                    while len(marks) < len(group) + wave:
                        marks.append(low_mark(conn, on))
                    group = [replace(task, mark=marks.popleft().to_json()) for task in group]
                rdd = sc.parallelize(group, len(group)).map(read_and_reconcile)
                futures.append(pool.submit(run_wave, rdd))
                submitted += len(group)
            try:
                results = futures.popleft().result()
            except SluiceError:
                raise
            except Exception as exc:  # a task's sluice error arrives inside Spark's: the typed one again
                raise query_error(exc) from exc
            for result in results:
                if result.failure is not None:  # a chunk task's sluice error, returned as its result
                    raise carried(result.failure) or SluiceError(result.failure)
                yield result
    finally:
        if futures:  # stopped, or a chunk's write failed: the waves in flight are not waited for
            sc.cancelJobGroup(jobs)
        pool.shutdown(wait=True, cancel_futures=True)
        if conn is not None:
            conn.close()
