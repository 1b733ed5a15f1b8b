"""No import cycle in `up_trl`, parsed with `ast`: every import that runs counts (inside functions too, not under
`if TYPE_CHECKING:`), with an edge to each package `__init__` it runs first; at package granularity the
subpackages depend one way."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import up_trl
from up_trl.trainers.collapse_warning import CollapseWarningCallback

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "up_trl"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted((SRC / PACKAGE).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else None
    return name == "TYPE_CHECKING"


def _imports(node: ast.AST):
    """The Import / ImportFrom nodes under `node` that run: all of them but those under `if TYPE_CHECKING:`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield from _imports_in(other)
            continue
        yield from _imports_in(child)


def _imports_in(node: ast.AST):
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    yield from _imports(node)


def _known(name: str) -> str | None:
    """`name` if it is a module of up_trl, else its longest prefix that is."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imported_modules(name: str, source: str | None = None) -> set[str]:
    """The up_trl modules that module `name` imports (by name, relative imports resolved); `source`: its text."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _imports(ast.parse(path.read_text() if source is None else source, filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            # `from .pkg import sub` imports the module `pkg.sub` when there is one, else a name of `pkg`
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in MODULES else origin for a in node.names]
        found |= {_known(target) for target in targets if target.split(".")[0] == PACKAGE}
    found.discard(None)
    found.discard(name)
    return found


GRAPH = {name: imported_modules(name) for name in MODULES}


def with_packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """`graph` plus an edge to each package an import runs first, but the importer's own."""
    found = {}
    for name, targets in graph.items():
        own = {name.rsplit(".", n)[0] for n in range(name.count(".") + 1)}  # the importer and its packages
        packages = {t.rsplit(".", n)[0] for t in targets for n in range(1, t.count(".") + 1)}
        found[name] = targets | (packages - own)
    return found


def node(name: str) -> str:
    """The package-level node of module `name`: its subpackage of up_trl (`up_trl.cli`), or the top-level module."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or (len(parts) == 2 and MODULES[name].name == "__init__.py") else name


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """`graph` (with its package edges) with each subpackage one node."""
    found: dict[str, set[str]] = {}
    for name, targets in with_packages(graph).items():
        found.setdefault(node(name), set()).update(node(t) for t in targets)
    return {name: targets - {name} for name, targets in found.items()}


PACKAGE_GRAPH = package_graph(GRAPH)


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as [a, b, ..., a], or None (depth-first search, in sorted order for a stable answer)."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" after
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_graph_sees_every_kind_of_import():
    """The parser sees what the test relies on: module-level, function-level and relative imports."""
    assert len(MODULES) > 20 and "up_trl.rewards" in MODULES and "up_trl.rewards.pool" in MODULES
    assert "up_trl.objective.ratios" in GRAPH["up_trl.objective.guards"]  # module level, relative
    assert "up_trl.cli.catalog" in GRAPH["up_trl.cli.launch"]
    assert GRAPH["up_trl"] == {"up_trl._version"}  # exports imported lazily; its TYPE_CHECKING block does not count


def test_find_cycle_names_the_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_function_level_and_relative_imports_are_resolved():
    source = """
import json
from typing import TYPE_CHECKING
from .extraction import extract_answer
if TYPE_CHECKING:
    from ..trainers.grpo_trainer import UPGRPOTrainer  # never runs
def f():
    from ..objective.routing import up_routes
    from . import pool
    import up_trl.data
    from up_trl.objective.guards import is_rare
