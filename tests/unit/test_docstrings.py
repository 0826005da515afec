"""Every module, and every public class, function and method of a public class, says what it is for."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src" / "sluice"

Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _sources() -> list[tuple[str, ast.Module]]:
    return [(str(path.relative_to(SRC.parents[1])), ast.parse(path.read_text())) for path in sorted(SRC.rglob("*.py"))]


def _public(body: list[ast.stmt], prefix: str = "") -> Iterator[tuple[str, Definition]]:
    """Public classes and functions of a module or class body, and the public members of its public classes."""
    for node in body:
        if isinstance(node, Definition) and not node.name.startswith("_"):
            yield prefix + node.name, node
            if isinstance(node, ast.ClassDef):
                yield from _public(node.body, f"{prefix}{node.name}.")


def test_every_module_has_a_docstring():
    missing = [name for name, tree in _sources() if not ast.get_docstring(tree)]
    assert not missing, "modules without a docstring:\n" + "\n".join(missing)


def test_every_public_class_and_function_has_a_docstring():
    missing = [f"{name}:{node.lineno}: {qualname}"
               for name, tree in _sources() for qualname, node in _public(tree.body) if not ast.get_docstring(node)]
    assert not missing, "public definitions without a docstring (one line on what it is for):\n" + "\n".join(missing)
