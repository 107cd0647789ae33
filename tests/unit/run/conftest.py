"""A ledger on a real SQLite MLflow store, and the arms of the tiny integration spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from nerplat.catalog import default_catalog
from nerplat.plan.compiler import compile_plan
from nerplat.spec.validate import SpecSource
from nerplat.plan.model import Plan
from nerplat.run.ledger import RunLedger
from nerplat.track.experiment_tracker import ExperimentTracker
from nerplat.trial.results import Evaluation, Timings

TINY_RUN = Path(__file__).parents[2] / "integration" / "specs" / "tiny_run.yaml"


@pytest.fixture(scope="session")
def tiny_plan() -> Plan:
    return compile_plan(TINY_RUN, default_catalog())


@pytest.fixture(scope="session")
def tiny_plan_with():
    """The tiny integration spec's plan under `--set` overrides."""
    return lambda *overrides: compile_plan(SpecSource(TINY_RUN, overrides=overrides), default_catalog())


@pytest.fixture
def ledger(tracking_uri: str) -> RunLedger:
    return RunLedger(ExperimentTracker.open(tracking_uri, "ledger"))


@pytest.fixture
def evaluation_at():
    """An `Evaluation` after `epoch` (of 2) with dev micro F1 `f1`."""

    def make(epoch: int, f1: float, epochs: int = 2) -> Evaluation:
        return Evaluation(epoch, epochs, {"micro_f1": f1}, {"micro_f1": f1}, 0.5, Timings(train=1.0))

    return make