"""
    found = imported_modules("up_trl.rewards.functions", source)
    expected = ("rewards.extraction", "objective.routing", "rewards.pool", "data", "objective.guards")
    assert found == {f"up_trl.{name}" for name in expected}


def test_an_import_runs_the_packages_on_its_path():
    graph = {"up_trl.cli.rules": set(), "up_trl.evaluation.evaluate": {"up_trl.cli.rules"}}
    assert with_packages(graph)["up_trl.evaluation.evaluate"] == {"up_trl.cli.rules", "up_trl.cli"}  # not up_trl
    assert package_graph(graph) == {"up_trl.cli": set(), "up_trl.evaluation": {"up_trl.cli"}}
    assert node("up_trl.cli") == node("up_trl.cli.rules") == "up_trl.cli"
    assert node("up_trl.file_modes") == "up_trl.file_modes" and node("up_trl") == "up_trl"


def test_no_import_cycle_in_up_trl():
    cycle = find_cycle(with_packages(GRAPH))
    if cycle:
        pytest.fail(f"import cycle: {' -> '.join(cycle)} (move the shared piece into the module both can import)")


def test_no_import_cycle_between_subpackages():
    assert {"up_trl.cli", "up_trl.evaluation", "up_trl.data", "up_trl.run"} <= set(PACKAGE_GRAPH)
    cycle = find_cycle(PACKAGE_GRAPH)
    if cycle:
        edges = with_packages(GRAPH)
        pairs = [(m, t) for m in sorted(edges) for t in sorted(edges[m])]
        why = [
            f"{a} -> {b}: " + ", ".join(f"{m} imports {t}" for m, t in pairs if node(m) == a and node(t) == b)
            for a, b in zip(cycle, cycle[1:])
        ]
        pytest.fail("import cycle between subpackages (move the piece both need):\n" + "\n".join(why))


def test_data_and_run_depend_one_way():
    # The run layer loads the data (`run.job.load_data`); data knows nothing of runs.
    assert "up_trl.data" in PACKAGE_GRAPH["up_trl.run"] and "up_trl.run" not in PACKAGE_GRAPH["up_trl.data"]


def test_the_core_stands_alone():
    """The objective and the trainers import nothing of the application around them."""
    application = {"up_trl.run", "up_trl.cli", "up_trl.checks", "up_trl.data", "up_trl.rewards", "up_trl.evaluation"}
    for core in ("up_trl.trainers", "up_trl.objective"):
        assert not PACKAGE_GRAPH[core] & application, (core, sorted(PACKAGE_GRAPH[core] & application))


def test_the_run_layer_goes_down_its_map():
    """Each run-layer module imports only those above it in `up_trl/run/__init__.py`'s list."""
    doc = ast.get_docstring(ast.parse(MODULES["up_trl.run"].read_text()))
    order = [f"up_trl.run.{name}" for name in re.findall(r"^- `(\w+)`", doc, re.M)]
    assert sorted(order) == sorted(m for m in MODULES if m.startswith("up_trl.run.")), "the map names every module"
    for i, module in enumerate(order):
        run_imports = {t for t in GRAPH[module] if t.startswith("up_trl.run")}
        assert run_imports <= set(order[:i]), (module, sorted(run_imports - set(order[:i])))
        assert "up_trl" not in GRAPH[module], module


def test_the_packages_public_names():
    """`from up_trl import *` gives the public names, each from its own module, loaded on first use."""
    public = set(
        "UPGRPOConfig UPGRPOTrainer UPRLOOConfig UPRLOOTrainer UPAsyncGRPOConfig UPAsyncGRPOTrainer "
        "probability_capacity self_anchored_ratio up_per_token_loss CollapseWarningCallback".split()
    )
    assert set(up_trl.__all__) >= public
    assert up_trl.__all__ == list(up_trl._EXPORTS)
    assert up_trl.CollapseWarningCallback is CollapseWarningCallback
    namespace: dict = {}
    exec("from up_trl import *", namespace)
    assert set(up_trl.__all__) <= set(namespace)


# benchmarks/: scripts (a `__main__` block) import helper modules (none), never another script; helpers import no
# script either, and the graph of helpers has no cycle. Every import counts, inside functions too; loading a module
# by path (`spec_from_file_location`) is refused outright.
BENCHMARKS = SRC.parent / "benchmarks"
BENCH_MODULES = {path.stem: path for path in sorted(BENCHMARKS.glob("*.py"))}


def _is_script(path: Path) -> bool:
    return 'if __name__ == "__main__":' in path.read_text()


def benchmark_imports(name: str) -> set[str]:
    """The benchmarks/ modules that benchmarks/`name`.py imports (a script run as a subprocess is not imported)."""
    tree = ast.parse(BENCH_MODULES[name].read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return {other for other in found & set(BENCH_MODULES) if other != name}


def test_benchmark_scripts_never_import_a_script():
    scripts = {name for name, path in BENCH_MODULES.items() if _is_script(path)}
    assert {"bench", "collapse_settings", "toy_runs"} <= set(BENCH_MODULES) - scripts  # the helpers, by design
    edges = {name: benchmark_imports(name) for name in BENCH_MODULES}
    bad = sorted(f"{name} -> {other}" for name, others in edges.items() for other in others & scripts)
    loaded = [name for name, path in BENCH_MODULES.items() if "spec_from_file_location" in path.read_text()]
    assert not bad and not loaded, f"benchmarks/ imports a script: {bad or loaded}"
    helpers = {name: others for name, others in edges.items() if name not in scripts}
    assert find_cycle(helpers) is None, f"an import cycle among the benchmark helpers: {find_cycle(helpers)}"


def test_the_benchmark_check_sees_a_script_imported_inside_a_function(tmp_path, monkeypatch):
    helper = tmp_path / "helper.py"
    helper.write_text("def f():\n    from runner import main\n    return main\n")
    (tmp_path / "runner.py").write_text('def main():\n    pass\n\n\nif __name__ == "__main__":\n    main()\n')
    monkeypatch.setitem(BENCH_MODULES, "helper", helper)
    monkeypatch.setitem(BENCH_MODULES, "runner", tmp_path / "runner.py")
    assert benchmark_imports("helper") == {"runner"} and _is_script(BENCH_MODULES["runner"])
    with pytest.raises(AssertionError, match="helper -> runner"):
        test_benchmark_scripts_never_import_a_script()
