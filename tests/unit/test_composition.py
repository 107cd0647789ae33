"""The runner and the tracker are composed, not mixed in: no class of `run/` or `track/` takes a base
class from another nerplat module, so no class is cut across files with a host that "provides" what
its parts use (issue 46). They hold their phases and helpers as objects instead."""

from __future__ import annotations

import ast
from pathlib import Path

import nerplat

PACKAGE = Path(nerplat.__file__).parent
COMPOSED = ("run", "track")


def bases_from_other_modules(path: Path) -> list[str]:
    """`Class(Base)` for each class of `path` whose base `path` imports from a nerplat module."""
    tree = ast.parse(path.read_text(), str(path))
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == "nerplat")
        for alias in node.names
    }
    return [
        f"{node.name}({ast.unparse(base)})"
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        for base in node.bases
        if ast.unparse(base).split(".")[0] in imported | {"nerplat"}
    ]


def mixed_in(root: Path = PACKAGE) -> dict[str, list[str]]:
    found = {}
    for package in COMPOSED:
        for path in sorted((root / package).rglob("*.py")):
            if classes := bases_from_other_modules(path):
                found[path.relative_to(root).as_posix()] = classes
    return found


def test_no_class_of_run_or_track_is_mixed_in_from_another_module():
    assert mixed_in() == {}


def test_the_check_sees_a_mixin_however_it_is_imported(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "track").mkdir()
    (tmp_path / "run" / "runner.py").write_text(
        "from nerplat.run.tune_phase import TunePhase\n"
        "from .replicate_phase import ReplicatePhase\n"
        "import nerplat.run.looks\n"
        "from ray.tune import Callback\n"
        "class Runner(TunePhase, ReplicatePhase):\n    pass\n"
        "class Looks(nerplat.run.looks.Base):\n    pass\n"
        "class Local:\n    pass\n"
        "class Events(Callback):\n    pass\n"  # a third-party base: fine
        "class Child(Local):\n    pass\n"  # a base of its own module: fine
    )
    assert mixed_in(tmp_path) == {
        "run/runner.py": ["Runner(TunePhase)", "Runner(ReplicatePhase)", "Looks(nerplat.run.looks.Base)"]
    }
