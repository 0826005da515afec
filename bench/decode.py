"""Decoding benchmark: sluice against mysqlbinlog / mariadb-binlog and python-mysql-replication.

Generates two workloads on sandbox servers (MySQL 9.x and MariaDB, both with
``binlog_row_metadata=FULL``), keeps their binlog files under ``bench/out/`` (a re-run reuses them)
and times, on the same files and pinned to one core, each of:

  sluice-none   ``sluice dump --format none FILES``        (decode every value, print counts)
  sluice-jsonl  ``sluice dump FILES > /dev/null``          (JSON lines)
  sluice-parquet ``sluice dump --format parquet --out DIR FILES``  (typed Parquet per table, zstd; DIR removed after)
  binlog-tool   ``mysqlbinlog -vv --base64-output=decode-rows FILES > /dev/null`` (resp. mariadb-binlog)
  pmr           python-mysql-replication streaming the same files from the live server, every value touched

Run from the repository root::

    .venv/bin/python bench/decode.py --quick     # 1/10 of the rows: checks everything end to end
    .venv/bin/python bench/decode.py             # the full benchmark
    .venv/bin/python bench/decode.py --profile   # also cProfile sluice on every workload

python-mysql-replication is installed into ``bench/out/venv-pmr`` (never into sluice's environment).
Results: a table on standard output and ``bench/out/results-{quick,full}.json`` / ``.md``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import pstats
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sluice.sandbox.server import PASSWORDS, Sandbox

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"
VENV_PMR = OUT / "venv-pmr"
SLUICE = [str(Path(sys.executable).parent / "sluice")]  # the console script of the environment running this
CORE = "0"
SERVER_SETTINGS = {
    "binlog_row_metadata": "FULL",
    "sync_binlog": "0",
    "innodb_flush_log_at_trx_commit": "0",
    "innodb_buffer_pool_size": "512M",
    "max_binlog_size": "1073741824",
}


@dataclass(frozen=True)
class Scale:
    name: str
    w1_rows: int  # inserted in 1,000-row statements
    w1_updates: int  # single-row, 100 per transaction
    w1_deletes: int  # single-row, 100 per transaction
    w2_rows: int  # inserted in 500-row statements
    w2_updates: int  # single-row, 100 per transaction


FULL = Scale("full", 500_000, 200_000, 100_000, 200_000, 50_000)
QUICK = Scale("quick", 50_000, 20_000, 10_000, 20_000, 5_000)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Workloads

def _groups(n: int) -> str:
    """SQL for sysbench's CHAR filler: n groups of 11 random digits joined by '-'."""
    return "CONCAT_WS('-', " + ", ".join(["LPAD(FLOOR(RAND() * 99999999999), 11, '0')"] * n) + ")"


