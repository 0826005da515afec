"""Soak: ``sluice run --trigger 1s`` under a steady load for a long time, and what the lake becomes.

A sandbox server gets ``accounts`` (``--rows`` rows, 2M by default) and a growing ``events`` table.
The pipeline snapshots both, then streams with a 1 s trigger while a writer keeps ``--rate``
changes/s (default 1,000) going: 70 % updates of random accounts, 20 % inserts and 10 % deletes of
the oldest events. Every 15 s it samples the batches' durations, the mirrors' active files and
bytes, and how long the Delta mirrors' pending changes have waited (``sluice.lake.mirror.pending``).

The figures, over the ``--minutes`` of load (the snapshot before it is not counted):

- batch seconds: mean of the first and of the last quarter, and their ratio (target <= 1.2);
- lag p90: commit on the server to the change log's commit of its batch, which is when
  ``read_mirror`` (and ``sluice verify``) see the change (target <= 2.5 s); next to it, the p90 of
  the oldest pending change's age at the samples, how far the Delta mirror table itself is behind;
- files per mirror at the end (target <= 64);
- bytes written to the lake per change (target <= 2 KiB; nothing is vacuumed during a run, as
  the retention is 7 days, so the lake's growth is what was written).

    .venv/bin/python bench/soak.py --rows 2000000 --minutes 30
    .venv/bin/python bench/soak.py --rows 20000000 --minutes 30 --lake s3

``--lake s3`` puts the lake on the project's S3 test server (moto, in memory: mind the machine's
RAM for long runs). Results: a summary on standard output and ``bench/out/soak-<rows>-<lake>.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decode
from deltalake import DeltaTable

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.layout import Lake, open_lake
from sluice.lake.mirror.commits import MirrorCommits
from sluice.lake.mirror.pending import PendingChanges, mirror_bytes
from sluice.lake.sink import DeltaLake
from sluice.sandbox.s3 import S3Sandbox
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.pipeline.upkeep import Upkeep

OUT = decode.OUT
SAMPLE = 15.0
TABLES = ("accounts", "events")


# The steps of a micro-batch whose seconds are kept apart: (class, method, name in the results).
PHASES = (
    (Pipeline, "_write", "write"),
    (DeltaLake, "committed_batch", "committed_batch"),
    (MirrorCommits, "commit_table", "commit_table"),
    (DeltaLake, "_commit_changelog", "commit_changelog"),
    (Upkeep, "after_batch", "maintenance"),
)


class TimedPipeline(Pipeline):
    """The pipeline, with each micro-batch's duration and the seconds of its steps (``PHASES``) kept."""

    durations: list[tuple[float, float]]
    phases: list[dict[str, float]]

    def _batch(self, df: Any, batch_id: int) -> None:
        started = time.monotonic()
        self.phases.append({})
        super()._batch(df, batch_id)
        self.durations.append((started, time.monotonic() - started))


def time_phases(pipeline: TimedPipeline) -> None:
    """Wrap each method of ``PHASES`` so that its seconds add up in the running batch's entry."""
    for cls, name, label in PHASES:
        original = getattr(cls, name)

        def timed(*args: Any, _original: Any = original, _label: str = label, **kwargs: Any) -> Any:
            began = time.monotonic()
            try:
                return _original(*args, **kwargs)
            finally:
                if pipeline.phases:
                    current = pipeline.phases[-1]
                    current[_label] = current.get(_label, 0.0) + time.monotonic() - began

        setattr(cls, name, timed)


def fill(conn: Connection, rows: int) -> None:
    conn.execute("CREATE DATABASE soak")
    conn.execute("CREATE TABLE soak.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, "
                 "owner VARCHAR(40) NOT NULL, updated DATETIME(3) NOT NULL)")
    conn.execute("CREATE TABLE soak.events (id BIGINT AUTO_INCREMENT PRIMARY KEY, account BIGINT NOT NULL, "
                 "amount INT NOT NULL, note VARCHAR(100))")
    step = 20_000
    for low in range(0, rows, step):
        values = ",".join(f"({i}, {i % 1000}, 'owner {i}', NOW(3))" for i in range(low, min(low + step, rows)))
        conn.execute(f"INSERT INTO soak.accounts VALUES {values}")
        if low % 1_000_000 == 0:
            print(f"soak: {low:,} of {rows:,} accounts", file=sys.stderr, flush=True)


def load(dsn: str, rows: int, rate: int, stop: threading.Event, written: list[int]) -> None:
    """``rate`` changes/s in ticks of 0.1 s: random account updates, event inserts, oldest-event deletes."""
    rng = random.Random(11)
    per_tick = rate / 10
    updates, inserts, deletes = round(per_tick * 0.7), round(per_tick * 0.2), round(per_tick * 0.1)
    with Connection.open(parse_dsn(dsn)) as conn:
        began, ticks = time.monotonic(), 0
        while not stop.is_set():
            ids = ",".join(str(rng.randrange(rows)) for _ in range(updates))
            done = conn.execute(f"UPDATE soak.accounts SET balance = balance + 1, updated = NOW(3) WHERE id IN ({ids})")
            values = ",".join(f"({rng.randrange(rows)}, {rng.randrange(10_000)}, 'event {ticks}')"
                              for _ in range(inserts))
            done_i = conn.execute(f"INSERT INTO soak.events (account, amount, note) VALUES {values}")
            done_d = conn.execute(f"DELETE FROM soak.events ORDER BY id LIMIT {deletes}")
            written[0] += done.affected_rows + done_i.affected_rows + done_d.affected_rows
            ticks += 1
            ahead = ticks / 10 - (time.monotonic() - began)
            if ahead > 0:
                time.sleep(ahead)


