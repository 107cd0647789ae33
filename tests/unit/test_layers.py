"""The layer diagram of docs/architecture.md holds: it is read from the page, so the two cannot drift apart.

Its floors (the rules between its rows) are the code's own: every unit of nerplat (a subpackage or
top-level module) stands on exactly one floor, the lowest its imports allow, and imports only units on
floors below its own, never one beside it or above it. Its brackets are rules on packages from outside:
`[no torch, ray]` on a row says its units reach neither, and `[torch from here up]` that no unit on a
lower floor does. Everything is read statically from the source, every import counting, those inside
functions too: a lazy import is still an arrow, and still loads torch when its function runs.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest
from import_graph import import_statements, module_name, unit_of, write_package
from repo_paths import REPO

import nerplat

PACKAGE = Path(nerplat.__file__).parent
ARCHITECTURE = REPO / "docs" / "architecture.md"
BOX = re.compile(r"[a-z_]+(/|\.py)")  # `cli/`, `catalog.py`
RULE = "─"  # the line between two floors
BRACKET = re.compile(r"\[([^\]]*)\]")
NONE_OF = re.compile(r"no (.+)")  # [no torch, ray]
FROM_HERE_UP = re.compile(r"(.+) from here up")  # [torch, transformers from here up]


@dataclass(frozen=True)
class Diagram:
    floors: dict[str, int]  # unit -> floor, 0 for the leaves
    barred: dict[str, dict[str, str]]  # unit -> {package it may not reach: the row's bracket that says so}


def names_in(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def read_diagram(page: str) -> Diagram:
    """The first diagram under `## Layers`, whose top row is its top floor.

    A row names its boxes first (`errors.py  suggest.py`), then, three spaces on, what they hold; a row
    that starts with wide indentation continues the one above, and its brackets are that row's.
    """
    diagram = page.split("## Layers", 1)[1].split("```", 2)[1]
    rows: list[list[list[str]]] = [[]]  # floor (top first) -> rows -> boxes
    brackets: list[tuple[int, list[str], str]] = []  # (index of the floor, the row's boxes, the bracket)
    for line in diagram.splitlines():
        if line.strip().startswith(RULE):
            rows.append([])
            continue
        if not line.strip():
            continue
        if not line.startswith(" " * 3):
            boxes = re.split(r"\s{3,}", line.strip())[0].split()
            if not all(BOX.fullmatch(box) for box in boxes):
                raise ValueError(f"{ARCHITECTURE.name}: not a row of boxes in the layer diagram: {line.strip()!r}")
            rows[-1].append([box.removesuffix("/").removesuffix(".py") for box in boxes])
        elif not rows[-1]:
            raise ValueError(f"{ARCHITECTURE.name}: a continued line with no row above it: {line.strip()!r}")
        brackets += [(len(rows) - 1, rows[-1][-1], found) for found in BRACKET.findall(line)]
    floors: dict[str, int] = {}
    for index, floor in enumerate(rows):
        for unit in (unit for row in floor for unit in row):
            if unit in floors:
                raise ValueError(f"{ARCHITECTURE.name}: {unit} stands on two floors of the layer diagram")
            floors[unit] = len(rows) - 1 - index
    barred: dict[str, dict[str, str]] = {unit: {} for unit in floors}
    for index, boxes, text in brackets:
        if none_of := NONE_OF.fullmatch(text):
            for unit in boxes:
                barred[unit].update(dict.fromkeys(names_in(none_of.group(1)), f"[{text}]"))
        elif from_here_up := FROM_HERE_UP.fullmatch(text):
            for unit in (unit for unit, floor in floors.items() if floor < len(rows) - 1 - index):
                barred[unit].update(dict.fromkeys(names_in(from_here_up.group(1)), f"[{text}] on the row of {boxes[0]}"))
        else:
            wanted = "`[no a, b]` or `[a, b from here up]`"
            raise ValueError(f"{ARCHITECTURE.name}: a bracket the layer test cannot read: [{text}] (write {wanted})")
    return Diagram(floors, barred)


def units_in(root: Path) -> set[str]:
    """nerplat's subpackages (with an `__init__` or without: `serving/`) and top-level modules."""
    packages = {path.parent.name for path in root.glob("*/*.py")}
    return packages | {path.stem for path in root.glob("*.py")} - {"__init__"}