SETUP_SQL = """\
SET NAMES utf8mb4;
SET sql_log_bin = 0;
CREATE DATABASE IF NOT EXISTS bench;
USE bench;
DROP TABLE IF EXISTS nums;
CREATE TABLE nums (n INT NOT NULL PRIMARY KEY);
INSERT INTO nums VALUES {nums};
DELIMITER //
CREATE PROCEDURE w1_insert(IN batches INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  WHILE i < batches DO
    INSERT INTO sbtest1 (id, k, c, pad)
      SELECT i * 1000 + n + 1, FLOOR(RAND() * 1000000), {c}, {pad} FROM nums;
    SET i = i + 1;
  END WHILE;
END//
CREATE PROCEDURE w1_change(IN updates INT, IN deletes INT, IN nrows INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  START TRANSACTION;
  WHILE i < updates DO
    UPDATE sbtest1 SET k = k + 1 WHERE id = 1 + (i * 7919) % nrows;
    SET i = i + 1;
    IF i % 100 = 0 THEN COMMIT; START TRANSACTION; END IF;
  END WHILE;
  COMMIT;
  SET i = 0;
  START TRANSACTION;
  WHILE i < deletes DO
    DELETE FROM sbtest1 WHERE id = 1 + i * 5;
    SET i = i + 1;
    IF i % 100 = 0 THEN COMMIT; START TRANSACTION; END IF;
  END WHILE;
  COMMIT;
END//
CREATE PROCEDURE w2_insert(IN batches INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  WHILE i < batches DO
    INSERT INTO wide
      SELECT x,
        (x * 2654435761) % 4294967296,
        x * 1000003 - 5000000000000,
        ROUND(RAND() * 1000000000 - 500000000, 5),
        RAND() * 1e6,
        TIMESTAMP('2020-01-01 00:00:00') + INTERVAL x * 37 SECOND + INTERVAL FLOOR(RAND() * 1000000) MICROSECOND,
        IF(x % 10 = 0, NULL, FROM_UNIXTIME(1600000000 + x * 13 + ROUND(RAND(), 3))),
        DATE('2000-01-01') + INTERVAL x % 10000 DAY,
        SEC_TO_TIME(x % 3000000 - 1000000 + ROUND(RAND(), 3)),
        CONCAT('naïve café ', x, ' ', REPEAT('ж', x % 20), ' 🚀'),
        REPEAT(SHA2(x, 256), 1 + x % 4),
        UNHEX(REPEAT(SHA2(x, 256), 1 + x % 2)),
        JSON_OBJECT('id', x, 'name', CONCAT('item-', x), 'tags', JSON_ARRAY('t', x % 7, TRUE, NULL),
                    'price', x * 0.125e0, 'nested', JSON_OBJECT('a', JSON_ARRAY(1, 2, 3), 'ok', FALSE)),
        ELT(1 + x % 4, 'red', 'green', 'blue', 'cyan'),
        x % 32,
        x % 4096,
        1901 + x % 255
      FROM (SELECT i * 500 + n + 1 AS x FROM nums WHERE n < 500) q;
    SET i = i + 1;
  END WHILE;
END//
CREATE PROCEDURE w2_change(IN updates INT, IN nrows INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  START TRANSACTION;
  WHILE i < updates DO
    UPDATE wide SET b = b + 1, dt = dt + INTERVAL 1 SECOND WHERE id = 1 + (i * 7919) % nrows;
    SET i = i + 1;
    IF i % 100 = 0 THEN COMMIT; START TRANSACTION; END IF;
  END WHILE;
  COMMIT;
END//
DELIMITER ;
"""

W1_TABLE = """\
CREATE TABLE bench.sbtest1 (
  id INT NOT NULL PRIMARY KEY,
  k INT NOT NULL DEFAULT 0,
  c CHAR(120) NOT NULL DEFAULT '',
  pad CHAR(60) NOT NULL DEFAULT '',
  KEY k_1 (k)
) DEFAULT CHARSET = utf8mb4
"""

W2_TABLE = """\
CREATE TABLE bench.wide (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  u INT UNSIGNED, b BIGINT, d DECIMAL(15,5), f DOUBLE,
  dt DATETIME(6), ts TIMESTAMP(3) NULL DEFAULT NULL, dd DATE, tm TIME(3),
  v VARCHAR(200), tx TEXT, bl BLOB, j JSON,
  e ENUM('red','green','blue','cyan'), s SET('a','b','c','d','e'), bt BIT(12), y YEAR
) DEFAULT CHARSET = utf8mb4
"""


def _rotate(box: Sandbox) -> str:
    box.sql("FLUSH BINARY LOGS")
    return box.binlog_files()[-1]


