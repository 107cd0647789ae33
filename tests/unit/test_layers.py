"""No import runs up a floor of the layer diagram in docs/architecture.md.

The floors are read from the diagram itself (the rules between its rows), so the page and this test
cannot drift apart: a unit (a subpackage or top-level module of nerplat) imports units on its own
floor or below, never above, and every unit stands on exactly one floor. Every import counts, those
inside functions too: a lazy import is still an arrow. Between units of one floor only a cycle is
wrong, which test_import_cycles.py finds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from import_graph import import_statements, module_name, unit_of, write_package
from repo_paths import REPO

import nerplat

PACKAGE = Path(nerplat.__file__).parent
ARCHITECTURE = REPO / "docs" / "architecture.md"
BOX = re.compile(r"[a-z_]+(/|\.py)")  # `cli/`, `catalog.py`
RULE = "─"  # the line between two floors


def floors_of(page: str) -> dict[str, int]:
    """unit -> floor (0: the leaves) of the first diagram under `## Layers`, whose top row is its top floor.

    A row names its boxes first (`optim/  objectives/`), then, three spaces on, what they hold; a row
    that starts with wide indentation continues the one above.
    """
    diagram = page.split("## Layers", 1)[1].split("```", 2)[1]
    rows: list[list[str]] = [[]]
    for line in diagram.splitlines():
        if line.strip().startswith(RULE):
            rows.append([])
        elif line.strip() and not line.startswith(" " * 3):
            boxes = re.split(r"\s{3,}", line.strip())[0].split()
            if not all(BOX.fullmatch(box) for box in boxes):
                raise ValueError(f"{ARCHITECTURE.name}: not a row of boxes in the layer diagram: {line.strip()!r}")
            rows[-1].extend(box.removesuffix("/").removesuffix(".py") for box in boxes)
    return {unit: len(rows) - 1 - index for index, row in enumerate(rows) for unit in row}


def units_in(root: Path) -> set[str]:
    """nerplat's subpackages (with an `__init__` or without: `serving/`) and top-level modules."""
    packages = {path.parent.name for path in root.glob("*/*.py")}
    return packages | {path.stem for path in root.glob("*.py")} - {"__init__"}


def upward_imports(root: Path, floors: dict[str, int]) -> list[str]:
    """`module:line imports name` for each import of a unit on a higher floor than the importing module's."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        source = unit_of(module)
        if source not in floors:  # the package's own __init__, or a unit the diagram lacks (the test above says so)
            continue
        for line, names in import_statements(path, root):
            for unit in sorted({unit_of(name) for name in names} & floors.keys()):
                if floors[unit] > floors[source]:
                    found.append(f"{module}:{line} imports {unit} (floor {floors[unit]}) from {source} (floor {floors[source]})")
    return found


def test_every_unit_of_the_package_is_on_one_floor_of_the_diagram():
    floors, units = floors_of(ARCHITECTURE.read_text()).keys(), units_in(PACKAGE)
    assert not units - floors, f"place these in the layer diagram of {ARCHITECTURE}: {sorted(units - floors)}"
    assert not floors - units, f"the layer diagram of {ARCHITECTURE} names what nerplat lacks: {sorted(floors - units)}"


def test_no_import_runs_up_a_floor():
    found = upward_imports(PACKAGE, floors_of(ARCHITECTURE.read_text()))
    assert not found, (
        "imports up a floor of docs/architecture.md's layers; hand what they need down from the caller above,"
        " or move it to the floor where it belongs:\n" + "\n".join(found)
    )


def test_the_check_finds_an_upward_import_inside_a_function_and_allows_same_floor_and_downward_ones(tmp_path):
    root = write_package(
        tmp_path / "nerplat",
        {
            "__init__.py": "",
            "catalog.py": "from nerplat.cluster.manifests import Manifest\n",
            "cluster/__init__.py": "",
            "cluster/manifests.py": "from nerplat.run import runner\nfrom nerplat.plan.model import Plan\n"
            "from .. import errors\n",
            "cluster/rayjob_manifest.py": "def sizing(spec):\n    from nerplat.catalog import spec_catalog\n",
            "run/__init__.py": "",
            "run/runner.py": "import nerplat.cli.options\n",
            "plan/__init__.py": "",
            "plan/model.py": "from ..cluster import manifests\n",
            "errors.py": "",
        },
    )
    floors = floors_of(ARCHITECTURE.read_text())
    assert upward_imports(root, floors) == [
        "nerplat.cluster.rayjob_manifest:2 imports catalog (floor 4) from cluster (floor 3)",
        "nerplat.plan.model:1 imports cluster (floor 3) from plan (floor 2)",
        "nerplat.run.runner:1 imports cli (floor 4) from run (floor 3)",
    ]


def test_the_diagram_is_read_row_by_row_and_floor_by_floor():
    page = (
        "## Layers\n\n```\n"
        "  cli/                  the command\n"
        "                        continued: not/ a row.py\n"
        " ──────────\n"
        "  optim/  objectives/   losses\n"
        " ──────────\n"
        "  config/  errors.py   (leaves)\n"
        "```\n"
    )
    assert floors_of(page) == {"cli": 2, "optim": 1, "objectives": 1, "config": 0, "errors": 0}
    with pytest.raises(ValueError, match="not a row of boxes"):
        floors_of(page.replace("  optim/  objectives/   losses", "  optim/ and objectives   losses"))
