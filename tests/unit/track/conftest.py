"""A real, empty SQLite MLflow store per test: initialised once (about 1 s), then copied."""

import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def _empty_mlflow_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from mlflow import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments(max_results=1)
    return path


@pytest.fixture
def tracking_uri(tmp_path: Path, _empty_mlflow_db: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    shutil.copy(_empty_mlflow_db, tmp_path / "mlflow.db")
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


@pytest.fixture
def tracker(tracking_uri: str):
    from nerplat.track.runs import ExperimentTracker

    return ExperimentTracker.open(tracking_uri, "unit-experiment")
