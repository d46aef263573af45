"""The layout the architecture page promises: no import circle, solvers free of privacy, thin commands.

The import graph is read with the standard library's :mod:`ast` from every ``import`` and
``from ... import`` statement anywhere in a module (module level or inside a function): a
function-level import that closes a circle is still a circle in the design.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("designer", "solvers")
#: No command module is longer than this (the logic lives in the library).
MAX_COMMAND_LINES = 300


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules a module imports (``from a import b`` counts ``a`` and, if it is a module, ``a.b``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            targets = [source] + [f"{source}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target in known and target != name)
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Each project module's project imports; parsed once for the module's tests, which only read it."""
    found = modules()
    return {name: imported(name, path, set(found)) for name, path in found.items()}


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle (a list of modules, the first repeated at the end), or None (iterative DFS)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            step = next(stack[-1], None)
            if step is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(step) == 1:
                return path[path.index(step):] + [step]
            elif step not in state:
                state[step] = 1
                path.append(step)
                stack.append(iter(sorted(graph[step])))
    return None


def test_the_circle_finder_finds_a_planted_circle():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_import_graph_has_no_circle():
    graph = import_graph()
    assert len(graph) > 100 and "designer.deploy.orbit" in graph["designer.deploy.structured"]
    assert find_circle(graph) is None, f"import circle: {' -> '.join(find_circle(graph))}"


def test_solvers_know_nothing_about_privacy():
    graph = import_graph()
    leaks = {name: sorted(target for target in targets if target.startswith("designer"))
             for name, targets in graph.items() if name.startswith("solvers")}
    assert not any(leaks.values()), leaks


def test_rooms_hold_their_paper():
    """Design for an E lives in designer/design/, the metric paper in designer/metric/ (docs/architecture.md)."""
    found = modules()
    for name in ("designer.design.vertex", "designer.design.symmetry.design", "designer.design.gap.column_generation",
                 "designer.metric.strategy", "designer.metric.workloads", "designer.metric.range_mechanism"):
        assert name in found, name
    flat = {name for name in found if name.count(".") == 1}
    assert not flat & {"designer.design_channel", "designer.matrix_mechanism", "designer.range_mechanism",
                       "designer.symmetry", "designer.gap"}


def test_command_modules_stay_thin():
    lengths = {path.name: len(path.read_text().splitlines()) for path in (ROOT / "designer" / "commands").glob("*.py")}
    assert len(lengths) > 10
    assert {name: lines for name, lines in lengths.items() if lines > MAX_COMMAND_LINES} == {}
