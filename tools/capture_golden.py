r"""Regenerate the golden binlog files in tests/data/ from throwaway sandbox servers.

Usage (from the repository root, with sluice installed in the environment)::

    python tools/capture_golden.py                 # every flavor
    python tools/capture_golden.py --flavor mysql  # one flavor (mariadb, mysql, mariadb11)
    python tools/capture_golden.py --flavor mariadb --workload versioned   # one workload

For each flavor one sandbox server is started with ``binlog_row_metadata=FULL`` and
``binlog_row_image=FULL``; each workload below runs between two ``FLUSH BINARY LOGS``, so it gets a
binlog file of its own, which is copied to ``tests/data/<flavor>-<workload>.binlog``. Next to it,
``<flavor>-<workload>.jsonl`` is the output of ``sluice dump`` on the copy. The JSON lines must be
reviewed against the SQL below before they are committed: they are the expected output of the
unit tests in ``tests/unit/test_golden.py``.

MariaDB 11.8 (``mariadb11``) also runs with ``binlog_large_commit_threshold`` at its minimum, 10 MiB:
the large-commit workload's file holds a transaction of 12 MB of repeated bytes, so it is kept
compressed (``<flavor>-<workload>.binlog.xz``) and its JSON lines are those of the small table only
(``--tables golden\.small``); the test decompresses it and checks the big rows on their own.

The versioned workload (MariaDB) creates its system-versioned tables inside its own file: the
binlog does not say that a table is versioned, only its DDL does, and ``sluice dump`` of the file
alone replays it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import lzma
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from sluice.cli import main as sluice_main
from sluice.sandbox.server import Sandbox

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
SETTINGS = {"binlog_row_metadata": "FULL", "binlog_row_image": "FULL"}
FLAVOR_SETTINGS = {"mariadb11": {"binlog_large_commit_threshold": "10485760"}}
FLAVORS = ("mariadb", "mysql", "mariadb11")
BULK_ROWS, BULK_BYTES = 4, 3_000_000  # 12 MB in one transaction: past the 10 MiB threshold

MATRIX_COLUMNS = """
    id INT PRIMARY KEY,
    ti TINYINT, biu BIGINT UNSIGNED, fl FLOAT, db DOUBLE,
    d65 DECIMAL(65,30), d10 DECIMAL(10,2), dt DATE, dtm DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2),
    yr YEAR, c10 CHAR(10), vc VARCHAR(100) CHARACTER SET utf8mb4, lat VARCHAR(20) CHARACTER SET latin1,
    bn BINARY(4), vb VARBINARY(20), tx TEXT, bl BLOB, en ENUM('a','bb','ccc'), st SET('x','y','z'),
    b12 BIT(12), b64 BIT(64), pt POINT{json}
