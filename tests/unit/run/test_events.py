"""TrialEvents against a real SQLite MLflow store: what reaches MLflow when, around Tune's checkpoints.

Tune delivers a checkpointed result first and registers its checkpoint in a later step; these tests
replay that order of callbacks (as Ray's `TuneController` makes them) with a plain trial record.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from nerplat.catalog import default_catalog
from nerplat.plan.compiler import compile_plan
from nerplat.run.events import TrialEvents
from nerplat.run.progress import ProgressBoard
from nerplat.run.trainable import PHASE_KEY, TrialJob
from nerplat.track.runs import ExperimentTracker

TINY_RUN = Path(__file__).parents[2] / "integration" / "specs" / "tiny_run.yaml"


@pytest.fixture
def events(tracking_uri: str) -> TrialEvents:
    tracker = ExperimentTracker.open(tracking_uri, "events")
    return TrialEvents(tracker, ProgressBoard("events", Console(quiet=True)))


@pytest.fixture
def trial(events: TrialEvents, tmp_path: Path) -> SimpleNamespace:
    """A replicate-phase trial whose MLflow run (`run_id`) the driver made beforehand."""
    arm = compile_plan(TINY_RUN, default_catalog()).arms[0]
    run = events.tracker.start_replicate_run(events.tracker.start_arm_run(arm.id, "replicate").run_id, arm.id, 0, 0)
    job = TrialJob(arm=arm, phase="replicate", seed=0, partition=0, eval_split="test", select_metric="micro_f1", replicate_run_id=run.run_id)
    return SimpleNamespace(
        trial_id="trial_1", config={PHASE_KEY: job.model_dump(mode="json")}, local_path=str(tmp_path / "trial"), run_id=run.run_id
    )


def result(epoch: int, f1: float, checkpointed: bool = True) -> dict:
    return {"epoch": epoch, "dev_micro_f1": f1, "dev_best_micro_f1": f1, "should_checkpoint": checkpointed}


def logged_epochs(events: TrialEvents, trial: SimpleNamespace) -> list[tuple[int, float]]:
    return [(point.step, point.value) for point in events.tracker.client.get_metric_history(trial.run_id, "dev_micro_f1")]


def test_a_checkpointed_evaluation_is_logged_once_its_checkpoint_is_registered(events, trial):
    events.on_trial_start(0, [], trial)
    events.on_trial_result(0, [], trial, result(1, 0.3))
    assert logged_epochs(events, trial) == []
    events.on_checkpoint(0, [], trial, checkpoint=object())
    assert logged_epochs(events, trial) == [(1, 0.3)]


def test_a_worker_lost_before_its_checkpoint_logs_the_repeated_epoch_once(events, trial):
    events.on_trial_start(0, [], trial)
    events.on_trial_result(0, [], trial, result(1, 0.3))
    events.on_checkpoint(0, [], trial, checkpoint=object())
    events.on_trial_result(0, [], trial, result(2, 0.4))  # the worker dies before this checkpoint is saved
    events.on_trial_recover(0, [], trial)
    events.on_trial_start(0, [], trial)
    events.on_trial_result(0, [], trial, result(2, 0.45))  # retried from the epoch-1 checkpoint
    events.on_checkpoint(0, [], trial, checkpoint=object())
    events.on_trial_result(0, [], trial, result(3, 0.5))
    events.on_checkpoint(0, [], trial, checkpoint=object())
    assert logged_epochs(events, trial) == [(1, 0.3), (2, 0.45), (3, 0.5)]


def test_a_trial_that_ends_keeps_its_last_evaluation(events, trial):
    events.on_trial_start(0, [], trial)
    events.on_trial_result(0, [], trial, result(1, 0.3))
    events.on_trial_error(0, [], trial)
    assert logged_epochs(events, trial) == [(1, 0.3)]
    assert events.outcomes[trial.trial_id] == "failed"


def test_results_without_a_checkpoint_are_logged_at_once(events, trial):
    events.on_trial_start(0, [], trial)
    events.on_trial_result(0, [], trial, result(1, 0.3, checkpointed=False))
    assert logged_epochs(events, trial) == [(1, 0.3)]