def generate(box: Sandbox, scale: Scale) -> dict[str, list[str]]:
    """Run both workloads; return the binlog file names each one wrote."""
    nums = ",".join(f"({i})" for i in range(1000))
    box.sql(SETUP_SQL.format(nums=nums, c=_groups(10), pad=_groups(5)))
    files: dict[str, list[str]] = {}
    for name, table, calls in (
        ("W1", W1_TABLE, [f"CALL w1_insert({scale.w1_rows // 1000})",
                          f"CALL w1_change({scale.w1_updates}, {scale.w1_deletes}, {scale.w1_rows})"]),
        ("W2", W2_TABLE, [f"CALL w2_insert({scale.w2_rows // 500})",
                          f"CALL w2_change({scale.w2_updates}, {scale.w2_rows})"]),
    ):
        first = _rotate(box)
        started = time.perf_counter()
        box.sql(table)
        for call in calls:
            box.sql("SET NAMES utf8mb4; " + call, database="bench", timeout=3600)
        last = box.binlog_files()[-1]
        _rotate(box)
        names = box.binlog_files()
        files[name] = names[names.index(first): names.index(last) + 1]
        log(f"{box.flavor} {name}: generated in {time.perf_counter() - started:.0f}s -> {files[name]}")
    return files


def prepare(flavor: str, scale: Scale) -> tuple[Sandbox, dict[str, list[str]]]:
    """Start (or restart) the flavor's server under bench/out and make sure its workloads exist."""
    workdir = OUT / scale.name / flavor
    manifest = workdir / "workloads.json"
    if not manifest.exists() and workdir.exists():
        shutil.rmtree(workdir)  # an interrupted generation: start again from an empty server
    box = Sandbox.start(flavor, workdir=workdir, settings=SERVER_SETTINGS)  # type: ignore[arg-type]
    if manifest.exists():
        files = json.loads(manifest.read_text())
        log(f"{flavor}: reusing the binlog files of {manifest}")
    else:
        files = generate(box, scale)
        manifest.write_text(json.dumps(files, indent=1))
    return box, files


# --------------------------------------------------------------------------------------------
# Timing

@dataclass
class Run:
    seconds: float
    max_rss_mb: float
    stdout: str
    error: str | None = None
    stderr_tail: str = ""  # the last lines the command wrote to standard error


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process and its waited-for children, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def timed(argv: list[str], *, keep_stdout: bool = False, env: dict[str, str] | None = None,
          pin: bool = True) -> Run:
    """Run argv (pinned to one core unless ``pin`` is false) under /usr/bin/time; wall time and max RSS."""
    rss_file = OUT / "time.txt"
    full = ["/usr/bin/time", "-f", "%M", "-o", str(rss_file), *(["taskset", "-c", CORE] if pin else []), *argv]
    started = time.perf_counter()
    result = subprocess.run(full, stdout=subprocess.PIPE if keep_stdout else subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env, check=False)
    seconds = time.perf_counter() - started
    rss_lines = [line for line in rss_file.read_text().splitlines() if line.strip().isdigit()]
    rss = int(rss_lines[-1]) / 1024 if rss_lines else float("nan")
    stdout = result.stdout.decode(errors="replace") if keep_stdout else ""
    error = None
    if result.returncode != 0:
        error = (result.stderr.decode(errors="replace").strip().splitlines() or ["exit"])[-1][:300]
    return Run(seconds, rss, stdout, error, "\n".join(result.stderr.decode(errors="replace").splitlines()[-5:]))


def precompile() -> None:
    """Byte-compile sluice's modules, as an installed wheel has them: an editable install under
    ``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module from source on every run."""
    import sluice

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(sluice.__file__).parent)], check=True)


def ensure_pmr() -> Path:
    python = VENV_PMR / "bin" / "python"
    if not python.exists():
        log("creating bench/out/venv-pmr with python-mysql-replication")
        subprocess.run([sys.executable, "-m", "venv", str(VENV_PMR)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "mysql-replication", "cryptography",
                        "pyinstrument"], check=True)
    return python