def unit_imports(root: Path) -> list[tuple[str, int, str, str]]:
    """(module, line, its unit, a unit it imports) for every import of another unit, at any depth."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        source = unit_of(module)
        for line, names in import_statements(path, root):
            for unit in sorted({unit_of(name) for name in names} - {source, None}):
                found.append((module, line, source, unit))
    return found


def imports_across_or_up(root: Path, floors: dict[str, int]) -> list[str]:
    """`module:line imports unit (floor f) from unit (floor g)` for each import not of a lower floor's unit."""
    return [
        f"{module}:{line} imports {target} (floor {floors[target]}) from {source} (floor {floors[source]})"
        for module, line, source, target in unit_imports(root)
        if source in floors and target in floors and floors[target] >= floors[source]
    ]


def floors_too_high(root: Path, floors: dict[str, int]) -> list[str]:
    """Units drawn above the floor their imports put them on: one above the highest unit they import."""
    imported: dict[str, set[str]] = {unit: set() for unit in floors}
    for _, _, source, target in unit_imports(root):
        if source in floors and target in floors:
            imported[source].add(target)
    lowest = {unit: 1 + max((floors[t] for t in targets), default=-1) for unit, targets in imported.items()}
    return [
        f"{unit} is on floor {floors[unit]}; its imports put it on {lowest[unit]}"
        for unit in sorted(floors)
        if floors[unit] > lowest[unit]
    ]


def barred_packages_reached(root: Path, diagram: Diagram) -> list[str]:
    """`unit reaches package: module:line (through a -> b)` for each package a bracket bars from a unit,
    following every import of nerplat's modules (and the packages around them) from the unit's modules."""
    modules = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    statements = {module: list(import_statements(path, root)) for module, path in modules.items()}

    def nerplat_modules(name: str) -> set[str]:  # `nerplat.a.b` runs nerplat.a's `__init__` too
        parts = name.split(".")
        return {".".join(parts[:end]) for end in range(2, len(parts) + 1)} & modules.keys()

    found = []
    for unit, packages in sorted(diagram.barred.items()):
        if not packages:
            continue
        start = sorted(module for module in modules if unit_of(module) == unit)
        came_from: dict[str, str | None] = dict.fromkeys(start)
        queue = deque(start)
        while queue:
            module = queue.popleft()
            for line, names in statements[module]:
                for name in sorted(names):
                    barred = next((p for p in packages if name == p or name.startswith(p + ".")), None)
                    if barred is not None:
                        path, step = [], came_from[module]
                        while step is not None:
                            path.append(step)
                            step = came_from[step]
                        through = f" (through {' -> '.join(reversed(path))} -> {module})" if path else ""
                        found.append(f"{unit} reaches {barred}, barred by {packages[barred]}: {module}:{line}{through}")
                    for reached in sorted(nerplat_modules(name) - came_from.keys()):
                        came_from[reached] = module
                        queue.append(reached)
    return sorted(set(found))


def test_every_unit_of_the_package_is_on_one_floor_of_the_diagram():
    floors, units = read_diagram(ARCHITECTURE.read_text()).floors.keys(), units_in(PACKAGE)
    assert not units - floors, f"place these in the layer diagram of {ARCHITECTURE}: {sorted(units - floors)}"
    assert not floors - units, f"the layer diagram of {ARCHITECTURE} names what nerplat lacks: {sorted(floors - units)}"


def test_every_import_runs_down_a_floor():
    found = imports_across_or_up(PACKAGE, read_diagram(ARCHITECTURE.read_text()).floors)
    assert not found, (
        "imports of a unit on the importer's own floor or above in docs/architecture.md's layers; hand what they"
        " need down from the caller above, or move the unit to the floor where it belongs:\n" + "\n".join(found)
    )


def test_every_unit_stands_on_the_floor_its_imports_give_it():
    found = floors_too_high(PACKAGE, read_diagram(ARCHITECTURE.read_text()).floors)
    assert not found, "move these down in docs/architecture.md's layer diagram:\n" + "\n".join(found)


def test_no_unit_reaches_a_package_its_row_bars():
    found = barred_packages_reached(PACKAGE, read_diagram(ARCHITECTURE.read_text()))
    assert not found, "imports the layer diagram's brackets bar (docs/architecture.md):\n" + "\n".join(found)


def test_data_and_plan_are_barred_torch_transformers_and_ray():
    barred = read_diagram(ARCHITECTURE.read_text()).barred
    assert all({"torch", "transformers", "ray"} <= barred[unit].keys() for unit in ("data", "plan"))


