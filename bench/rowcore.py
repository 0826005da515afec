"""Row-body decoding: the compiled core against its pure-Python twin, on the same bodies.

Two tables shaped like the decoding benchmark's workloads (W1: INT, INT, CHAR(120), CHAR(60) in
utf8mb4; W2: integers, DECIMAL(15,5), DOUBLE, DATETIME(6), TIMESTAMP(3), DATE, TIME(3), VARCHAR,
TEXT, YEAR), a rows-event body of 1,000 rows each, decoded for two seconds per path; the two
results are checked equal first. This is the row plan alone, without framing, events or records:
``bench/decode.py`` measures whole runs. Run from the repository root::

    .venv/bin/python bench/rowcore.py
"""

from __future__ import annotations

import struct
import sys
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.unit.binlog.encoders import (
    char_meta,
    encode_date,
    encode_datetime2,
    encode_decimal,
    encode_time2,
    encode_timestamp2,
)

from sluice.binlog import rowplan
from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.constants import ColumnType as T


@dataclass
class Map:
    column_types: tuple[int, ...]
    column_meta: tuple[int, ...]
    columns: tuple[ColumnInfo, ...]
    schema: str = "bench"
    table: str = "t"

    @property
    def column_count(self) -> int:
        return len(self.column_types)

    @property
    def raw(self) -> bytes:
        return repr((self.column_types, self.column_meta, self.columns)).encode()


def _var(data: bytes, width: int) -> bytes:
    return len(data).to_bytes(width, "little") + data


def w1() -> tuple[Map, bytes]:
    utf8, n = ColumnInfo(collation=255), ColumnInfo()
    m = Map((T.LONG, T.LONG, T.STRING, T.STRING), (0, 0, char_meta(T.STRING, 480), char_meta(T.STRING, 240)),
            (n, n, utf8, utf8))
    rows = [b"\0" + struct.pack("<ii", i, i * 3) + _var((f"{i:011d}-" * 10)[:119].encode(), 2)
            + _var((f"{i * 7:011d}-" * 5)[:59].encode(), 1) for i in range(1000)]
    return m, b"".join(rows)


def w2() -> tuple[Map, bytes]:
    n = ColumnInfo()
    utf8 = ColumnInfo(collation=255)
    m = Map((T.LONG, T.LONGLONG, T.NEWDECIMAL, T.DOUBLE, T.DATETIME2, T.TIMESTAMP2, T.DATE, T.TIME2, T.VARCHAR,
             T.BLOB, T.YEAR), (0, 0, 15 << 8 | 5, 8, 6, 3, 0, 3, 400, 2, 0),
            (ColumnInfo(unsigned=True), n, n, n, n, n, n, n, utf8, utf8, n))
    rows = [b"\0\0" + struct.pack("<Iq", i, i * 1000003) + encode_decimal(Decimal(i) / 7, 15, 5)
            + struct.pack("<d", i * 0.25) + encode_datetime2(2024, 5, 17, 12, 30, i % 60, 123456, 6)
            + encode_timestamp2(1700000000 + i, 123000, 3) + encode_date(2024, 1, 2)
            + encode_time2(i % 2 == 0, 12, 1, 2, 345000, 3) + _var(f"héllo wörld {i}".encode(), 2)
            + _var(b"text " * 20, 2) + bytes([124]) for i in range(1000)]
    return m, b"".join(rows)


def rate(plan: rowplan.RowPlan, body: bytes, full: int) -> float:
    count = 0
    started = time.perf_counter()
    while time.perf_counter() - started < 2.0:
        plan.decode_rows("write", body, 0, len(body), full, None, False)
        count += 1000
    return count / (time.perf_counter() - started)


def main() -> int:
    if rowplan._compiled_core is None:
        print("the compiled core is not built: pip install -e . first", file=sys.stderr)
        return 1
    print("| table | Python twin | compiled core | ratio |\n|---|---|---|---|")
    for name, (m, body) in (("W1", w1()), ("W2", w2())):
        plan = rowplan.plan_for(m)
        full = (1 << m.column_count) - 1
        results = {}
        for on in (False, True):
            rowplan.use_compiled(on)
            results[on] = repr(plan.decode_rows("write", body, 0, len(body), full, None, False))
        assert results[False] == results[True], f"{name}: the two paths differ"
        rates = {}
        for on in (False, True):
            rowplan.use_compiled(on)
            rates[on] = rate(plan, body, full)
        ratio = rates[True] / rates[False]
        print(f"| {name} | {rates[False]:,.0f} rows/s | {rates[True]:,.0f} rows/s | {ratio:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
