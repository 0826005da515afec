"""Where a stream that ran before goes on, checked on the server before the query starts, and a
snapshot of every captured table that replaces a position the server no longer has.

A pipeline stopped long enough meets ``binlog_expire_logs_seconds``: the position it would go on
from (``stream_position``: the start of the batch Spark's checkpoint runs next, else the lake's last
batch) names binlogs or GTIDs the server purged (``sluice.io.purged``). ``purged_position`` finds
that before Spark starts, so the run stops with ``BinlogPurgedError`` (its remedy names this lake
and its tables) and the lake is left as it was. The changes in between are gone; the way on is a
new snapshot of every captured table, and only of every one: a snapshot of some tables cannot
move the stream past changes the others still need.

``start_over`` forgets the whole snapshot (every captured table's state, mirror and pending
changes, and the snapshot's start), so the next snapshot reads every captured table again from a
new start, with the schema there recorded in the stream's history. ``sluice snapshot`` does that
when the stream's position was purged, and ``sluice run --snapshot when-needed`` does it itself.
The snapshot's start then lies after the stream's position, which is how the pipeline knows that
it replaces it (``replaces``): the stream goes on from the snapshot's start with a new Spark
checkpoint (the old one's offsets would take it back to the purged position). Every change after
the snapshot's start is in the change log once; the mirrors are the snapshot's, then the stream's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from sluice.binlog.position import Checkpoint, precedes
from sluice.cdc.follow import FollowConfig, retrying
from sluice.dsn import parse_dsn
from sluice.errors import BinlogPurgedError
from sluice.io.connection import Connection
from sluice.io.purged import purged_start
from sluice.io.replication import server_identity
from sluice.lake.sink import DeltaLake
from sluice.spark.snapshot.state import SnapshotState

__all__ = ["captured_names", "pipeline_remedy", "purged_position", "replaces", "spark_offset", "start_over",
           "stream_position"]


def spark_offset(checkpoint: Path) -> Checkpoint | None:
    """The offset the next batch of Spark's checkpoint starts at: the last committed batch's end
    (``commits/N``), or the end of the batch before an uncommitted last one; None when it has none."""
    offsets, commits = checkpoint / "offsets", checkpoint / "commits"
    logged = sorted(int(p.name) for p in offsets.iterdir() if p.name.isdigit()) if offsets.is_dir() else []
    if not logged:
        return None
    last = logged[-1]
    batch = last if (commits / str(last)).exists() else last - 1
    if batch < 0 or not (offsets / str(batch)).exists():
        return None
    lines = [line for line in (offsets / str(batch)).read_text().splitlines() if line.strip()]
    # v1, the batch's metadata, then one offset per source: the binlog source's Checkpoint document
    return Checkpoint.from_json(_json(lines[-1])) if len(lines) >= 3 else None


def _json(text: str) -> dict[str, object]:
    doc = json.loads(text)
    return doc if isinstance(doc, dict) else {}


def stream_position(checkpoint: Path, lake_position: Checkpoint | None) -> Checkpoint | None:
    """Where the stream goes on: Spark's checkpoint's next batch start, else the lake's last batch
    (``lake_position``); None for a stream that never ran."""
    return spark_offset(checkpoint) or lake_position


def purged_position(source: str, at: Checkpoint) -> BinlogPurgedError | None:
    """What of ``at`` the server at ``source`` no longer has (``sluice.io.purged``): by file and
    offset on the server they were read on, by GTID set on another; None when it has it all."""
    config = parse_dsn(source)

    def look() -> BinlogPurgedError | None:
        with Connection.open(config) as conn:
            here = server_identity(conn)
            moved = at.source is not None and not at.source.same_server(here)
            if moved and not at.gtid_set:
                return None  # the stream's own SourceChangedError says it
            return purged_start(conn, None if moved else at.file, at.pos, at.gtid_set, by_gtid=moved)

    return retrying(FollowConfig(config, retries=8), "checking the stream's position", look)


def pipeline_remedy(source: str, lake: str, tables: str | None) -> str:
    """The remedy of a purged stream, with this pipeline's lake and tables."""
    redacted = parse_dsn(source).redacted()
    return (f"The changes in between are gone: snapshot every captured table again, and the next sluice run "
            f"streams on from that snapshot: sluice snapshot --source {redacted} --lake {lake} --tables "
            f"'{tables or '.*'}'; or run sluice run with --snapshot when-needed, which does both")


def replaces(at: Checkpoint | None, state: SnapshotState | None) -> Checkpoint | None:
    """The snapshot's start when the snapshot of ``state`` was begun after the stream's position
    ``at`` (``start_over``): the stream goes on from there instead; None otherwise."""
    if at is None or state is None or state.start is None:
        return None
    start = Checkpoint.from_json(state.start)
    return start if precedes(at, start) else None


def captured_names(source: str, include: Callable[[str, str], bool] | None) -> list[str]:
    """The ``db.table`` names of the tables on the server at ``source`` that ``include`` captures."""
    from sluice.cdc.schema import bootstrap_catalog

    with Connection.open(parse_dsn(source)) as conn:
        return sorted(f"{t.db}.{t.name}" for t in bootstrap_catalog(conn, include).tables())


def start_over(lake: DeltaLake, include: Callable[[str, str], bool] | None) -> list[str]:
    """Forget the whole snapshot: the state of every table it holds, the mirror and the pending
    changes of every captured table (``include``), and its start, so that the next snapshot reads
    every captured table again from a new start; the ``db.table`` names forgotten."""
    store = lake.store
    state = SnapshotState.load(store)
    names = set(state.tables)
    names |= {f"{db}.{t}" for db, t in store.mirrors() + store.pending_tables() if include is None or include(db, t)}
    for name in sorted(names):
        db, _, table = name.partition(".")
        store.delete_prefix(store.key(lake.table_path(db, table)))
        store.delete_prefix(store.key(store.pending(db, table)))
    lake.forget()
    SnapshotState(flavor=state.flavor).save(store)
    return sorted(names)
