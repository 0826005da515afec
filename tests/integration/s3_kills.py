"""kill -9 of a process at an exact request to a lake on S3: the proxy's hook (``Killer``), the
requests a test kills at (``copied_to``, ``objects_deleted``, ``first_commit``), by where they
write (``folder``), a ``sluice run`` killed at one (``killed_at``), and the checks after the last
run (``caught_up``, ``changes_once``)."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import Any

import deltalake
import pytest

from sluice.dsn import parse_dsn
from sluice.lake.layout import Lake
from sluice.sandbox.s3 import S3Sandbox
from sluice.spark.verify.check import verify_lake
from tests.s3_proxy import S3Request

__all__ = ["Killer", "caught_up", "changes_once", "copied_to", "first_commit", "folder", "killed_at",
           "objects_deleted"]

Match = Callable[[S3Request], bool]


class Killer:
    """The proxy's hook: SIGKILL ``proc`` at the first request ``match`` takes, and drop that request."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.match: Match | None = None
        self.fired = threading.Event()

    def arm(self, proc: subprocess.Popen[bytes], match: Match) -> None:
        with self.lock:
            self.proc, self.match = proc, match
            self.fired.clear()

    def __call__(self, request: S3Request) -> bool:
        with self.lock:
            if self.proc is None or self.match is None or not self.match(request):
                return False
            os.kill(self.proc.pid, signal.SIGKILL)
            self.match = None
            self.fired.set()
            return True


def folder(uri: str) -> str:
    """The path of a lake's folder ``uri`` (``s3://bucket/key``) as the proxy sees its objects:
    ``/bucket/key/``."""
    return "/" + uri.split("://", 1)[1].rstrip("/") + "/"


def copied_to(prefix: str) -> Match:
    """The copy of an object to a key under ``prefix`` (a proxy path, ``folder``; an archive's
    ``.../<table>@`` too)."""
    return lambda r: r.method == "PUT" and "x-amz-copy-source" in r.headers and r.key.startswith(prefix)


def objects_deleted(prefix: str) -> Match:
    """The removal of objects under ``prefix`` (a proxy path): one key, or a batch of them."""
    key = prefix.split("/", 2)[2]  # the object keys, without the bucket
    return lambda r: ((r.method == "DELETE" and r.key.startswith(prefix))
                      or (r.method == "POST" and "delete" in r.path and f"<Key>{key}".encode() in r.body))


def first_commit(prefix: str, column: str) -> Match:
    """The write of the first log entry of the Delta table under ``prefix`` (a proxy path) whose
    schema names ``column``."""
    entry = f"{prefix}_delta_log/00000000000000000000.json"
    return lambda r: r.method == "PUT" and r.key == entry and column.encode() in r.body


def killed_at(args: list[str], env: Mapping[str, str], killer: Killer, what: str, match: Match,
              meanwhile: Callable[[subprocess.Popen[bytes]], None] = lambda _proc: None) -> None:
    """Start ``args`` (a ``sluice run --trigger 1s`` through the proxy ``killer`` hooks), arm the
    killer at ``match`` (``what`` names it), do ``meanwhile`` (the DDL it must meet), and wait until
    the run dies of the kill: a request of ``what`` within 180 s, and no exit of its own before it."""
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        killer.arm(proc, match)
        meanwhile(proc)
        if not killer.fired.wait(180):
            proc.kill()
            pytest.fail(f"no request of {what} in 180 s: {proc.communicate()[1].decode()[-3000:]}")
        assert proc.wait(60) == -signal.SIGKILL, f"sluice run ended by itself before {what}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def caught_up(args: list[str], env: Mapping[str, str], s3: S3Sandbox, server: Any, store: Lake, db: str) -> list[Any]:
    """The last run, ``args`` with ``--trigger once`` straight to the S3 server (no proxy), must end
    well; the verdicts of ``sluice verify`` on ``db``'s tables."""
    final = subprocess.run([*args, "--trigger", "once"], capture_output=True, timeout=600,
                           env={**env, "AWS_ENDPOINT_URL": s3.endpoint})
    assert final.returncode == 0, final.stderr.decode()[-3000:]
    return verify_lake(parse_dsn(server.dsn("root")), store, tables=lambda d, _t: d == db)


def changes_once(store: Lake, table: str, tally: collections.Counter[str]) -> list[dict[str, Any]]:
    """The change log's rows, once every change in it (all but DDL) is there once and ``table``'s
    count ``tally`` by op (a workload's)."""
    log = deltalake.DeltaTable(store.changes, storage_options=store.delta_options()).to_pyarrow_table().to_pylist()
    changes = [r for r in log if r["op"] != "ddl"]
    keys = [(r["file"], r["pos"], r["row"]) for r in changes]
    assert len(keys) == len(set(keys)), "a change is in the change log twice"
    assert collections.Counter(r["op"] for r in changes if r["table"] == table) == tally
    return log
