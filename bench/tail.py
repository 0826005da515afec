"""Reading from a live server: ``sluice tail`` against the binlog tool's own remote reader.

On the workloads of ``bench/decode.py`` (the same sandbox servers and binlog files under
``bench/out/``; run that first), each pinned to one core, wall time from process start:

  sluice-tail   ``sluice tail DSN --from FILE:4 --until NEXT_FILE:4 --until-end > /dev/null``
                (replication protocol, every value decoded, the JSON lines of every change)
  tool-remote   ``mysqlbinlog --read-from-remote-server -vv --base64-output=decode-rows FILE``
                (resp. ``mariadb-binlog``) to /dev/null

Both read the workload's binlog file from the server as a replica does. Run from the repository
root::

    .venv/bin/python bench/tail.py            # the full workloads (bench/out/full)
    .venv/bin/python bench/tail.py --quick    # bench/out/quick
"""

from __future__ import annotations

import argparse
import re
import sys

from decode import FULL, QUICK, SLUICE, log, precompile, prepare, timed

from sluice.sandbox.server import PASSWORDS, Sandbox


def _next_file(name: str) -> str:
    match = re.fullmatch(r"(.*\.)(\d+)", name)
    if match is None:
        raise SystemExit(f"cannot tell the binlog file after {name}")
    return f"{match[1]}{int(match[2]) + 1:0{len(match[2])}d}"


def bench_remote(box: Sandbox, files: list[str]) -> dict[str, object]:
    """Time sluice tail and the binlog tool's remote reader over ``files`` of ``box``, each after
    an untimed run of its own (as ``decode.bench_one`` does: the first run after the server's start
    is slower)."""
    tail_argv = [*SLUICE, "tail", box.dsn("repl"), "--from", f"{files[0]}:4", "--until",
                 f"{_next_file(files[-1])}:4", "--until-end", "--heartbeat", "0"]
    tool_argv = box.binlog_tool_argv(
        "--read-from-remote-server", f"--host={box.host}", f"--port={box.port}", "--user=repl",
        f"--password={PASSWORDS['repl']}", "-vv", "--base64-output=decode-rows", *files)
    timed(tail_argv)
    timed(tool_argv)
    tail = timed(tail_argv)
    tool = timed(tool_argv)
    return {"sluice-tail": tail.__dict__, "tool-remote": tool.__dict__}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="the workloads of bench/decode.py --quick")
    parser.add_argument("--flavors", default="mysql,mariadb", help="comma-separated: mysql, mariadb")
    args = parser.parse_args()
    scale = QUICK if args.quick else FULL
    precompile()
    lines = ["| flavor | workload | sluice tail | binlog tool, remote -vv | tail / tool | sluice max RSS MB |",
             "|---|---|---|---|---|---|"]
    for flavor in args.flavors.split(","):
        box, workloads = prepare(flavor, scale)
        try:
            for workload, files in workloads.items():
                log(f"{flavor} {workload}: reading {files} from the server")
                r = bench_remote(box, files)
                tail, tool = r["sluice-tail"], r["tool-remote"]
                cells = [f"FAILED ({run['error'][:80]})" if run["error"] else f"{run['seconds']:.2f} s"  # type: ignore[index]
                         for run in (tail, tool)]
                ok = not tail["error"] and not tool["error"]  # type: ignore[index]
                ratio = f"{tool['seconds'] / tail['seconds']:.2f}x" if ok else "n/a"  # type: ignore[index,operator]
                lines.append(f"| {flavor} | {workload} | {cells[0]} | {cells[1]} | {ratio} | "
                             f"{tail['max_rss_mb']:.0f} |")  # type: ignore[index]
        finally:
            box.stop()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
