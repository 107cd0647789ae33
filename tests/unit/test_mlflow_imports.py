"""One MLflow path: only `track/` imports MLflow and calls its client, besides serving's MLflow model
code and the module of the worker's model upload (docs/architecture.md, "Who writes to MLflow").

Every import counts, inside functions and under TYPE_CHECKING too, and so does every call of an
MLflow client method on a client the rest of the package holds (`tracker.client`, `open_client`'s):
it reads and writes runs through the tracker's methods and track's functions.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import nerplat
from mlflow import MlflowClient

PACKAGE = Path(nerplat.__file__).parent
# serving's MLflow model flavour: the pyfunc model, its logging, registry and `models:/` references
# (`serving/mlflow_models.py` also holds the worker's model upload, `log_tagger_model`).
ALLOWED = {"serving/mlflow_models.py", "serving/pyfunc.py", "serving/export.py", "serving/references.py"}


def imports_mlflow(path: Path) -> list[int]:
    """Lines of `path` that import mlflow or one of its modules."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        if any(name == "mlflow" or name.startswith("mlflow.") for name in names):
            lines.append(node.lineno)
    return lines


def outside_track(lines_of: Callable[[Path], list[int]], root: Path = PACKAGE) -> dict[str, list[int]]:
    """`lines_of` each module outside `track/` and the allowed serving modules, where it finds any."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("track/") or relative in ALLOWED:
            continue
        if lines := lines_of(path):
            found[relative] = lines
    return found


def test_only_track_and_servings_model_code_import_mlflow():
    assert outside_track(imports_mlflow) == {}


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "late.py").write_text("def f():\n    from mlflow.entities import Metric\n")
    (tmp_path / "track").mkdir()
    (tmp_path / "track" / "fine.py").write_text("import mlflow\n")
    assert outside_track(imports_mlflow, tmp_path) == {"analysis/late.py": [2]}


def test_every_allowed_module_exists():
    assert all((PACKAGE / name).is_file() for name in ALLOWED)


# -- calls of the MLflow client ------------------------------------------------------------------

# What MLflow's client can do (`search_runs`, `set_tag`, `delete_run`, `log_dict`, ...), taken from MLflow itself.
CLIENT_METHODS = frozenset(
    name for name in dir(MlflowClient) if not name.startswith("_") and callable(getattr(MlflowClient, name))
)


CLIENT_MAKERS = {"MlflowClient", "open_client"}  # calls that return an MLflow client


def is_client(node: ast.AST, bound: set[str]) -> bool:
    """`client`, `x_client`, `tracker.client`, `self.tracker._client`, `open_client(uri)`, or a name in `bound`."""
    if isinstance(node, ast.Name):
        return node.id.endswith("client") or node.id in bound
    if isinstance(node, ast.Attribute):
        return node.attr.endswith("client")
    if isinstance(node, ast.Call):
        called = node.func
        return (called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")) in CLIENT_MAKERS
    return False


def client_names(tree: ast.AST) -> set[str]:
    """Names a module binds to a client whatever they are called: `mine = tracker.client`, `store = open_client(uri)`."""
    return {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and is_client(node.value, set())
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def calls_mlflow_client(path: Path) -> list[int]:
    """Lines of `path` that call an MLflow client method on a client."""
    tree = ast.parse(path.read_text(), str(path))
    bound = client_names(tree)
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CLIENT_METHODS
        and is_client(node.func.value, bound)
    )


def test_only_track_and_servings_model_code_call_the_mlflow_client():
    """The rest of the package hands a client only to track's functions; it never calls the client itself."""
    assert outside_track(calls_mlflow_client) == {}


def test_the_check_sees_client_calls_however_the_client_is_reached(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "calls.py").write_text(
        "def f(tracker, runner, uri):\n"
        "    tracker.client.search_runs(['1'])\n"  # 2
        "    runner.tracker.client.delete_run('r')\n"  # 3
        "    mine = tracker.client\n"
        "    mine.set_tag('r', 'k', 'v')\n"  # 5
        "    store = open_client(uri)\n"
        "    store.search_experiments()\n"  # 7
        "    open_client(uri).get_run('r')\n"  # 8
        "    search_all(tracker.client, '1', 'trial')\n"  # handed to track: fine
        "    tracker.finish('r', 'completed')\n"  # the tracker's own method: fine
    )
    (tmp_path / "track").mkdir()
    (tmp_path / "track" / "fine.py").write_text("def f(client):\n    client.search_runs(['1'])\n")
    assert outside_track(calls_mlflow_client, tmp_path) == {"run/calls.py": [2, 3, 5, 7, 8]}


def test_rays_job_client_is_not_taken_for_mlflows():
    """cluster/submit.py's `client` is Ray's JobSubmissionClient (`submit_job`, `get_job_status`): the
    check flags only MLflow client methods, and Ray's job client has none of them."""
    from ray.job_submission import JobSubmissionClient

    assert not CLIENT_METHODS & {name for name in dir(JobSubmissionClient) if not name.startswith("_")}
    assert "client.submit_job(" in (PACKAGE / "cluster" / "submit.py").read_text()
    assert calls_mlflow_client(PACKAGE / "cluster" / "submit.py") == []