def bench_one(box: Sandbox, files: list[str], pmr_python: Path, *, skip_pmr: bool) -> dict[str, object]:
    paths = [str(box.binlog_dir / name) for name in files]
    size = sum(Path(p).stat().st_size for p in paths)
    res: dict[str, object] = {"files": files, "bytes": size}
    # One untimed run of sluice and of the binlog tool first, alike: the first sluice run after the
    # sandbox server's start took 0.95 s on MySQL W1 against 0.51 s for the runs after it.
    timed([*SLUICE, "dump", "--format", "none", *paths])
    timed(box.binlog_tool_argv("-vv", "--base64-output=decode-rows", *paths))
    none = timed([*SLUICE, "dump", "--format", "none", *paths], keep_stdout=True)
    match = re.search(r"(\d+) events, \d+ transactions, (\d+) row changes", none.stdout)
    rows = int(match[2]) if match else 0
    res["rows"] = rows
    res["events"] = int(match[1]) if match else 0
    res["sluice-none"] = none.__dict__ | {"stdout": none.stdout.strip()}
    res["sluice-jsonl"] = timed([*SLUICE, "dump", *paths]).__dict__
    parquet_dir = OUT / "parquet"
    shutil.rmtree(parquet_dir, ignore_errors=True)
    res["sluice-parquet"] = timed([*SLUICE, "dump", "--format", "parquet", "--out", str(parquet_dir), *paths]).__dict__
    shutil.rmtree(parquet_dir, ignore_errors=True)
    res["binlog-tool"] = timed(box.binlog_tool_argv("-vv", "--base64-output=decode-rows", *paths)).__dict__
    if skip_pmr:
        res["pmr"] = {"seconds": float("nan"), "max_rss_mb": float("nan"), "stdout": "", "error": "skipped"}
    else:
        run = timed([str(pmr_python), str(BENCH / "pmr_stream.py"), "--port", str(box.port), "--user", "repl",
                     "--password", PASSWORDS["repl"], *files], keep_stdout=True)
        try:
            info = json.loads(run.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            info = {"error": run.error or "no output"}
        run.error = info.get("error") or run.error
        if run.error is None and info.get("rows") != rows:
            run.error = f"streamed {info.get('rows')} rows, expected {rows}"
        res["pmr"] = run.__dict__ | {"streamed": info}
    return res


def profile(paths: list[str], label: str, top: int = 18) -> str:
    out = OUT / f"profile-{label}.pstats"
    subprocess.run(["taskset", "-c", CORE, sys.executable, "-m", "cProfile", "-o", str(out), SLUICE[-1],
                    "dump", "--format", "none", *paths], stdout=subprocess.DEVNULL, check=True)
    stats = pstats.Stats(str(out))
    total = stats.total_tt  # type: ignore[attr-defined]
    lines = [f"profile {label}: {total:.1f}s total (cProfile overhead included)",
             f"{'tottime':>8} {'share':>6} {'cumtime':>8} {'calls':>10}  function"]
    entries = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
    for (file, line, func), (_cc, nc, tt, ct, _callers) in entries[:top]:
        where = f"{Path(file).name}:{line}" if line else file
        lines.append(f"{tt:8.2f} {100 * tt / total:5.1f}% {ct:8.2f} {nc:10d}  {func} ({where})")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Report

def _rate(rows: int, run: dict[str, object]) -> float:
    if run.get("error"):
        return float("nan")
    return rows / float(run["seconds"])  # type: ignore[arg-type]


def table(results: dict[str, dict[str, dict[str, object]]]) -> str:
    head = ("| flavor | workload | binlog MB | row changes | sluice --format none | sluice jsonl | sluice parquet "
            "| mysqlbinlog -vv | python-mysql-replication | none / binlog tool | jsonl / binlog tool "
            "| parquet / binlog tool | none / pmr | sluice max RSS MB (none / jsonl / parquet) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for flavor, per in results.items():
        for workload, r in per.items():
            rows = int(r["rows"])  # type: ignore[call-overload]
            modes = ("sluice-none", "sluice-jsonl", "sluice-parquet", "binlog-tool", "pmr")
            rates = {k: _rate(rows, r[k]) for k in modes}  # type: ignore[arg-type]

            def cell(key: str, rates: dict[str, float] = rates, r: dict[str, object] = r) -> str:
                run = r[key]
                if run.get("error"):  # type: ignore[attr-defined]
                    return f"FAILED ({run['error'][:80]})"  # type: ignore[index]
                return f"{rates[key]:,.0f} rows/s ({run['seconds']:.1f}s)"  # type: ignore[index]

            def ratio(a: str, b: str, rates: dict[str, float] = rates) -> str:
                x, y = rates[a], rates[b]
                return "n/a" if x != x or y != y else f"{x / y:.2f}x"

            lines.append(
                f"| {flavor} | {workload} | {int(r['bytes']) / 1e6:.1f} | {rows:,} | {cell('sluice-none')} "  # type: ignore[call-overload]
                f"| {cell('sluice-jsonl')} | {cell('sluice-parquet')} | {cell('binlog-tool')} | {cell('pmr')} "
                f"| {ratio('sluice-none', 'binlog-tool')} | {ratio('sluice-jsonl', 'binlog-tool')} "
                f"| {ratio('sluice-parquet', 'binlog-tool')} | {ratio('sluice-none', 'pmr')} "
                f"| {r['sluice-none']['max_rss_mb']:.0f} / {r['sluice-jsonl']['max_rss_mb']:.0f} "  # type: ignore[index]
                f"/ {r['sluice-parquet']['max_rss_mb']:.0f} |"  # type: ignore[index]
            )
    return "\n".join(lines)


def versions(boxes: dict[str, Sandbox], pmr_python: Path) -> dict[str, str]:
    out = {"python": platform.python_version(), "cpus": str(os.cpu_count()), "machine": platform.machine()}
    out["sluice"] = subprocess.run([*SLUICE, "--version"], capture_output=True, text=True).stdout.strip()
    for flavor, box in boxes.items():
        out[f"{flavor} server"] = box.version
        tool = subprocess.run(box.binlog_tool_argv("--version"), capture_output=True, text=True)
        first = tool.stdout.strip().splitlines()[0] if tool.stdout.strip() else "?"
        out[f"{flavor} binlog tool"] = re.sub(r"^\S*/", "", first)  # the binary's name, not where it lives
    pmr = subprocess.run([str(pmr_python), "-m", "pip", "show", "mysql-replication"], capture_output=True, text=True)
    out["python-mysql-replication"] = next((line.split(":", 1)[1].strip() for line in pmr.stdout.splitlines()
                                            if line.startswith("Version:")), "?")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1/10 of the rows, to check the script end to end")
    parser.add_argument("--flavors", default="mysql,mariadb", help="comma-separated: mysql, mariadb")
    parser.add_argument("--skip-pmr", action="store_true", help="do not run python-mysql-replication")
    parser.add_argument("--profile", action="store_true", help="also cProfile sluice dump --format none")
    args = parser.parse_args()
    scale = QUICK if args.quick else FULL
    OUT.mkdir(parents=True, exist_ok=True)
    precompile()
    pmr_python = ensure_pmr()
    results: dict[str, dict[str, dict[str, object]]] = {}
    boxes: dict[str, Sandbox] = {}
    profiles: list[str] = []
    try:
        for flavor in args.flavors.split(","):
            box, files = prepare(flavor, scale)
            boxes[flavor] = box
            results[flavor] = {}
            for workload, names in files.items():
                log(f"{flavor} {workload}: timing {names}")
                results[flavor][workload] = bench_one(box, names, pmr_python, skip_pmr=args.skip_pmr)
                if args.profile:
                    profiles.append(profile([str(box.binlog_dir / n) for n in names], f"{flavor}-{workload}"))
        info = versions(boxes, pmr_python)
    finally:
        for box in boxes.values():
            box.stop()
    report = table(results)
    stamp = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    header = f"{scale.name} run, {stamp}; " + "; ".join(f"{k}: {v}" for k, v in info.items())
    text = header + "\n\n" + report + ("\n\n" + "\n\n".join(profiles) if profiles else "") + "\n"
    (OUT / f"results-{scale.name}.json").write_text(json.dumps({"info": info, "results": results}, indent=1))
    (OUT / f"results-{scale.name}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
