"""``sluice demo`` end to end on every flavor: the README's first command must work."""

import re
import subprocess
import sys

import deltalake
import pytest


@pytest.mark.spark
@pytest.mark.parametrize("flavor", [pytest.param("mariadb", marks=pytest.mark.mariadb),
                                    pytest.param("mysql", marks=pytest.mark.mysql),
                                    pytest.param("mariadb11", marks=pytest.mark.mariadb11)])
def test_demo_mirrors_every_change_and_verifies(flavor, tmp_path):
    lake = tmp_path / "lake"
    out = subprocess.run(
        [sys.executable, "-m", "sluice.cli", "demo", "--flavor", flavor, "--orders", "20", "--lake", str(lake)],
        capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    summary = re.search(r"(\d+) changes \((\d+) inserts, (\d+) updates, (\d+) deletes\)", out.stderr)
    assert summary, out.stderr[-4000:]
    total, inserts, updates, deletes = map(int, summary.groups())
    # 5 customers + 20 orders with 1..3 lines each; 5 paid + 2 cancellations + 2 e-mail updates; 2 x order lines
    lines = sum(1 + o % 3 for o in range(1, 21))
    assert inserts == 5 + 20 + lines
    assert updates == 5 + 2 + 2
    assert deletes == sum(1 + o % 3 for o in (10 - 5, 20 - 5))
    assert total == inserts + updates + deletes
    assert "verify: all tables equal" in out.stderr
    log = deltalake.DeltaTable(str(lake / "_sluice" / "changes")).to_pyarrow_table().to_pylist()
    assert sum(1 for r in log if r["op"] != "ddl") == total
    assert any(r["op"] == "ddl" and "ADD COLUMN email" in r["ddl"] for r in log)  # the mid-stream ALTER
    assert len(deltalake.DeltaTable(str(lake / "shop" / "orders")).to_pyarrow_table()) == 20
