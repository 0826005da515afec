"""The README's Python example runs as written, from the repository root."""

import os
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_readme_python_example_runs(capsys):
    text = (ROOT / "README.md").read_text()
    section = text.split("### From Python", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)  # type: ignore[union-attr]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("insert golden.") for line in out), out[:5]
    assert any("TableMapEvent" in line for line in out)
