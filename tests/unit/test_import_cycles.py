"""No import cycle between nerplat's subpackages (and top-level modules): the layers of docs/architecture.md hold.

Every import in every module counts, including those inside functions: a lazy import is still a
dependency, and a cycle through one is a cycle a refactoring can wake.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import nerplat

PACKAGE = Path(nerplat.__file__).parent


def unit_of(module: str) -> str | None:
    """'nerplat.spec.loader' -> 'spec'; 'nerplat.errors' -> 'errors'; other packages -> None."""
    parts = module.split(".")
    return parts[1] if parts[0] == "nerplat" and len(parts) > 1 else None


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path) -> set[str]:
    """Absolute names of every module `path` imports, at any depth of its code."""
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from nerplat import spec`
    return found


def dependency_graph(root: Path = PACKAGE) -> dict[str, dict[str, str]]:
    """unit -> {unit it imports: a module of the first unit that does so}."""
    units = {p.name for p in root.iterdir() if p.is_dir()} | {p.stem for p in root.glob("*.py")}
    graph: dict[str, dict[str, str]] = defaultdict(dict)
    for path in sorted(root.rglob("*.py")):
        source = unit_of(module_name(path, root))
        for imported in imported_modules(path, root):
            target = unit_of(imported)
            if source is not None and target in units and target != source:
                graph[source].setdefault(target, module_name(path, root))
    return graph


def find_cycle(graph: dict[str, dict[str, str]]) -> list[str] | None:
    """A cycle of units (first unit repeated at the end), or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(unit: str) -> list[str] | None:
        state[unit] = "open"
        stack.append(unit)
        for target in sorted(graph.get(unit, {})):
            if state.get(target) == "open":
                return stack[stack.index(target) :] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[unit] = "done"
        return None

    for unit in sorted(graph):
        if unit not in state:
            cycle = visit(unit)
            if cycle:
                return cycle
    return None


def describe_cycle(cycle: list[str], graph: dict[str, dict[str, str]]) -> str:
    return " -> ".join(cycle) + "\n" + "\n".join(f"  {a} -> {b} in {graph[a][b]}" for a, b in zip(cycle, cycle[1:]))


def test_no_import_cycle_between_subpackages():
    graph = dependency_graph()
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + describe_cycle(cycle, graph)


def test_the_check_finds_a_cycle_and_names_the_modules(tmp_path):
    root = tmp_path / "nerplat"
    for name, text in {
        "__init__.py": "",
        "spec/__init__.py": "",
        "spec/schema.py": "from nerplat.plan.model import Tune\n",
        "plan/__init__.py": "",
        "plan/model.py": "def f():\n    from nerplat.spec import schema\n",
        "errors.py": "",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    graph = dependency_graph(root)
    cycle = find_cycle(graph)
    assert cycle == ["plan", "spec", "plan"]
    assert "plan -> spec in nerplat.plan.model" in describe_cycle(cycle, graph)
