"""``sluice demo`` end to end on both flavors: the README's first command must work."""

import re
import subprocess
import sys

import pytest


@pytest.mark.parametrize("flavor", [pytest.param("mariadb", marks=pytest.mark.mariadb),
                                    pytest.param("mysql", marks=pytest.mark.mysql)])
def test_demo_streams_every_change(flavor):
    out = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "demo", "--flavor", flavor, "--orders", "20"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    summary = re.search(r"(\d+) row changes \((\d+) inserts, (\d+) updates, (\d+) deletes\)", out.stderr)
    assert summary, out.stderr
    total, inserts, updates, deletes = map(int, summary.groups())
    # 5 customers + 20 orders with 1..3 lines each; 5 paid + 2 cancellations + 2 e-mail updates; 2 x order lines
    lines = sum(1 + o % 3 for o in range(1, 21))
    assert inserts == 5 + 20 + lines
    assert updates == 5 + 2 + 2
    assert deletes == sum(1 + o % 3 for o in (10 - 5, 20 - 5))
    assert total == len(out.stdout.splitlines())
