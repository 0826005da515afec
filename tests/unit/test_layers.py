"""The layers of docs/DESIGN.md hold in the imports: arrows only go down, and no module cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SRC = Path(__file__).resolve().parents[2] / "src" / "sluice"

# Lower numbers are lower layers; a package may import only from layers below its own (and itself).
LAYERS = {
    "errors": 0, "codegen": 0, "lazy": 0, "processes": 0, "dsn": 1, "wire": 2, "binlog": 2, "sandbox": 2, "io": 3,
    "cdc": 4, "eventjson": 4, "lake": 5, "spark": 6, "api": 6, "commands": 7, "cli": 8, "__init__": 9, "__main__": 9,
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: Path, *, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # annotations only: no import at run time
            if isinstance(child, ast.Import):
                if top or not top_level_only:
                    found.update(a.name for a in child.names if a.name.startswith("sluice"))
            elif (isinstance(child, ast.ImportFrom) and child.module and child.module.startswith("sluice")
                  and (top or not top_level_only)):
                if child.module != "sluice":  # `from sluice import x`: only x is imported from
                    found.add(child.module)
                found.update(f"{child.module}.{a.name}" for a in child.names)
            inner = top and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, inner)

    visit(tree, True)
    return found


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_import_goes_down_the_layers():
    upward = []
    for name, path in _modules().items():
        mine = _package(name)
        for target in _imports(path, top_level_only=False):
            theirs = _package(target)
            if theirs not in LAYERS:  # `from sluice import __version__`: a constant of the package root
                continue
            if theirs != mine and LAYERS[theirs] >= LAYERS[mine]:
                upward.append(f"{name} -> {target}")
    assert not upward, "imports that go up or sideways in the layers:\n" + "\n".join(sorted(upward))


def test_no_import_cycle_between_modules():
    modules = _modules()
    graph = {name: {t for t in _imports(path, top_level_only=True) if t in modules and t != name}
             for name, path in modules.items()}
    for name in list(graph):  # `import sluice.a.b` also runs sluice.a's __init__: not an edge we draw
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*stack[stack.index(nxt):], nxt]))
            elif nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def _annotation_imports(path: Path) -> set[str]:
    """The modules ``path`` imports under ``if TYPE_CHECKING:`` (for its annotations only)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in ast.walk(node):
                if isinstance(child, ast.ImportFrom) and child.module and child.module.startswith("sluice"):
                    found.add(child.module)
    return found


def test_no_cycle_hidden_behind_type_checking():
    """An import kept for annotations only still says the two modules need each other: a module
    that the other imports at load time names what it needs as a Protocol, or the shared part
    moves below both."""
    modules = _modules()
    hidden = [f"{name} -> {target} (annotations) -> {name}"
              for name, path in modules.items() for target in _annotation_imports(path)
              if target in modules and name in _imports(modules[target], top_level_only=True)]
    assert not hidden, "cycles behind TYPE_CHECKING:\n" + "\n".join(sorted(hidden))


# The roles inside spark/ and lake/, lowest first: a role imports only from those below it (and itself).
ROLES = {
    "spark": {"source": 1, "runtime": 2, "snapshot": 3, "verify": 3, "ddl": 4, "pipeline": 5},
    "lake": {"storage": 0, "at_once": 0, "kept_table": 0, "layout": 1, "data_files": 1, "types": 1, "lease": 2,
             "changelog": 2, "mirror": 3, "maintenance": 3, "sink": 4},
}


def _role(package: str, module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == package else None


@pytest.mark.parametrize("package", sorted(ROLES))
def test_roles_import_only_downward(package: str):
    layers = ROLES[package]
    modules = _modules()
    roles = {r for r in (_role(package, m) for m in modules) if r is not None}
    assert roles == set(layers), f"{package}/ roles not in ROLES: {sorted(roles ^ set(layers))}"
    upward = []
    for name, path in modules.items():
        mine = _role(package, name)
        if mine is None:
            continue
        for target in _imports(path, top_level_only=False):
            theirs = _role(package, target)
            if theirs in layers and theirs != mine and layers[theirs] >= layers[mine]:
                upward.append(f"{name} -> {target}")
    assert not upward, f"{package}/ imports that go up or sideways:\n" + "\n".join(sorted(upward))


def test_the_lake_needs_no_spark():
    """``sluice.lake`` writes Delta tables from a plain Python process: no pyspark import at any level."""
    found = []
    for name, path in _modules().items():
        if _package(name) != "lake":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            found += [f"{name}: {n}" for n in names if n == "pyspark" or n.startswith("pyspark.")]
    assert not found, "pyspark imported by the lake:\n" + "\n".join(found)


# The orchestration shell of cdc: the modules that talk to servers and files. The rest of cdc is its
# core (capture, transactions, records, the schema model and DDL replay, reconciliation), sans-I/O.
CDC_SHELL = {
    "sluice.cdc.follow", "sluice.cdc.capture_start", "sluice.cdc.schema_start", "sluice.cdc.schema.bootstrap",
    "sluice.cdc.schema.history", "sluice.cdc.table_read.reader", "sluice.cdc.table_read.consistent",
    "sluice.cdc.source_checks", "sluice.cdc.schema.given", "sluice.cdc.table_read.watermarks",
    "sluice.cdc.executed_at",
}
_IO_MODULES = ("sluice.io", "socket", "ssl", "subprocess", "select", "os", "shutil", "tempfile")
_FILE_CALLS = {"read_bytes", "read_text", "write_bytes", "write_text", "mkdir", "unlink", "fsync"}


def _io_of(path: Path) -> set[str]:
    """Modules of I/O the file imports (at any level) and the file methods it calls."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "open":
                found.add("open()")
            elif isinstance(func, ast.Attribute) and func.attr in _FILE_CALLS:
                found.add(f".{func.attr}()")
        found.update(n for n in names if any(n == m or n.startswith(m + ".") for m in _IO_MODULES))
    return found


def test_the_cdc_core_does_no_io():
    modules = _modules()
    assert set(modules) >= CDC_SHELL, sorted(CDC_SHELL - set(modules))
    doing_io = [f"{name}: {', '.join(sorted(_io_of(path)))}" for name, path in sorted(modules.items())
                if name.startswith("sluice.cdc") and name not in CDC_SHELL and _io_of(path)]
    assert not doing_io, "cdc core modules that do I/O (it belongs in the shell):\n" + "\n".join(doing_io)


@pytest.mark.parametrize("home", ["sluice.lake", *(f"sluice.spark.{role}" for role in ROLES["spark"])])
def test_every_lazy_package_exports_what_it_names(home: str):
    """Each name a package's ``__all__`` lists resolves (``sluice.lazy.lazy_exports``) to that very
    object of the module its ``_HOMES`` names, and an unknown name is an AttributeError."""
    import importlib

    package = importlib.import_module(home)
    assert package.__all__ == sorted(package._HOMES)
    for name, module_name in package._HOMES.items():
        module = importlib.import_module(f"{home}.{module_name}")
        assert getattr(package, name) is getattr(module, name), (home, name)
    with pytest.raises(AttributeError, match="no attribute"):
        _ = package.no_such_name
