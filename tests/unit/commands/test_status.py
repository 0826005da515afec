"""``sluice status`` on a lake written by the Delta writer: each table's version, files and pending
changes, how long the oldest has waited to be MERGEd, the stream position, and an unreadable
table named as such."""

from __future__ import annotations

import argparse
import io
import json
import shutil
import time
from pathlib import Path

import pytest

from sluice.binlog.position import Checkpoint
from sluice.commands.status import run
from sluice.errors import ConfigError
from sluice.lake.sink import DeltaLake
from tests.unit.lake.test_pending import ALWAYS_LATER
from tests.unit.lake.test_sink import Log, items

pytestmark = pytest.mark.unit


def _status(lake: Path, *, as_json: bool) -> tuple[int, str]:
    out = io.StringIO()
    code = run(argparse.Namespace(lake=str(lake), config=None, json=as_json), out)
    return code, out.getvalue()


def test_status_shows_each_mirror_its_pending_changes_and_the_stream(tmp_path: Path):
    root = tmp_path / "lake"
    lake = DeltaLake(root, "p", cadence=ALWAYS_LATER)
    log = Log()
    lake.write_batch(0, [items([log.insert(id=1, name="a", qty=1)])], position=Checkpoint("binlog.000001", 200))
    started = time.time()
    lake.write_batch(1, [items([log.insert(id=2, name="b", qty=2), log.insert(id=3, name="c", qty=3)])],
                     position=Checkpoint("binlog.000001", 420, "u:1-9"))
    time.sleep(1.1)
    code, text = _status(root, as_json=True)
    assert code == 0
    report = json.loads(text)
    assert report["stream"]["position"] == {"file": "binlog.000001", "pos": 420, "gtid_set": "u:1-9"}
    (mirror,) = [t for t in report["tables"] if t["table"] == "shop.items"]
    assert mirror["pending"] == 2  # batch 1 waits in the pending table (the first filled the mirror)
    assert 1.0 <= mirror["behind_s"] <= time.time() - started + 1
    assert mirror["files"] >= 1 and mirror["bytes"] > 0 and mirror["version"] >= 0
    assert any(t["kind"] == "changes" for t in report["tables"])
    lake.flush_all()
    report = json.loads(_status(root, as_json=True)[1])
    (mirror,) = [t for t in report["tables"] if t["table"] == "shop.items"]
    assert mirror["pending"] == 0 and mirror["behind_s"] == 0.0
    code, text = _status(root, as_json=False)
    assert code == 0 and "shop.items" in text and "binlog.000001:420" in text and "behind" in text


def test_an_unreadable_mirror_is_named_and_fails_the_command(tmp_path: Path):
    root = tmp_path / "lake"
    lake = DeltaLake(root, "p")
    lake.write_batch(0, [items([Log().insert(id=1, name="a", qty=1)])])
    shutil.rmtree(root / "shop" / "items" / "_delta_log")
    (root / "shop" / "items" / "_delta_log").mkdir()
    code, text = _status(root, as_json=False)
    assert code == 1 and "shop.items" in text and "unreadable" in text


def test_a_folder_without_tables_is_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="no Delta tables"):
        _status(tmp_path, as_json=False)