def lake_bytes(store: Lake) -> int:
    """Bytes of every object of the lake (Spark's checkpoint lives elsewhere)."""
    if not store.remote:
        return sum(p.stat().st_size for p in Path(store.uri).rglob("*") if p.is_file())
    import obstore

    return sum(m["size"] for chunk in obstore.list(store._store()) for m in chunk)


def sample(store: Lake) -> dict[str, Any]:
    out: dict[str, Any] = {"at": time.time()}
    for table in TABLES:
        dt = DeltaTable(store.join("soak", table), storage_options=store.delta_options())
        pending = PendingChanges(store, "soak", table)
        out[table] = {"files": len(dt.file_uris()), "bytes": mirror_bytes(dt), "pending_rows": pending.rows,
                      "pending_age_s": None if pending.oldest is None else round(time.time() - pending.oldest, 1)}
    return out


def quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(args: argparse.Namespace) -> dict[str, Any]:
    workdir = OUT / f"soak-{args.rows}-{args.lake}"
    shutil.rmtree(workdir, ignore_errors=True)
    box = decode.Sandbox.start(args.flavor, workdir=workdir, settings=decode.SERVER_SETTINGS)  # type: ignore[arg-type]
    s3 = S3Sandbox.start() if args.lake == "s3" else None
    try:
        with Connection.open(parse_dsn(box.dsn("root"))) as conn:
            fill(conn, args.rows)
        if s3 is not None:
            uri, storage = f"s3://{s3.bucket}/soak", s3.storage_options()
        else:
            uri, storage = str(workdir / "lake"), {}
        store = open_lake(uri, storage)
        config = PipelineConfig(source=box.dsn("repl"), lake=uri, tables=r"soak\..*", trigger="1s",
                                snapshot="initial", storage=tuple(storage.items()),
                                checkpoint_dir=str(workdir / "checkpoint"))
        pipeline = TimedPipeline(config)
        pipeline.durations, pipeline.phases = [], []
        time_phases(pipeline)
        query = pipeline.start()
        while query.lastProgress is None:
            time.sleep(0.5)
        stop, written = threading.Event(), [0]
        writer = threading.Thread(target=load, args=(box.dsn("root"), args.rows, args.rate, stop, written), daemon=True)
        base_bytes, began = lake_bytes(store), time.monotonic()
        pipeline.durations.clear()
        pipeline.phases.clear()
        pipeline.stats.latencies.clear()
        samples = []
        writer.start()
        while time.monotonic() - began < args.minutes * 60:
            time.sleep(SAMPLE)
            samples.append(sample(store))
            last = samples[-1]
            print(f"soak: {(time.monotonic() - began) / 60:.1f} min, {written[0]:,} changes, "
                  f"{len(pipeline.durations)} batches, accounts {last['accounts']['files']} files "
                  f"{last['accounts']['bytes'] / 2**20:.0f} MiB pending {last['accounts']['pending_rows']:,}",
                  file=sys.stderr, flush=True)
        stop.set()
        writer.join()
        elapsed = time.monotonic() - began
        grown = lake_bytes(store) - base_bytes
        lags = [lag for lag, n in pipeline.stats.latencies for _ in range(n)]
        query.stop()
        kept = [i for i, (t, _) in enumerate(pipeline.durations) if t - began <= elapsed]
        durations = [pipeline.durations[i][1] for i in kept]
        phases = [pipeline.phases[i] for i in kept]
        quarter = max(1, len(durations) // 4)
        first, last_q = statistics.mean(durations[:quarter]), statistics.mean(durations[-quarter:])
        by_phase = {label: [round(statistics.mean(p.get(label, 0.0) for p in part), 3)
                            for part in (phases[:quarter], phases[-quarter:])]
                    for _, _, label in PHASES}
        ages = [s[t]["pending_age_s"] or 0.0 for s in samples for t in TABLES]
        return {
            "flavor": args.flavor, "lake": args.lake, "rows": args.rows, "minutes": args.minutes,
            "changes": written[0], "achieved_rate": round(written[0] / elapsed),
            "batches": len(durations), "batch_s_first_quarter": round(first, 3),
            "batch_s_last_quarter": round(last_q, 3), "batch_ratio": round(last_q / first, 2),
            "phase_s_first_last_quarter": by_phase,
            "lag_p90_s": quantile(lags, 0.9), "mirror_table_wait_p90_s": quantile(ages, 0.9),
            "files_at_end": {t: samples[-1][t]["files"] for t in TABLES},
            "mirror_bytes_at_end": {t: samples[-1][t]["bytes"] for t in TABLES},
            "bytes_written": grown, "bytes_per_change": round(grown / max(1, written[0])),
            "samples": samples,
        }
    finally:
        box.stop()
        if s3 is not None:
            s3.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the accounts table (default 2M)")
    parser.add_argument("--minutes", type=float, default=30.0, help="minutes of load (default 30)")
    parser.add_argument("--rate", type=int, default=1000, help="changes/s of the load (default 1000)")
    parser.add_argument("--lake", choices=("local", "s3"), default="local")
    parser.add_argument("--flavor", choices=("mysql", "mariadb"), default="mysql")
    args = parser.parse_args()
    result = run(args)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"soak-{args.rows}-{args.lake}.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
