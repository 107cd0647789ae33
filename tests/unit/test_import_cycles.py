"""No import cycle between nerplat's subpackages (and top-level modules), so units on one floor of
docs/architecture.md's layers never import each other both ways (that every import runs down a floor is
test_layers.py's); and no cycle between its files: no module imports one that imports it back,
directly or through others.

Every import in every module counts, including those inside functions: a lazy import is still a
dependency, and a cycle through one is a cycle a refactoring can wake. Between files, an edge is an
import a module writes: a package's `__init__` running before its modules is not one, so a package
that registers its entries by importing its modules (`models/heads/__init__.py`) is no cycle, as long
as those modules import the registry module rather than the package.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from import_graph import absolute_base, imported_modules, module_name, package_of, unit_of, write_package

import nerplat

PACKAGE = Path(nerplat.__file__).parent


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


def module_graph(root: Path = PACKAGE) -> dict[str, dict[str, str]]:
    """module -> {module of the package it imports: the importing module}. `from a import b` imports
    module `a.b` when there is one, else `a`; `import a.b` imports `a.b` (not its packages)."""
    paths = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    graph: dict[str, dict[str, str]] = {}
    for module, path in paths.items():
        package = package_of(path, root)
        named = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                named.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = absolute_base(node, package)
                named.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base for alias in node.names)
        graph[module] = dict.fromkeys(sorted(named & paths.keys() - {module}), module)
    return graph


def module_cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """Every cycle of modules, found one at a time: the import that closes each is set aside once it is reported."""
    graph = {module: dict(targets) for module, targets in graph.items()}
    cycles = []
    while (cycle := find_cycle(graph)) is not None:
        cycles.append(cycle)
        del graph[cycle[-2]][cycle[-1]]
    return cycles


def test_no_import_cycle_between_subpackages():
    graph = dependency_graph()
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + describe_cycle(cycle, graph)


def test_no_module_imports_one_that_imports_it_back():
    cycles = module_cycles(module_graph())
    assert not cycles, "import cycles between modules:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_the_module_check_finds_lazy_and_transitive_cycles_but_not_registration_by_a_package(tmp_path):
    root = write_package(
        tmp_path / "nerplat",
        {
            "__init__.py": "",
            "trial/__init__.py": "",
            "trial/batching.py": "def f():\n    from nerplat.trial import mrc_batching\n",
            "trial/mrc_batching.py": "from nerplat.trial.batching import f\n",
            "models/__init__.py": "",
            "models/encoders.py": "from nerplat.models.word_embeddings import g\n",
            "models/word_embeddings.py": "from nerplat.models.lookup import h\n",
            "models/lookup.py": "from nerplat.models import encoders\n",
            "heads/__init__.py": "from nerplat.heads.registry import HEADS\nfrom nerplat.heads import crf\n",
            "heads/registry.py": "HEADS = {}\n",
            "heads/crf.py": "from nerplat.heads.registry import HEADS\n",
        },
    )
    cycles = module_cycles(module_graph(root))
    assert sorted(sorted(set(cycle)) for cycle in cycles) == [
        ["nerplat.models.encoders", "nerplat.models.lookup", "nerplat.models.word_embeddings"],
        ["nerplat.trial.batching", "nerplat.trial.mrc_batching"],
    ]
    assert all(cycle[0] == cycle[-1] for cycle in cycles)


def test_importing_the_package_itself_from_inside_it_is_a_cycle(tmp_path):
    root = write_package(
        tmp_path / "nerplat",
        {
            "__init__.py": "",
            "heads/__init__.py": "from nerplat.heads import crf\nHEADS = {}\n",
            "heads/crf.py": "from nerplat.heads import HEADS\n",
        },
    )
    assert module_cycles(module_graph(root)) == [["nerplat.heads", "nerplat.heads.crf", "nerplat.heads"]]


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
