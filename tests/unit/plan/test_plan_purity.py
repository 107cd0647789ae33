"""`plan/` is pure (docs/architecture.md): no module of it imports, at any depth of its code, what
reads a store, loads a model or runs a trial; estimating a plan's cost is `estimate/`, above it."""

import ast
from pathlib import Path

import nerplat

PLAN = Path(nerplat.__file__).parent / "plan"
IMPURE = (
    "nerplat.estimate", "nerplat.models", "nerplat.trial", "nerplat.run", "nerplat.track.experiment_reader", "mlflow",
    "torch", "ray",
)


def imported_names(source: str) -> set[str]:
    """Absolute module names a source imports, inside functions too (plan/ uses no relative imports)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def impure_imports(source: str) -> set[str]:
    return {name for name in imported_names(source) if any(name == bad or name.startswith(bad + ".") for bad in IMPURE)}


def test_no_module_of_plan_imports_a_store_a_model_or_a_trial():
    found = {path.name: impure_imports(path.read_text()) for path in sorted(PLAN.rglob("*.py"))}
    assert {name: names for name, names in found.items() if names} == {}


def test_the_check_finds_an_import_inside_a_function():
    source = "def cost():\n    from nerplat.estimate.cost import predict_cost\n    import torch\n"
    assert impure_imports(source) == {"nerplat.estimate.cost", "torch"}