PAGE = (
    "## Layers\n\n```\n"
    "  cli/                  the command\n"
    " ──────────\n"
    "  run/                  runs\n"
    " ──────────\n"
    "  data/                 corpora\n"
    "                        continued: not/ a row.py [no torch]\n"
    "  plan/                 plans [no torch, ray]\n"
    "  models/               tensors [torch from here up]\n"
    " ──────────\n"
    "  config/  errors.py   leaves\n"
    "```\n"
)


def test_the_diagram_is_read_row_by_row_and_floor_by_floor():
    diagram = read_diagram(PAGE)
    assert diagram.floors == {"cli": 3, "run": 2, "data": 1, "plan": 1, "models": 1, "config": 0, "errors": 0}
    below_models = {"torch": "[torch from here up] on the row of models"}
    assert diagram.barred == {
        "cli": {}, "run": {}, "data": {"torch": "[no torch]"}, "plan": {"torch": "[no torch, ray]", "ray": "[no torch, ray]"},
        "models": {}, "config": below_models, "errors": below_models,
    }  # fmt: skip
    with pytest.raises(ValueError, match="not a row of boxes"):
        read_diagram(PAGE.replace("  plan/                 plans", "  plan/ and data   plans"))
    with pytest.raises(ValueError, match="two floors"):
        read_diagram(PAGE.replace("  plan/                 plans", "  data/                 plans"))
    with pytest.raises(ValueError, match="cannot read"):
        read_diagram(PAGE.replace("[no torch, ray]", "[torch only]"))


def scratch(tmp_path: Path, files: dict[str, str]) -> Path:
    """A scratch nerplat with PAGE's units, and `files` on top."""
    units = ("cli", "run", "data", "plan", "models", "config")
    leaves = {"__init__.py": "", "errors.py": ""}
    return write_package(tmp_path / "nerplat", {f"{unit}/__init__.py": "" for unit in units} | leaves | files)


def test_the_check_finds_imports_across_and_up_a_floor_inside_functions_too(tmp_path):
    root = scratch(
        tmp_path,
        {
            "cli/main.py": "from nerplat.run import runner\nfrom nerplat.models import tagger\n",  # down: fine
            "run/runner.py": "def go():\n    import nerplat.cli.main\n",  # up, in a function
            "data/corpora.py": "from nerplat.models import tagger\nfrom .. import errors\n",  # across, then down
            "plan/compiler.py": "from .model import Plan\n",  # its own unit
        },
    )
    assert imports_across_or_up(root, read_diagram(PAGE).floors) == [
        "nerplat.data.corpora:1 imports models (floor 1) from data (floor 1)",
        "nerplat.run.runner:2 imports cli (floor 3) from run (floor 2)",
    ]


def test_the_check_finds_a_unit_drawn_above_the_floor_its_imports_give_it(tmp_path):
    root = scratch(tmp_path, {"cli/main.py": "from nerplat.run import runner\n", "run/runner.py": "from nerplat import errors\n"})
    assert floors_too_high(root, read_diagram(PAGE).floors) == [  # cli, above run, stands where it should
        "data is on floor 1; its imports put it on 0",
        "models is on floor 1; its imports put it on 0",
        "plan is on floor 1; its imports put it on 0",
        "run is on floor 2; its imports put it on 1",
    ]


def test_the_check_follows_lazy_and_indirect_imports_to_a_barred_package(tmp_path):
    root = scratch(
        tmp_path,
        {
            "data/tags.py": "def tensor():\n    import torch.nn\n",  # lazy, in data itself
            "plan/compiler.py": "from nerplat.errors import Problem\nimport numpy\n",  # numpy: not barred
            "errors.py": "from ray import tune\n",  # what plan imports reaches Ray
            "config/trial.py": "import torch\n",  # below models
            "models/tagger.py": "import torch\n",  # torch from here up: fine
        },
    )
    assert barred_packages_reached(root, read_diagram(PAGE)) == [
        "config reaches torch, barred by [torch from here up] on the row of models: nerplat.config.trial:1",
        "data reaches torch, barred by [no torch]: nerplat.data.tags:2",
        "plan reaches ray, barred by [no torch, ray]: nerplat.errors:1 (through nerplat.plan.compiler -> nerplat.errors)",
    ]
