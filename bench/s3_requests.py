"""What a micro-batch asks of an object store, and what a real store's round trips make of it.

A real S3 answers each request in about 10-50 ms, so a batch's time on S3 is set by how many
requests it makes one after another, not by the store's CPU (the S3 test server, moto, shares this
machine's two cores with Spark and the source server, so its own seconds say little). This runs
``sluice run --trigger 1s`` twice under the same steady load (the soak's: 70 % updates of random
accounts, 20 % event inserts, 10 % deletes): once into a lake on a local path, once into a lake on
the S3 test server behind ``tests/s3_proxy.py``, which holds every request ``--latency-ms`` before
forwarding it and records it. For the S3 run it counts, per batch in steady state (the first
``--warmup`` batches left out), the requests by kind (GET, PUT, LIST, HEAD, DELETE, COPY) and by
where they go (each mirror, its pending table, the change log, the tasks' staged files, sluice's
own state), and the sequential round trips: the longest chain of requests each sent after the one
before it was answered (``tests.s3_proxy.sequential_round_trips``). For both runs: lag p90 (a
change's commit on the server to its batch's change-log commit) and the batch seconds of the first
and the last quarter.

    .venv/bin/python bench/s3_requests.py --rows 2000000 --minutes 10 --rate 700 --latency-ms 25

Results: a summary on standard output and ``bench/out/s3-requests-<rows>.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import decode
import soak
from tests.s3_proxy import KINDS, Answered, ProxyProcess, sequential_round_trips

from sluice.dsn import parse_dsn
from sluice.io.connection import Connection
from sluice.lake.layout import OWN
from sluice.sandbox.s3 import S3Sandbox
from sluice.spark.pipeline.runner import Pipeline, PipelineConfig

OUT = decode.OUT


class CountingPipeline(Pipeline):
    """The pipeline, with each micro-batch's duration and the store requests made during it kept."""

    proxy: ProxyProcess | None
    batches: list[tuple[float, float, list[Answered]]]

    def _batch(self, df: Any, batch_id: int) -> None:
        if self.proxy is not None:
            self.proxy.take()  # between batches: not this batch's
        started = time.monotonic()
        super()._batch(df, batch_id)
        answered = self.proxy.take() if self.proxy is not None else []
        self.batches.append((started, time.monotonic() - started, answered))


def area(key: str, prefix: str) -> str:
    """Where a request goes: ``mirror``, ``pending``, ``changes``, ``staging`` or ``state``."""
    rest = key.split(prefix, 1)[1].lstrip("/") if prefix in key else key
    if not rest.startswith(OWN + "/"):
        return "mirror"
    part = rest.split("/")[1] if rest.count("/") else ""
    return {"changes": "changes", "staging": "staging", "pending": "pending"}.get(part, "state")


def log_object(key: str) -> str:
    """What of a Delta table a request touches: ``commit`` (a ``_delta_log/N.json``), ``log`` (a LIST
    of ``_delta_log``), ``last_checkpoint``, ``checkpoint`` (its Parquet), else ``data``."""
    name = key.rsplit("/", 1)[-1]
    if "/_delta_log/" not in key and not key.endswith("/_delta_log"):
        return "data"
    if not name:
        return "log"
    if name == "_last_checkpoint":
        return "last_checkpoint"
    if ".checkpoint" in name:
        return "checkpoint"
    return "commit" if name.endswith(".json") else "log"


def per_batch(batches: list[list[Answered]], prefix: str) -> dict[str, Any]:
    """Mean requests per batch by area and kind, by what of a Delta table they touch, and the
    sequential round trips per batch."""
    counts: Counter[tuple[str, str]] = Counter()
    touched: Counter[tuple[str, str]] = Counter()
    for answered in batches:
        counts.update((area(a.key, prefix), a.kind) for a in answered)
        touched.update((log_object(a.key), a.kind) for a in answered)
    n = max(1, len(batches))
    table: dict[str, dict[str, float]] = {}
    for (where, kind), count in sorted(counts.items()):
        table.setdefault(where, {})[kind] = round(count / n, 1)
    objects: dict[str, dict[str, float]] = {}
    for (what, kind), count in sorted(touched.items()):
        objects.setdefault(what, {})[kind] = round(count / n, 1)
    trips = [sequential_round_trips(answered) for answered in batches]
    return {
        "requests_per_batch": table,
        "requests_per_batch_by_object": objects,
        "requests_per_batch_total": round(sum(counts.values()) / n, 1),
        "sequential_round_trips": {"mean": round(statistics.mean(trips), 1) if trips else None,
                                   "p90": soak.quantile([float(t) for t in trips], 0.9),
                                   "max": max(trips) if trips else None},
    }


