"""Golden binlog files: ``sluice dump`` of each file in tests/data equals its reviewed JSON lines.

The files were captured from real MariaDB (10.11, 11.8) and MySQL servers by
``tools/capture_golden.py`` (see tests/data/README.md). MariaDB 11.8's large-commit file is kept
compressed and checked on its own. Besides the exact output, these tests check the ``--format none`` counts,
``--tables`` filtering, and that a copy cut mid-event or with one flipped byte stops the dump
with a one-line error naming the file and the offset, and a non-zero exit.
"""

from __future__ import annotations

import base64
import json
import lzma
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from sluice.cli import main as sluice_main

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"
GOLDEN = sorted(DATA.glob("*.binlog"))
EXPECTED_FILES = {
    "mariadb-compressed.binlog", "mariadb-matrix.binlog", "mariadb-multitable.binlog",
    "mariadb11-compressed.binlog", "mariadb11-multitable.binlog",
    "mariadb-versioned.binlog", "mariadb11-versioned.binlog",
    "mysql-compressed.binlog", "mysql-matrix.binlog", "mysql-multitable.binlog", "mysql-partial-json.binlog",
}
IDS = [p.stem for p in GOLDEN]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = sluice_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_every_golden_file_is_there() -> None:
    assert {p.name for p in GOLDEN} == EXPECTED_FILES
    for path in GOLDEN:
        assert path.with_suffix(".jsonl").exists(), path.name
        assert path.read_bytes()[:4] == b"\xfebin"


@pytest.mark.parametrize("path", GOLDEN, ids=IDS)
def test_dump_equals_the_reviewed_json_lines(path: Path, capsys) -> None:
    code, out, err = _run(capsys, "dump", str(path))
    assert code == 0, err
    assert out == path.with_suffix(".jsonl").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", GOLDEN, ids=IDS)
def test_transactions_held_in_temporary_files_print_the_same(path: Path, capsys, tmp_path: Path) -> None:
    code, out, err = _run(capsys, "dump", "--transaction-memory", "0", "--spill-dir", str(tmp_path), str(path))
    assert code == 0, err
    assert out == path.with_suffix(".jsonl").read_text(encoding="utf-8")
    assert list(tmp_path.iterdir()) == []


def test_a_spill_directory_that_is_not_there_is_a_clear_error(capsys, tmp_path: Path) -> None:
    code, out, err = _run(capsys, "dump", "--spill-dir", str(tmp_path / "nowhere"), str(GOLDEN[0]))
    assert code != 0 and out == ""
    assert "--spill-dir" in err and "nowhere" in err and "Traceback" not in err


@pytest.mark.parametrize("path", GOLDEN, ids=IDS)
def test_format_none_counts(path: Path, capsys) -> None:
    lines = path.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines()
    code, events, err = _run(capsys, "dump", "--events", str(path))
    assert code == 0, err
    code, out, err = _run(capsys, "dump", "--format", "none", str(path))
    assert code == 0, err
    summary = re.fullmatch(r"(\d+) events, (\d+) transactions, (\d+) row changes in .*", out.strip())
    assert summary, out
    n_events, n_transactions, n_changes = (int(g) for g in summary.groups())
    assert n_events == len(events.splitlines())
    assert n_changes == len(lines)
    assert n_transactions >= len({c["gtid"] for c in map(json.loads, lines)})


@pytest.mark.parametrize("path", GOLDEN, ids=IDS)
def test_tables_filter(path: Path, capsys) -> None:
    expected = [json.loads(line) for line in path.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines()]
    tables = sorted({c["table"] for c in expected})
    assert tables
    for table in tables:
        code, out, err = _run(capsys, "dump", "--tables", rf"golden\.{table}", str(path))
        assert code == 0, err
        assert _filtered(out) == _without_row(c for c in expected if c["table"] == table)
    code, out, err = _run(capsys, "dump", "--tables", r"nothing\..*", str(path))
    assert (code, out) == (0, "")
    code, out, err = _run(capsys, "dump", "--exclude-tables", rf"golden\.{tables[0]}", str(path))
    assert code == 0, err
    assert _filtered(out) == _without_row(c for c in expected if c["table"] != tables[0])


def _without_row(changes: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in c.items() if k != "row"} for c in changes]


def _filtered(out: str) -> list[dict[str, Any]]:
    """Filtered changes without ``row``, after checking that ``(pos, row)`` still ascends strictly.

    Inside a MySQL TRANSACTION_PAYLOAD, ``row`` counts on across the inner rows events that are
    decoded, so a filtered dump numbers them from 0 again; outside one, it is unchanged.
    """
    changes = [json.loads(line) for line in out.splitlines()]
    keys = [(c["pos"], c["row"]) for c in changes]
    assert keys == sorted(set(keys))
    return _without_row(changes)