"""

MATRIX_ROWS = [
    "(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " NULL, NULL, NULL, NULL, NULL, NULL, NULL{json_null})",
    "(2, -128, 0, -1.5, -2.5e-300, '-99999999999999999999999999999999999.999999999999999999999999999999',"
    " '-0.05', '1000-01-01', '1000-01-01 00:00:00.000000', '1970-01-01 00:00:01.000', '-838:59:59.00',"
    " 1901, '', '', '', X'61626364', X'', '', X'', 'a', '', b'0', b'0', ST_GeomFromText('POINT(0 0)')"
    "{json_min})",
    "(3, 127, 18446744073709551615, 3.25, 1.7976931348623157e308,"
    " '0.000000000000000000000000000001', '12345678.90', '9999-12-31', '9999-12-31 23:59:59.999999',"
    " '2038-01-19 03:14:07.999', '838:59:59.00', 2155, 'abcdefghij', 'naïve 🎉 中文', 'café ÿ',"
    " X'00FF00FF', X'DEADBEEF', 'some text', X'0001FEFF', 'ccc', 'x,z', b'111111111111',"
    " 0xFFFFFFFFFFFFFFFF, ST_GeomFromText('POINT(1.5 -2.25)'){json_max})",
]

JSON_VALUES = {
    "json_null": ", NULL",
    "json_min": ", '[]'",
    "json_max": ", '{\"a\": [1, 2.5, \"x\", null, true, false], \"big\": 18446744073709551615, \"u\": \"é🎉\"}'",
}


def _matrix(server: Sandbox) -> None:
    json = server.flavor == "mysql"
    cols = MATRIX_COLUMNS.format(json=", js JSON" if json else "")
    rows = ",\n".join(r.format(**(JSON_VALUES if json else dict.fromkeys(JSON_VALUES, ""))) for r in MATRIX_ROWS)
    server.sql(f"CREATE TABLE golden.matrix ({cols}) DEFAULT CHARSET=utf8mb4", database="golden")
    _flush(server)
    server.sql(
        "SET NAMES utf8mb4; SET time_zone = '+00:00';\n"
        f"INSERT INTO golden.matrix VALUES {rows};\n"
        "UPDATE golden.matrix SET ti = 1, d10 = '0.01', tm = '-00:00:00.50', st = 'y', vc = 'ünï' WHERE id = 2;\n"
        "UPDATE golden.matrix SET ts = '2024-02-29 12:34:56.789', b12 = b'101', en = 'bb' WHERE id = 1;\n"
        "DELETE FROM golden.matrix WHERE id = 3;\n"
    )


def _multitable(server: Sandbox) -> None:
    server.sql(
        "CREATE TABLE golden.orders (id INT PRIMARY KEY, customer INT, amount DECIMAL(10,2), note VARCHAR(50));\n"
        "CREATE TABLE golden.customers (id INT PRIMARY KEY, name VARCHAR(50), balance DECIMAL(10,2));\n"
        "CREATE TABLE golden.audit (seq BIGINT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(20));\n"
        "INSERT INTO golden.customers VALUES (1, 'Ada', '100.00'), (2, 'Brian', '0.00');"
    )
    _flush(server)
    server.sql(
        "BEGIN;\n"
        "INSERT INTO golden.orders VALUES (10, 1, '10.50', NULL), (11, 2, '99.99', 'gift');\n"
        "UPDATE golden.customers SET balance = balance - 10.50 WHERE id = 1;\n"
        "INSERT INTO golden.audit (what) VALUES ('order 10'), ('order 11');\n"
        "UPDATE golden.orders SET note = 'paid' WHERE id = 10;\n"
        "DELETE FROM golden.customers WHERE id = 2;\n"
        "COMMIT;\n"
        "BEGIN;\n"
        "INSERT INTO golden.orders VALUES (12, 1, '0.01', 'second');\n"
        "COMMIT;\n"
    )


def _compressed_workload(server: Sandbox, prefix: str) -> None:
    server.sql(
        "CREATE TABLE golden.comp (id INT PRIMARY KEY, v VARCHAR(200), n INT);\n"
        "CREATE TABLE golden.comp2 (id INT PRIMARY KEY, w TEXT)"
    )
    _flush(server)
    server.sql(
        f"SET NAMES utf8mb4;\n{prefix}"
        "INSERT INTO golden.comp VALUES (1, REPEAT('abc', 60), 1), (2, REPEAT('xyz', 60), 2), (3, 'short', 3);\n"
        "BEGIN;\n"
        "UPDATE golden.comp SET n = n * 10, v = CONCAT(v, '!') WHERE id <= 2;\n"
        "INSERT INTO golden.comp2 VALUES (1, REPEAT('compress me ', 30));\n"
        "COMMIT;\n"
        "DELETE FROM golden.comp WHERE id = 3;\n"
    )


def _compressed(server: Sandbox) -> None:
    if server.flavor == "mysql":
        _compressed_workload(server, "SET SESSION binlog_transaction_compression = ON;\n")
    else:
        server.sql("SET GLOBAL log_bin_compress = ON; SET GLOBAL log_bin_compress_min_len = 10")
        try:
            _compressed_workload(server, "")
        finally:
            server.sql("SET GLOBAL log_bin_compress = OFF")


def _large_commit(server: Sandbox) -> None:
    server.sql(
        "CREATE TABLE golden.bulk (id INT PRIMARY KEY, b LONGBLOB);\n"
        "CREATE TABLE golden.small (id INT PRIMARY KEY, v VARCHAR(20));\n"
        "SET GLOBAL max_allowed_packet = 67108864"
    )
    _flush(server)
    bulk = "".join(f"INSERT INTO golden.bulk VALUES ({i}, REPEAT('z', {BULK_BYTES}));\n" for i in range(BULK_ROWS))
    server.sql(
        "BEGIN;\n"
        "INSERT INTO golden.small VALUES (1, 'before');\n"
        f"{bulk}"
        "UPDATE golden.small SET v = 'after' WHERE id = 1;\n"
        "COMMIT;\n"
        "INSERT INTO golden.small VALUES (2, 'next');\n"
    )


def _partial_json(server: Sandbox) -> None:
    server.sql(
        "CREATE TABLE golden.docs (id INT PRIMARY KEY, doc JSON, other JSON, n INT);\n"
        "INSERT INTO golden.docs VALUES (1, '{\"a\": [1, 2, 3], \"b\": {\"c\": \"long string value here\"}, "
        "\"d\": 1.5}', '[1]', 0), (2, '[\"x\", \"y\", {\"z\": null}]', NULL, 0)"
    )
    _flush(server)
    server.sql(
        "SET NAMES utf8mb4;\n"
        "SET SESSION binlog_row_image = MINIMAL;\n"
        "SET SESSION binlog_row_value_options = PARTIAL_JSON;\n"
        "UPDATE golden.docs SET doc = JSON_SET(doc, '$.a[1]', 5, '$.e', 'new') WHERE id = 1;\n"
        "UPDATE golden.docs SET doc = JSON_REPLACE(doc, '$.b.c', 'short', '$.d', 2) WHERE id = 1;\n"
        "UPDATE golden.docs SET doc = JSON_REMOVE(doc, '$[2].z'), n = 7 WHERE id = 2;\n"
        "UPDATE golden.docs SET doc = JSON_REMOVE(doc, '$.a'), other = JSON_SET(other, '$[0]', true) WHERE id = 1;\n"
        "UPDATE golden.docs SET doc = '{\"whole\": \"new\"}' WHERE id = 2;\n"
        "INSERT INTO golden.docs VALUES (3, '{}', NULL, 3);\n"
        "DELETE FROM golden.docs WHERE id = 3;\n"
    )


def _versioned(server: Sandbox) -> None:
    server.sql(
        "SET time_zone = '+00:00';\n"
        "CREATE TABLE golden.vt (id INT PRIMARY KEY, name VARCHAR(20), n INT WITHOUT SYSTEM VERSIONING)"
        " WITH SYSTEM VERSIONING;\n"
        "CREATE TABLE golden.vx (id INT PRIMARY KEY, v INT, vs TIMESTAMP(6) GENERATED ALWAYS AS ROW START,"
        " ve TIMESTAMP(6) GENERATED ALWAYS AS ROW END, PERIOD FOR SYSTEM_TIME (vs, ve)) WITH SYSTEM VERSIONING;\n"
        "INSERT INTO golden.vt VALUES (1, 'one', 1), (2, 'two', 2);\n"
        "UPDATE golden.vt SET name = 'uno' WHERE id = 1;\n"
        "UPDATE golden.vt SET n = 20 WHERE id = 2;\n"
        "DELETE FROM golden.vt WHERE id = 2;\n"
        "DELETE HISTORY FROM golden.vt;\n"
        "INSERT INTO golden.vx (id, v) VALUES (1, 10);\n"
        "UPDATE golden.vx SET v = 11 WHERE id = 1;\n"
        "DELETE FROM golden.vx WHERE id = 1;\n"
        "SET SESSION system_versioning_alter_history = KEEP;\n"
        "ALTER TABLE golden.vt ADD COLUMN extra INT;\n"
        "INSERT INTO golden.vt (id, name, extra) VALUES (3, 'three', 3);\n"
        "ALTER TABLE golden.vt DROP SYSTEM VERSIONING;\n"
        "UPDATE golden.vt SET name = 'tres' WHERE id = 3;\n"
        "ALTER TABLE golden.vt ADD SYSTEM VERSIONING;\n"
        "UPDATE golden.vt SET name = 'drei' WHERE id = 3;\n"
    )


WORKLOADS: dict[str, tuple[tuple[str, ...], Callable[[Sandbox], None]]] = {
    "matrix": (("mariadb", "mysql"), _matrix),
    "multitable": (("mariadb", "mysql", "mariadb11"), _multitable),
    "compressed": (("mariadb", "mysql", "mariadb11"), _compressed),
    "partial-json": (("mysql",), _partial_json),
    "large-commit": (("mariadb11",), _large_commit),
    "versioned": (("mariadb", "mariadb11"), _versioned),
}


def _flush(server: Sandbox) -> None:
    server.sql("FLUSH BINARY LOGS")


def _dump(path: Path, *options: str) -> str:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # the dump writes to sys.stdout.buffer
    with contextlib.redirect_stdout(out):
        code = sluice_main(["dump", *options, str(path)])
    if code != 0:
        raise SystemExit(f"sluice dump {path.name} failed with exit code {code}")
    out.flush()
    return out.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]


def capture(flavor: str, out_dir: Path, workloads: Sequence[str] | None = None) -> None:
    """Run the workloads of ``flavor`` (those named, or all) and write their files to ``out_dir``."""
    settings = {**SETTINGS, **FLAVOR_SETTINGS.get(flavor, {})}
    with Sandbox.start(flavor, settings=settings) as server:  # type: ignore[arg-type]
        print(f"{flavor} {server.version}", file=sys.stderr)
        server.sql("CREATE DATABASE golden")
        for name, (flavors, workload) in WORKLOADS.items():
            if flavor not in flavors or (workloads and name not in workloads):
                continue
            workload(server)
            current = server.binlog_files()[-1]
            _flush(server)
            target = out_dir / f"{flavor}-{name}.binlog"
            shutil.copyfile(server.binlog_dir / current, target)
            if name == "large-commit":
                target.with_suffix(".jsonl").write_text(_dump(target, "--tables", r"golden\.small"))
                packed = target.with_name(target.name + ".xz")
                packed.write_bytes(lzma.compress(target.read_bytes()))
                target.unlink()
                target = packed
            else:
                target.with_suffix(".jsonl").write_text(_dump(target))
            print(f"  {target.name}: {target.stat().st_size} bytes", file=sys.stderr)


def run_captures(capture_one: Callable[..., None], out: Path, what: str, *,
                 workloads: Sequence[str] = ()) -> int:
    """Parse ``--flavor`` / ``--out`` (and ``--workload`` when ``workloads`` names them) and run
    ``capture_one(flavor, out_dir)`` for each flavor, with the workloads asked for."""
    parser = argparse.ArgumentParser(description=f"Regenerate the {what}.")
    parser.add_argument("--flavor", choices=FLAVORS, action="append")
    parser.add_argument("--out", type=Path, default=out)
    if workloads:
        parser.add_argument("--workload", choices=workloads, action="append",
                            help="only this workload (default all); the other files stay as they are")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for flavor in args.flavor or FLAVORS:
        if workloads:
            capture_one(flavor, args.out, args.workload)
        else:
            capture_one(flavor, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_captures(capture, DATA, "golden binlog files of tests/data", workloads=tuple(WORKLOADS)))
