"""The code stays lint-clean (ruff), type-correct (mypy, settings in pyproject.toml), and in pieces one
can read: no source module over 400 lines, no Python class over 250, no function over 100."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "sluice"

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 100
MAX_CLASS_LINES = 250

# A def/cdef/cpdef that opens a function: a parenthesis before any ``=`` (a cdef variable has none),
# and not a cdef class.
_CYTHON_DEF = re.compile(r"^(\s*)(?:async\s+def|def|cpdef|cdef)\s(?!class\b)[^=]*\(")


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return path


def test_ruff() -> None:
    done = subprocess.run([_tool("ruff"), "check", "src", "tests", "bench", "setup.py"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy() -> None:
    done = subprocess.run([_tool("mypy")], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _sources() -> list[Path]:
    """The hand-written sources: Python and Cython (not the generated C, nor the type stubs)."""
    return sorted(p for p in SRC.rglob("*") if p.suffix in (".py", ".pyx", ".pxi") and p.is_file())


def _cython_functions(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, length, name) of each function of a Cython source: from its def to the last line
    of its body, the body ending before the next code line indented no deeper than the def."""
    found = []
    for i, line in enumerate(lines):
        opened = _CYTHON_DEF.match(line)
        if opened is None:
            continue
        indent = len(opened.group(1))
        head = i
        while head < len(lines) - 1 and not lines[head].split("#")[0].rstrip().endswith(":"):
            head += 1  # a signature over several lines
        last = head
        for j in range(head + 1, len(lines)):
            code = lines[j].strip()
            if not code or code.startswith("#"):
                continue
            if len(lines[j]) - len(lines[j].lstrip()) <= indent:
                break
            last = j
        name = line.split("(")[0].split()[-1]
        found.append((i + 1, last - i + 1, name))
    return found


def _functions(path: Path) -> list[tuple[int, int, str]]:
    text = path.read_text()
    if path.suffix == ".py":
        return [(node.lineno, (node.end_lineno or node.lineno) - node.lineno + 1, node.name)
                for node in ast.walk(ast.parse(text)) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    return _cython_functions(text.splitlines())


def test_no_module_is_over_400_lines() -> None:
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in _sources()
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by job):\n" + "\n".join(long)


def test_no_function_is_over_100_lines() -> None:
    long = [f"{p.relative_to(ROOT)}:{line}: {name} ({n} lines)" for p in _sources()
            for line, n, name in _functions(p) if n > MAX_FUNCTION_LINES]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them into named steps):\n" + "\n".join(long)


def test_no_class_is_over_250_lines() -> None:
    long = [f"{p.relative_to(ROOT)}:{node.lineno}: {node.name} ({n} lines)" for p in _sources() if p.suffix == ".py"
            for node in ast.walk(ast.parse(p.read_text())) if isinstance(node, ast.ClassDef)
            if (n := node.end_lineno - node.lineno + 1) > MAX_CLASS_LINES]  # type: ignore[operator]
    assert not long, f"classes over {MAX_CLASS_LINES} lines (split them by responsibility):\n" + "\n".join(long)


def test_the_function_lengths_are_measured() -> None:
    """The Cython measure finds the functions of the compiled core, methods and all, whole."""
    core = SRC / "binlog" / "_eventrun.pxi"
    measured = {name: n for _, n, name in _functions(core)}
    assert {"__init__", "run", "_take_rows", "_finish"} <= set(measured)
    assert all(n >= 3 for n in measured.values())
    lines = ["cdef class C:", "    cdef int x", "    cdef int f(self,", "               int a) except -1:",
             "        cdef int b = g(a)", "", "        # a comment", "        return b", "",
             "    def h(self):", "        return 1", "", "cdef int y = f(1)"]
    assert _cython_functions(lines) == [(3, 6, "f"), (10, 2, "h")]