@pytest.mark.parametrize("path", [p for p in GOLDEN if "compressed" not in p.name], ids=lambda p: p.stem)
def test_tables_filter_keeps_row_numbers_outside_payloads(path: Path, capsys) -> None:
    expected = [json.loads(line) for line in path.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines()]
    for table in sorted({c["table"] for c in expected}):
        code, out, err = _run(capsys, "dump", "--tables", rf"golden\.{table}", str(path))
        assert code == 0, err
        assert [json.loads(line) for line in out.splitlines()] == [c for c in expected if c["table"] == table]


def test_all_files_in_one_dump(capsys) -> None:
    code, out, err = _run(capsys, "dump", *map(str, GOLDEN))
    assert code == 0, err
    assert out == "".join(p.with_suffix(".jsonl").read_text(encoding="utf-8") for p in GOLDEN)


def _first_rows_event(path: Path) -> tuple[int, int]:
    """(offset, size) of the first rows event (or transaction payload) of a golden file."""
    first = json.loads(path.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines()[0])
    data = path.read_bytes()
    offset = first["pos"]
    return offset, int.from_bytes(data[offset + 9 : offset + 13], "little")


@pytest.mark.parametrize("path", GOLDEN, ids=IDS)
def test_truncated_mid_event_is_a_one_line_error(path: Path, tmp_path: Path, capsys) -> None:
    offset, size = _first_rows_event(path)
    cut = tmp_path / f"cut-{path.name}"
    cut.write_bytes(path.read_bytes()[: offset + size // 2])
    code, _out, err = _run(capsys, "dump", str(cut))
    assert code != 0
    assert len(err.strip().splitlines()) == 1, err
    assert str(cut) in err and f"offset {offset}" in err


@pytest.mark.parametrize("path", GOLDEN, ids=IDS)
def test_flipped_byte_is_a_one_line_error(path: Path, tmp_path: Path, capsys) -> None:
    offset, size = _first_rows_event(path)
    data = bytearray(path.read_bytes())
    data[offset + 19 + (size - 23) // 2] ^= 0x10  # inside the body, before the checksum
    bad = tmp_path / f"flipped-{path.name}"
    bad.write_bytes(bytes(data))
    code, _out, err = _run(capsys, "dump", str(bad))
    assert code != 0
    assert len(err.strip().splitlines()) == 1, err
    assert str(bad) in err and f"offset {offset}" in err


LARGE_COMMIT = DATA / "mariadb11-large-commit.binlog.xz"
BULK_ROWS, BULK_BYTES = 4, 3_000_000  # tools/capture_golden.py: 12 MB in one transaction


@pytest.fixture(scope="module")
def large_commit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MariaDB 11.8's file that began as a large transaction's cache (binlog_large_commit_threshold):
    its GTID event is padded to end at offset 4096, the transaction's events follow with log_pos 0."""
    path = tmp_path_factory.mktemp("large") / "mariadb11-large-commit.binlog"
    path.write_bytes(lzma.decompress(LARGE_COMMIT.read_bytes()))
    return path


def test_large_commit_file_small_table_equals_the_reviewed_json_lines(large_commit: Path, capsys) -> None:
    code, out, err = _run(capsys, "dump", "--tables", r"golden\.small", str(large_commit))
    assert code == 0, err
    assert out == DATA.joinpath("mariadb11-large-commit.jsonl").read_text(encoding="utf-8")
    code, events, err = _run(capsys, "dump", "--events", str(large_commit))
    assert code == 0, err
    gtid = next(json.loads(line) for line in events.splitlines() if '"GTID_EVENT"' in line)
    assert gtid["pos"] + gtid["size"] == 4096


def test_large_commit_file_big_rows_arrive_whole(large_commit: Path, capsys) -> None:
    code, out, err = _run(capsys, "dump", "--tables", r"golden\.bulk", str(large_commit))
    assert code == 0, err
    changes = [json.loads(line) for line in out.splitlines()]
    assert [c["after"]["id"] for c in changes] == list(range(BULK_ROWS))
    assert all(base64.b64decode(c["after"]["b"]) == b"z" * BULK_BYTES for c in changes)
    assert len({c["gtid"] for c in changes}) == 1
    code, out, err = _run(capsys, "dump", "--format", "none", str(large_commit))
    assert code == 0, err
    assert re.match(rf"\d+ events, 2 transactions, {BULK_ROWS + 3} row changes in ", out), out
