"""One MLflow path: only `track/` imports MLflow, besides serving's MLflow model code and the module
of the worker's model upload (docs/architecture.md, "Who writes to MLflow").

Every import counts, inside functions and under TYPE_CHECKING too: the rest of the package reads
and writes runs through track's functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nerplat

PACKAGE = Path(nerplat.__file__).parent
# serving's MLflow model flavour: the pyfunc model, its logging, registry and `models:/` references
# (`serving/mlflow_models.py` also holds the worker's model upload, `log_tagger_model`).
ALLOWED = {"serving/mlflow_models.py", "serving/pyfunc.py", "serving/export.py", "serving/references.py"}


def imports_mlflow(path: Path) -> list[int]:
    """Lines of `path` that import mlflow or one of its modules."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        if any(name == "mlflow" or name.startswith("mlflow.") for name in names):
            lines.append(node.lineno)
    return lines


def mlflow_importers(root: Path = PACKAGE) -> dict[str, list[int]]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("track/") or relative in ALLOWED:
            continue
        if lines := imports_mlflow(path):
            found[relative] = lines
    return found


def test_only_track_and_servings_model_code_import_mlflow():
    assert mlflow_importers() == {}


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "late.py").write_text("def f():\n    from mlflow.entities import Metric\n")
    (tmp_path / "track").mkdir()
    (tmp_path / "track" / "fine.py").write_text("import mlflow\n")
    assert mlflow_importers(tmp_path) == {"analysis/late.py": [2]}


def test_every_allowed_module_exists():
    assert all((PACKAGE / name).is_file() for name in ALLOWED)
