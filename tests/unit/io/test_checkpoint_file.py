"""The checkpoint file: round trip, atomic replace, damaged and foreign files (no server)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sluice.binlog.position import Checkpoint
from sluice.errors import ConfigError
from sluice.io.checkpoint_file import VERSION, CheckpointFile

pytestmark = pytest.mark.unit

CP = Checkpoint("binlog.000007", 1578, "0-1-17")


def test_missing_file_loads_none(tmp_path: Path) -> None:
    assert CheckpointFile(tmp_path / "checkpoint.json").load() is None


def test_round_trip_with_extra(tmp_path: Path) -> None:
    f = CheckpointFile(tmp_path / "checkpoint.json")
    f.save(CP, {"output_bytes": 12345, "batch": {"id": 3, "tables": ["a", "b"]}})
    assert f.load() == (CP, {"output_bytes": 12345, "batch": {"id": 3, "tables": ["a", "b"]}})
    doc = json.loads((tmp_path / "checkpoint.json").read_text())
    assert doc["version"] == VERSION == 1
    assert doc["checkpoint"] == {"file": "binlog.000007", "pos": 1578, "gtid_set": "0-1-17"}
    assert doc["output_bytes"] == 12345
    f.save(Checkpoint("binlog.000008", 4))
    assert f.load() == (Checkpoint("binlog.000008", 4), {})


def test_save_replaces_atomically_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.json"
    f = CheckpointFile(path)
    f.save(CP)
    inode = path.stat().st_ino
    f.save(Checkpoint("binlog.000008", 4))
    assert path.stat().st_ino != inode  # a new file renamed over the old one, not rewritten in place
    assert sorted(os.listdir(tmp_path)) == ["checkpoint.json"]


def test_stale_temp_file_does_not_break_load_and_is_swept(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.json"
    f = CheckpointFile(path)
    f.save(CP)
    stale = tmp_path / ".checkpoint.json.abc123.tmp"
    stale.write_text('{"version": 1, "checkpoint": {"file": "binl')  # a save cut by a crash
    assert f.load() == (CP, {})
    f.save(Checkpoint("binlog.000008", 4))
    assert not stale.exists()
    assert f.load() == (Checkpoint("binlog.000008", 4), {})
    other = tmp_path / ".other.json.x.tmp"
    other.write_text("{}")
    f.save(CP)
    assert other.exists()  # another checkpoint's temp files are not touched


@pytest.mark.parametrize(
    "text, words",
    [
        ('{"version": 1, "checkpoint": {"file": "binl', "not valid JSON"),
        ("", "not valid JSON"),
        ("[1, 2]", "JSON list"),
        ('{"version": 2, "checkpoint": {"file": "b.000001", "pos": 4}}', "version 2"),
        ('{"checkpoint": {"file": "b.000001", "pos": 4}}', "version None"),
        ('{"version": 1}', "no 'checkpoint'"),
        ('{"version": 1, "checkpoint": {"file": "b.000001", "pos": "x"}}', "damaged"),
    ],
)
def test_damaged_files_are_config_errors_naming_the_file(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "checkpoint.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        CheckpointFile(path).load()
    message = str(info.value)
    assert str(path) in message and words in message
    assert "remove it" in message or "use the sluice that wrote it" in message


def test_binary_garbage_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match="checkpoint"):
        CheckpointFile(path).load()


def test_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "checkpoint.json"
    with pytest.raises(ConfigError) as info:
        CheckpointFile(path).save(CP)
    assert "does not exist" in str(info.value) and str(tmp_path / "nope") in str(info.value)
    assert CheckpointFile(path).load() is None


def test_extra_fields_must_be_json_and_not_reserved(tmp_path: Path) -> None:
    f = CheckpointFile(tmp_path / "checkpoint.json")
    with pytest.raises(ConfigError, match="sluice's own"):
        f.save(CP, {"checkpoint": 1})
    with pytest.raises(ConfigError, match="plain JSON"):
        f.save(CP, {"when": object()})
    with pytest.raises(ConfigError, match="plain JSON"):
        f.save(CP, {"x": float("nan")})
    assert f.load() is None  # nothing was written by the failed saves
    assert os.listdir(tmp_path) == []


def test_path_that_is_a_directory_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.json"
    path.mkdir()
    with pytest.raises(ConfigError, match="cannot write the checkpoint file"):
        CheckpointFile(path).save(CP)
    with pytest.raises(ConfigError, match="cannot read the checkpoint file"):
        CheckpointFile(path).load()
    assert os.listdir(tmp_path) == ["checkpoint.json"]  # the temp file was removed
