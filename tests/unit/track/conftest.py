"""A real, empty SQLite MLflow store per test: initialised once (about 1 s), then copied."""

import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def empty_mlflow_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Made by `check_store` in a folder that does not exist yet (test_store checks the result)."""
    from nerplat.track.store import check_store

    path = tmp_path_factory.mktemp("mlflow-template") / "not-yet" / "mlflow.db"
    check_store(f"sqlite:///{path}")
    return path


@pytest.fixture
def tracking_uri(tmp_path: Path, empty_mlflow_db: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    shutil.copy(empty_mlflow_db, tmp_path / "mlflow.db")
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


@pytest.fixture
def tracker(tracking_uri: str):
    from nerplat.track.runs import ExperimentTracker

    return ExperimentTracker.open(tracking_uri, "unit-experiment")
