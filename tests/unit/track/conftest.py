"""A tracker on a real, empty SQLite MLflow store per test (`tracking_uri` from tests/conftest.py)."""

import pytest


@pytest.fixture
def tracker(tracking_uri: str):
    from nerplat.track.experiment_tracker import ExperimentTracker

    return ExperimentTracker.open(tracking_uri, "unit-experiment")
