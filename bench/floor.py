"""The floor of pure-Python binlog decoding: the least work CPython must do for the W1 files.

``floor.py decode FILE`` is an oracle, not a decoder: it knows in advance that every rows event of
the file is for W1's table ``(id INT, k INT, c CHAR(120), pad CHAR(60))`` in utf8mb4, and does only
what any decoder of that file must do and nothing more — frame every event by its 19-byte header,
verify its CRC32 (the default the decoding issue asks for), and for every row of every WRITE /
UPDATE / DELETE rows event (v1 and v2) read the null bitmap, the two integers (one ``struct`` call)
and the two length-prefixed strings, decoded as UTF-8, into a 4-tuple. No TABLE_MAP is parsed, no
schema is looked up, no transaction is tracked, no record or dict is built, nothing is printed but
the counts. Any decoder written in Python does at least this much work per event and per row.

``floor.py lean FILE`` keeps the floor's framing but decodes the rows with sluice's own machinery:
every TABLE_MAP's row plan (``sluice.binlog.rowplan``, cached by the map's bytes, a map decoded by
``EventParser`` the first time it is seen) and the plan's ``decode_rows`` for every rows event. It
tells how much of sluice's time is its event objects, records and transaction tracking (what lean
does not do) and how much is the row decoding itself.

``bench/frame_crc.c`` is the physical floor: framing and the CRC32 of every event in C (zlib's
``crc32``), no body decoded; ``floor.py`` compiles it with ``cc -O2 ... -lz`` into ``bench/out``.

``floor.py`` (no arguments) times, on the W1 files of the decoding benchmark (``bench/decode.py``,
full scale, under ``bench/out/full``) and pinned to one core like it: this floor, the lean variant,
``sluice dump --format none`` and the server's ``mysqlbinlog -vv --base64-output=decode-rows`` (resp.
``mariadb-binlog``), and the C floor, in one run, and prints the ratios. If the floor is slower than half of
mysqlbinlog's time, "decode W1 at >= 2x mysqlbinlog" is out of reach of any CPython decoder.

Run from the repository root::

    .venv/bin/python bench/floor.py [--flavors mysql,mariadb] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

HEADER = struct.Struct("<xxxxBxxxxIxxxxxx")  # type_code, event_length of the 19-byte common header
WRITE_ROWS = frozenset({23, 30})  # WRITE_ROWS_EVENT_V1, WRITE_ROWS_EVENT (v2)
UPDATE_ROWS = frozenset({24, 31})
DELETE_ROWS = frozenset({25, 32})
V2 = frozenset({30, 31, 32})
ROWS = WRITE_ROWS | UPDATE_ROWS | DELETE_ROWS
ROW_HEAD = struct.Struct("<BiiH")  # null bitmap (4 columns: 1 byte), id, k, length of c (CHAR(120) utf8mb4: 2 bytes)


def decode(path: str) -> tuple[int, int]:
    """Frame, check and decode every W1 row of ``path``; (events, rows)."""
    data = open(path, "rb").read()  # noqa: SIM115 - one read, like a buffered reader of a file this size
    view = memoryview(data)
    unpack_header = HEADER.unpack_from
    unpack_row = ROW_HEAD.unpack_from
    crc32 = zlib.crc32
    from_bytes = int.from_bytes
    events = rows = 0
    off = 4
    end = len(data)
    out: list[tuple[int, int, str, str]] = []
    while off < end:
        type_code, length = unpack_header(data, off)
        body_end = off + length - 4
        if crc32(view[off:body_end]) != from_bytes(data[body_end:body_end + 4], "little"):
            raise SystemExit(f"{path}: checksum mismatch at {off}")
        events += 1
        if type_code in ROWS:
            p = off + 19 + 8  # table id (6) + flags (2)
            if type_code in V2:
                p += struct.unpack_from("<H", data, p)[0]  # extra data, its length included
            p += 1 + 1  # column count (4: one byte) + columns-present bitmap
            update = type_code in UPDATE_ROWS
            if update:
                p += 1  # the after image's bitmap
            while p < body_end:
                for _ in range(2 if update else 1):
                    _nulls, id_, k, clen = unpack_row(data, p)
                    p += 11
                    c = data[p:p + clen].decode("utf-8")
                    p += clen
                    plen = data[p]
                    pad = data[p + 1:p + 1 + plen].decode("utf-8")
                    p += 1 + plen
                    out.append((id_, k, c, pad))
                rows += 1
            out.clear()
        off += length
    return events, rows


def lean(path: str) -> tuple[int, int]:
    """The floor's framing, sluice's TABLE_MAP decoding and row plans; (events, rows)."""
    from sluice.binlog.parser import EventParser, ParserConfig
    from sluice.binlog.rowplan import plan_for

    data = open(path, "rb").read()  # noqa: SIM115
    view = memoryview(data)
    parser = EventParser(ParserConfig())
    unpack_header = HEADER.unpack_from
    table_id = struct.Struct("<IH").unpack_from
    crc32 = zlib.crc32
    from_bytes = int.from_bytes
    kinds = {t: "write" for t in WRITE_ROWS} | {t: "update" for t in UPDATE_ROWS} | {t: "delete" for t in DELETE_ROWS}
    plans: dict[bytes, object] = {}
    by_id: dict[int, object] = {}
    events = rows = 0
    off = 4
    end = len(data)
    while off < end:
        type_code, length = unpack_header(data, off)
        body_end = off + length - 4
        if crc32(view[off:body_end]) != from_bytes(data[body_end:body_end + 4], "little"):
            raise SystemExit(f"{path}: checksum mismatch at {off}")
        events += 1
        kind = kinds.get(type_code)
        if kind is not None:
            low, high = table_id(data, off + 19)
            p = off + 19 + 8
            if type_code in V2:
                p += struct.unpack_from("<H", data, p)[0]
            nb = (data[p] + 7) >> 3
            p += 1
            present = from_bytes(data[p:p + nb], "little")
            p += nb
            after = None
            if kind == "update":
                after = from_bytes(data[p:p + nb], "little")
                p += nb
            plan = by_id[low | high << 32]
            rows += len(plan.decode_rows(kind, data, p, body_end, present, after, False))  # type: ignore[attr-defined]
        elif type_code == 19:  # TABLE_MAP_EVENT
            raw = data[off + 19:body_end]
            plan = plans.get(raw)
            if plan is None:
                table_map = parser.parse(data[off:off + length], file=path, offset=off)
                plan = plans[raw] = plan_for(table_map)
            by_id[from_bytes(raw[:6], "little")] = plan
        elif type_code == 15:  # FORMAT_DESCRIPTION_EVENT: the parser needs its post-header lengths
            parser.parse(data[off:off + length], file=path, offset=off)
        off += length
    return events, rows


def main() -> int:
    if len(sys.argv) >= 3 and sys.argv[1] in ("decode", "lean"):
        events = rows = 0
        work = decode if sys.argv[1] == "decode" else lean
        for path in sys.argv[2:]:
            e, r = work(path)
            events += e
            rows += r
        print(f"{events} events, {rows} row changes")
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--flavors", default="mysql,mariadb", help="comma-separated: mysql, mariadb")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command; the best is kept")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import decode as bench  # the decoding benchmark's servers, files and timer

    frame_crc = bench.OUT / "frame_crc"
    source = Path(__file__).resolve().parent / "frame_crc.c"
    if not frame_crc.exists() or frame_crc.stat().st_mtime < source.stat().st_mtime:
        bench.OUT.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cc", "-O2", "-o", str(frame_crc), str(source), "-lz"], check=True)
    results: dict[str, dict[str, object]] = {}
    for flavor in args.flavors.split(","):
        box, files = bench.prepare(flavor, bench.FULL)
        try:
            paths = [str(box.binlog_dir / name) for name in files["W1"]]
            commands = {
                "c-frame": [str(frame_crc), *paths],
                "floor": [sys.executable, __file__, "decode", *paths],
                "lean": [sys.executable, __file__, "lean", *paths],
                "sluice-none": [*bench.SLUICE, "dump", "--format", "none", *paths],
                "binlog-tool": box.binlog_tool_argv("-vv", "--base64-output=decode-rows", *paths),
            }
            best: dict[str, float] = {}
            counts: dict[str, str] = {}
            for _ in range(args.repeat):  # alternate the contenders, keep each one's best
                for name, argv in commands.items():
                    run = bench.timed(argv, keep_stdout=name != "binlog-tool")  # the tool writes to /dev/null
                    if run.error:
                        raise SystemExit(f"{name} failed: {run.error}")
                    best[name] = min(best.get(name, float("inf")), run.seconds)
                    match = re.search(r"(\d+) events.*?(\d+) row changes", run.stdout)
                    if match:
                        counts[name] = f"{match[1]} events, {match[2]} rows"
        finally:
            box.stop()
        if counts.get("floor", "").split(", ")[1:] != counts.get("sluice-none", "").split(", ")[1:]:
            raise SystemExit(f"{flavor}: the floor and sluice disagree on the rows: {counts}")
        results[flavor] = {"seconds": best, "counts": counts}
        tool = best["binlog-tool"]
        bench.log(
            f"{flavor} W1 ({counts['floor']}): floor {best['floor']:.2f}s, lean {best['lean']:.2f}s, "
            f"sluice --format none {best['sluice-none']:.2f}s, binlog tool {tool:.2f}s; "
            f"2x the binlog tool needs <= {tool / 2:.2f}s"
        )
    print("| flavor | framing + CRC in C | floor (pure Python, oracle) | lean (sluice's row plans) "
          "| sluice --format none | mysqlbinlog -vv | tool / floor | tool / lean | tool / sluice "
          "| time allowed by 2x tool |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for flavor, r in results.items():
        s = r["seconds"]
        assert isinstance(s, dict)
        budget = s["binlog-tool"] / 2
        tool = s["binlog-tool"]
        print(f"| {flavor} | {s['c-frame']:.2f}s | {s['floor']:.2f}s | {s['lean']:.2f}s "
              f"| {s['sluice-none']:.2f}s | {tool:.2f}s "
              f"| {tool / s['floor']:.2f}x | {tool / s['lean']:.2f}x | {tool / s['sluice-none']:.2f}x "
              f"| {budget:.2f}s |")
    (bench.OUT / "floor.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
