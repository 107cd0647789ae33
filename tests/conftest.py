"""Suite-wide settings: offline hub, corpora from $NERPLAT_DATA, caches out of the home directory."""

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "support"))  # shared test helpers, imported by name
from repo_paths import REPO  # noqa: E402

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("NERPLAT_DATA", str((REPO.parent / "shared" / "data").resolve()))
# pytest-xdist starts a worker per core (`make test-fast`): torch's default of an intra-op thread per core in
# each worker oversubscribes the cores, and the OpenMP threads' waiting costs CPU (10% of tests/unit/trial's,
# docs/performance.md, "The test suite"). Read when torch loads, after this file; code that sets its own
# threads (a trial's `train.threads`) still does.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def data_root() -> Path:
    root = Path(os.environ["NERPLAT_DATA"])
    if not (root / "manifest.json").exists():
        pytest.fail(f"NERPLAT_DATA={root} has no manifest.json: point it at the folder of the corpora")
    return root


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Feature caches go to a session temp dir, so tests never write into the home directory."""
    os.environ.setdefault("NERPLAT_CACHE", str(tmp_path_factory.mktemp("nerplat-cache")))


@pytest.fixture(autouse=True, scope="session")
def _no_terminal_width() -> None:
    """Messages wrap at COLUMNS (nerplat.unfolded); pytest-xdist's workers set COLUMNS=80, so the
    tests' output would wrap under `make test` and not in one process. Tests that check wrapping set
    COLUMNS themselves."""
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


@pytest.fixture(scope="session")
def empty_mlflow_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Made by `check_store` in a folder that does not exist yet (test_store checks the result)."""
    from nerplat.track.store import check_store

    path = tmp_path_factory.mktemp("mlflow-template") / "not-yet" / "mlflow.db"
    check_store(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def softmax_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny softmax tagger trained for real and saved as a bundle (tests/support/tiny_taggers.py), once
    per session: the serving, model-command and registered-model tests only read it."""
    from tiny_taggers import train_bundle

    return train_bundle("softmax", tmp_path_factory.mktemp("bundles"))


@pytest.fixture
def two_torch_threads():
    """Two intra-op threads for one test, whatever the process's default (one in an xdist worker): a test
    that code puts the process's threads back after running at one needs a process not already at one."""
    import torch  # lazy: most tests never load torch

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def tracking_uri(tmp_path: Path, empty_mlflow_db: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    shutil.copy(empty_mlflow_db, tmp_path / "mlflow.db")
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


@pytest.fixture(autouse=True)
def restore_registries():
    """Plugins register into the process-wide registries: put them back as they were after each test,
    so a test that loads a plugin never changes what the "every registered ..." tests see."""
    from nerplat import plugins
    from nerplat.catalog import default_catalog

    registries = list(default_catalog().registries().values())
    saved = [dict(r._entries) for r in registries]
    loaded, modules = dict(plugins._loaded), set(sys.modules)
    yield
    for registry, entries in zip(registries, saved):
        registry._entries.clear()
        registry._entries.update(entries)
    added = set(plugins._loaded) - set(loaded)
    plugins._loaded.clear()
    plugins._loaded.update(loaded)
    for name in [m for m in sys.modules if m.split(".")[0] in added and m not in modules]:
        del sys.modules[name]
