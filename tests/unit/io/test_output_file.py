"""``sluice tail --output``: the file is cut back to the checkpoint's byte count on restart."""

from __future__ import annotations

import pytest

from sluice.errors import DataLossError
from sluice.io.output_file import CheckpointedOutput

pytestmark = pytest.mark.unit


def test_counts_bytes_and_cuts_back_to_the_checkpoint(tmp_path) -> None:
    path = str(tmp_path / "changes.jsonl")
    out = CheckpointedOutput(path)
    out.write_lines([b'{"a": ', '"é"}\n'.encode()])
    checkpointed = out.written
    assert checkpointed == len('{"a": "é"}\n'.encode())
    out.write_lines([b'{"b": 2}\n'])  # written after the last checkpoint, then a crash
    out.close()
    again = CheckpointedOutput(path, checkpointed)
    assert again.written == checkpointed
    again.write_lines([b'{"b": 2}\n'])
    again.close()
    with open(path, encoding="utf-8") as f:
        assert f.read() == '{"a": "é"}\n{"b": 2}\n'


def test_a_file_shorter_than_the_checkpoint_is_data_loss(tmp_path) -> None:
    path = tmp_path / "changes.jsonl"
    path.write_text("short\n")
    with pytest.raises(DataLossError, match="truncated or replaced"):
        CheckpointedOutput(str(path), 100)
