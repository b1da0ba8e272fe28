"""The modules of multikernel import each other without cycles, and each imports on its own.

The graph is read from the source: every module-level ``import multikernel...`` and ``from multikernel... import``
(including those in ``try``/``if`` blocks, but not under ``if TYPE_CHECKING:``, which never runs).  Imports inside
functions are deliberately outside the graph: they run after every module has finished loading.
"""

import ast
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

import multikernel
import multikernel._ext
import multikernel.plugins

PACKAGES = (multikernel, multikernel.plugins, multikernel._ext)


def _modules() -> dict[str, Path]:
    """Every pure-Python module of the installed package, by dotted name (compiled extensions excluded)."""
    found = {}
    for package in PACKAGES:
        found[package.__name__] = Path(package.__file__)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            origin = importlib.util.find_spec(info.name).origin
            if origin and origin.endswith(".py"):
                found[info.name] = Path(origin)
    return found


def _module_level_imports(body: list[ast.stmt]):
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            test = node.test
            if getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == "TYPE_CHECKING":
                continue
            yield from _module_level_imports(node.body)
            yield from _module_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for part in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
                yield from _module_level_imports(part)


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of multikernel it imports at module level.

    ``from a import b`` depends on the module ``a.b`` when there is one, else on ``a`` (a name ``a`` defines).
    """
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in _module_level_imports(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.Import):
                deps |= {alias.name for alias in node.names if alias.name in modules}
                continue
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    deps.add(f"{base}.{alias.name}")
                elif base in modules:
                    deps.add(base)
        graph[name] = deps - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of modules (first == last), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_graph_reads_the_imports():
    graph = import_graph()
    assert len(graph) >= 30 and "multikernel.plugins.solvers" in graph
    assert {"multikernel.core.capabilities", "multikernel.core.interfaces"} <= graph["multikernel.plugins.solvers"]
    assert "multikernel.core.registry" in graph["multikernel.core.capabilities"]


def test_no_import_cycles():
    assert find_cycle(import_graph()) is None


def test_every_module_imports_in_a_fresh_interpreter():
    """Every module imports in a fresh interpreter, where nothing the tests imported is loaded yet."""
    names = sorted(name for name in _modules() if name != "multikernel.__main__")
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    done = subprocess.run([sys.executable, "-c", script, *names], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------------------------------
# The layer order of docs/architecture.md: no module imports one of a higher layer
# --------------------------------------------------------------------------------------------------
#: Each top-level module or package of ``multikernel`` and its layer (docs/architecture.md, "The layers"):
#: a module may import its own layer and the layers below, never one above.  The task packages sit on the
#: estimator base; plugins implement the contracts and may use every layer up to the task packages.
LAYERS: dict[str, int] = {
    "multikernel.errors": 0, "multikernel._version": 0, "multikernel._threads": 0, "multikernel._pages": 0,
    "multikernel._ext": 0,
    "multikernel.core": 1,
    "multikernel.stack": 2, "multikernel.engine": 2,
    "multikernel.solve": 3,
    "multikernel.estimators": 4,
    "multikernel.ranking": 5, "multikernel.iokl": 5, "multikernel.bilinear": 5, "multikernel.metric": 5,
    "multikernel.plugins": 6,
    "multikernel.config": 7,
    "multikernel.experiments": 8,
    "multikernel.cli": 9, "multikernel.__main__": 9,
    "multikernel": 10,  # the package's own __init__ re-exports every layer
}


def layer_of(module: str) -> int:
    """The layer of ``module``: that of its longest prefix in :data:`LAYERS`."""
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        prefix = ".".join(parts[:k])
        if prefix in LAYERS and (k > 1 or module == "multikernel"):
            return LAYERS[prefix]
    raise KeyError(f"{module} has no layer in LAYERS: add it (and to docs/architecture.md)")


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{module} (layer {layer_of(module)}) imports {dep} (layer {layer_of(dep)})"
                  for module, deps in graph.items() for dep in deps if layer_of(dep) > layer_of(module))


def test_layer_violations_are_found():
    assert layer_violations({"multikernel.core.validation": {"multikernel.estimators.base"}}) == [
        "multikernel.core.validation (layer 1) imports multikernel.estimators.base (layer 4)"]
    assert layer_violations({"multikernel.estimators.base": {"multikernel.core.validation"}}) == []


def test_every_module_has_a_layer():
    for module in import_graph():
        layer_of(module)


def test_no_module_imports_a_higher_layer():
    assert layer_violations(import_graph()) == []