def quarters(batches: list[list[Answered]], prefix: str) -> dict[str, Any]:
    """The first and the last quarter of the steady batches side by side: per batch, the requests by
    what they touch and kind (``mirror commit GET``...), and the store's own milliseconds per request
    of each (``Answered.served``, the added latency left out), so a batch time that grows is put down
    to more requests or to a slower store."""
    quarter = max(1, len(batches) // 4)
    out: dict[str, Any] = {}
    for name, part in (("first", batches[:quarter]), ("last", batches[-quarter:])):
        counts: Counter[str] = Counter()
        served: Counter[str] = Counter()
        for answered in part:
            for a in answered:
                what = f"{area(a.key, prefix)} {log_object(a.key)} {a.kind}"
                counts[what] += 1
                served[what] += a.served
        n = max(1, len(part))
        out[name] = {
            "batches": len(part),
            "requests_per_batch": round(sum(counts.values()) / n, 1),
            "store_ms_per_batch": round(1000 * sum(served.values()) / n, 1),
            "by_kind": {what: {"per_batch": round(counts[what] / n, 2),
                               "store_ms_each": round(1000 * served[what] / counts[what], 1)}
                        for what in sorted(counts, key=lambda w: -counts[w])},
        }
    return out


def leg(args: argparse.Namespace, lake: str) -> dict[str, Any]:
    workdir = OUT / f"s3-requests-{args.rows}-{lake}"
    shutil.rmtree(workdir, ignore_errors=True)
    box = decode.Sandbox.start(args.flavor, workdir=workdir, settings=decode.SERVER_SETTINGS)
    s3 = S3Sandbox.start() if lake == "s3" else None
    proxy = ProxyProcess(s3.port, workdir / "requests.jsonl", args.latency_ms / 1000) if s3 is not None else None
    try:
        with Connection.open(parse_dsn(box.dsn("root"))) as conn:
            soak.fill(conn, args.rows)
        if s3 is not None and proxy is not None:
            uri, storage = f"s3://{s3.bucket}/bench", {**s3.storage_options(), "AWS_ENDPOINT_URL": proxy.url}
        else:
            uri, storage = str(workdir / "lake"), {}
        config = PipelineConfig(source=box.dsn("repl"), lake=uri, tables=r"soak\..*", trigger="1s",
                                snapshot="initial", storage=tuple(storage.items()),
                                checkpoint_dir=str(workdir / "checkpoint"))
        pipeline = CountingPipeline(config)
        pipeline.proxy, pipeline.batches = proxy, []
        query = pipeline.start()
        while query.lastProgress is None:
            time.sleep(0.5)
        stop, written = threading.Event(), [0]
        writer = threading.Thread(target=soak.load, args=(box.dsn("root"), args.rows, args.rate, stop, written),
                                  daemon=True)
        pipeline.batches.clear()
        pipeline.stats.latencies.clear()
        began = time.monotonic()
        writer.start()
        while time.monotonic() - began < args.minutes * 60:
            time.sleep(15)
            print(f"s3_requests: {lake} {(time.monotonic() - began) / 60:.1f} min, {written[0]:,} changes, "
                  f"{len(pipeline.batches)} batches", file=sys.stderr, flush=True)
        stop.set()
        writer.join()
        query.stop()
        lags = [lag for lag, n in pipeline.stats.latencies for _ in range(n)]
        steady = pipeline.batches[args.warmup:]
        durations = [d for _, d, _ in steady]
        if not durations:
            raise SystemExit(f"s3_requests: {lake}: only {len(pipeline.batches)} batches ran, none after the "
                             f"{args.warmup} of warm-up: run longer (--minutes) or lower --warmup")
        quarter = max(1, len(durations) // 4)
        first, last = statistics.mean(durations[:quarter]), statistics.mean(durations[-quarter:])
        out: dict[str, Any] = {
            "lake": lake, "latency_ms": args.latency_ms if proxy is not None else 0,
            "changes": written[0], "batches": len(durations), "lag_p90_s": soak.quantile(lags, 0.9),
            "batch_s_first_quarter": round(first, 3), "batch_s_last_quarter": round(last, 3),
            "batch_ratio": round(last / first, 2),
        }
        if proxy is not None:
            kept = [answered for _, _, answered in steady if answered]
            out.update(per_batch(kept, "/bench/"))
            out["quarters"] = quarters(kept, "/bench/")
            with open(workdir / "batches.jsonl", "w") as f:  # each steady batch: its seconds and requests
                for started, seconds, answered in steady:
                    f.write(json.dumps([started, seconds, [dataclasses.astuple(a) for a in answered]]) + "\n")
        return out
    finally:
        if proxy is not None:
            proxy.close()
        box.stop()
        if s3 is not None:
            s3.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the accounts table (default 2M)")
    parser.add_argument("--minutes", type=float, default=10.0, help="minutes of load per run (default 10)")
    parser.add_argument("--rate", type=int, default=700, help="changes/s of the load (default 700)")
    parser.add_argument("--latency-ms", type=float, default=25.0, help="added to every S3 request (default 25)")
    parser.add_argument("--warmup", type=int, default=10, help="first batches left out (default 10)")
    parser.add_argument("--flavor", choices=("mysql", "mariadb"), default="mysql")
    parser.add_argument("--only", choices=("local", "s3"), help="run one of the two legs")
    args = parser.parse_args()
    results = {lake: leg(args, lake) for lake in ("local", "s3") if args.only in (None, lake)}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"s3-requests-{args.rows}.json").write_text(json.dumps(results, indent=1))
    for lake, r in results.items():
        print(f"{lake}: {r['batches']} batches, lag p90 {r['lag_p90_s']} s, batch s first/last quarter "
              f"{r['batch_s_first_quarter']}/{r['batch_s_last_quarter']} ({r['batch_ratio']}x)")
        if "requests_per_batch" in r:
            print(f"  requests per batch: {r['requests_per_batch_total']} "
                  f"({', '.join(k for k in KINDS)} by area: {json.dumps(r['requests_per_batch'])})")
            print(f"  by what they touch: {json.dumps(r['requests_per_batch_by_object'])}")
            print(f"  sequential round trips per batch: {r['sequential_round_trips']}")
            for name, q in r["quarters"].items():
                print(f"  {name} quarter ({q['batches']} batches): {q['requests_per_batch']} requests and "
                      f"{q['store_ms_per_batch']} ms of the store's own time per batch")
                for what, v in q["by_kind"].items():
                    print(f"    {what}: {v['per_batch']} per batch, {v['store_ms_each']} ms each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
