"""The row plan (``sluice.binlog.colplan``) and the compiled core (``_rowcore.pyx``) agree on the
numbers they pass each other: a var column's conversion (``CONV_*``) and the ops of a column's spec,
which the core numbers (``OP_*``) and reads by name (``_OPS``). Read from the Cython source, so the
test holds without the built extension, and from the extension too when it is loaded."""

import ast
import re
from pathlib import Path

import pytest

from sluice.binlog import colplan, rowplan
from sluice.binlog.column_info import ColumnInfo
from sluice.binlog.constants import ColumnType
from sluice.errors import SluiceError

pytestmark = pytest.mark.unit

PYX = Path(colplan.__file__).with_name("_rowcore.pyx")


def _enums(source: str) -> dict[str, int]:
    """The members of every ``cdef enum:`` block: name -> value."""
    found: dict[str, int] = {}
    for block in re.findall(r"^cdef enum:\n((?:[ \t]+\w+ = \d+\n)+)", source, re.MULTILINE):
        for name, value in re.findall(r"(\w+) = (\d+)", block):
            assert name not in found, f"{name} twice"
            found[name] = int(value)
    return found


def _ops(source: str, enums: dict[str, int]) -> dict[str, int]:
    """The ``_OPS`` table of the core: a spec's op name -> its OP_* number."""
    m = re.search(r"^_OPS = (\{.*?^\})", source, re.MULTILINE | re.DOTALL)
    assert m, "no _OPS table in _rowcore.pyx"
    table = ast.parse(m.group(1), mode="eval").body
    assert isinstance(table, ast.Dict)
    return {ast.literal_eval(k): enums[v.id] for k, v in zip(table.keys, table.values, strict=True)
            if isinstance(k, ast.Constant) and isinstance(v, ast.Name)}


def _planned_ops() -> set[str]:
    """Every op name the plan puts in a spec: the literal ones of colplan.py, and those ``column``
    gives the types of the binlog (the temporal ones are named after their type)."""
    names = {"null"}  # a column's spec before the plan decides
    for node in ast.walk(ast.parse(Path(colplan.__file__).read_text())):
        sets_spec = isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "spec"
                                                         for t in node.targets)
        if sets_spec and isinstance(node.value, ast.Tuple) and isinstance(node.value.elts[0], ast.Constant):
            names.add(node.value.elts[0].value)
    infos = [ColumnInfo(), ColumnInfo(unsigned=True), ColumnInfo(collation=33), ColumnInfo(collation=63),
             ColumnInfo(enum_values=("a", "b")), ColumnInfo(set_values=("a", "b"))]
    for t in ColumnType:
        for meta in (0, 1, 2, 3, 4, 0x0108, 0xF701, 0xF801, 0xFE10, 0xFE00 | 0x7F):
            for info in infos:
                try:
                    names.add(colplan.column(0, t, meta, info, "db.t").spec[0])
                except SluiceError:  # metadata that type does not take
                    continue
    return names


def test_the_conversions_are_numbered_alike():
    enums = _enums(PYX.read_text())
    core = {name: value for name, value in enums.items() if name.startswith("CONV_")}
    plan = {name: getattr(colplan, name) for name in dir(colplan) if name.startswith("CONV_")}
    assert core and plan == core


def test_the_spec_ops_are_the_cores():
    source = PYX.read_text()
    enums = _enums(source)
    ops = _ops(source, enums)
    assert ops == {name[3:].lower(): value for name, value in enums.items() if name.startswith("OP_")}
    assert _planned_ops() == set(ops)


@pytest.mark.skipif(rowplan._compiled_core is None, reason="the compiled core is not built")
def test_the_built_core_is_its_source():
    source = PYX.read_text()
    assert _ops(source, _enums(source)) == rowplan._compiled_core._OPS
