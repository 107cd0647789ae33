"""An arm's Optuna study on a real SQLite storage, brought in step with MLflow's finished trials on resume."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from nerplat.config.search_space import Choice, Uniform
from nerplat.run.ledger import FinishedTrial
from nerplat.run.search import SEARCHERS, optuna_distributions, tune_domains
from nerplat.run.study import ArmStudy, fail_running, prepare_study
from nerplat.track.studies import open_optuna_storage

SPACE = {"objective.lambda": Uniform(low=0.0, high=1.0), "objective.base": Choice(options=("ce", "focal"))}
METRIC = "dev_best_micro_f1"
DONE = FinishedTrial({"objective.lambda": 0.25, "objective.base": "ce"}, 0.7, "run-a", "e/arm/tune/t0000")


@pytest.fixture
def storage(tmp_path: Path):
    return open_optuna_storage(f"sqlite:///{tmp_path / 'optuna.db'}")


def prepare(storage, finished=(), owner="tune-run", name="e/arm") -> tuple[ArmStudy, bool]:
    study = ArmStudy(storage, name, tuple(finished))
    return study, prepare_study(study, owner=owner, metric=METRIC, mode="max", distributions=optuna_distributions(SPACE))


def searcher(study: ArmStudy, name: str = "tpe", **params):
    """A searcher as Tune sets it up: the space comes with the Tuner's param_space."""
    search = SEARCHERS.build(name, params, at="tune.search", space=SPACE, seed=0, study=study)
    assert search.set_search_properties(METRIC, "max", {"nerplat_job": {}, **tune_domains(SPACE)})
    return search


def trials(storage, name="e/arm") -> list:
    return optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False)


def test_a_new_study_takes_the_finished_trials_with_their_mlflow_runs(storage):
    prepare(storage, [DONE])
    [trial] = trials(storage)
    assert (trial.state, trial.params, trial.value) == (TrialState.COMPLETE, DONE.values, 0.7)
    assert trial.user_attrs == {"mlflow_run_id": "run-a", "mlflow_run_name": "e/arm/tune/t0000"}
    study = optuna.load_study(study_name="e/arm", storage=storage)
    assert study.user_attrs["nerplat.tune_run_id"] == "tune-run" and study.metric_names == [METRIC]


def test_a_resumed_study_is_the_same_and_gets_no_finished_trial_twice(storage):
    study, _ = prepare(storage, [DONE])
    search = searcher(study)
    config = search.suggest("tune-1")
    search.record_run("tune-1", "run-b", "e/arm/tune/t0001")
    search.on_trial_complete("tune-1", {METRIC: 0.8})
    study_id = storage.get_study_id_from_name("e/arm")

    later = FinishedTrial(config, 0.8, "run-b", "e/arm/tune/t0001")
    _, replaced = prepare(storage, [DONE, later])
    assert not replaced and storage.get_study_id_from_name("e/arm") == study_id
    found = trials(storage)
    assert [t.user_attrs["mlflow_run_id"] for t in found] == ["run-a", "run-b"]
    assert found[1].params == config and found[1].value == 0.8


def test_a_trial_the_driver_left_running_is_told_when_mlflow_finished_it_and_failed_when_not(storage):
    study, _ = prepare(storage, [DONE])
    search = searcher(study)
    finished_in_mlflow = search.suggest("tune-1")
    search.record_run("tune-1", "run-b", "e/arm/tune/t0001")
    search.suggest("tune-2")
    search.record_run("tune-2", "run-c", "e/arm/tune/t0002")  # the driver dies with both trials running

    prepare(storage, [DONE, FinishedTrial(finished_in_mlflow, 0.6, "run-b", "e/arm/tune/t0001")])
    states = {t.user_attrs["mlflow_run_id"]: (t.state, t.value) for t in trials(storage)}
    assert states == {"run-a": (TrialState.COMPLETE, 0.7), "run-b": (TrialState.COMPLETE, 0.6), "run-c": (TrialState.FAIL, None)}


def test_trials_of_a_stopped_tuner_are_failed(storage):
    study, _ = prepare(storage)
    searcher(study).suggest("tune-1")
    fail_running(study)
    assert [t.state for t in trials(storage)] == [TrialState.FAIL]


def test_a_study_of_another_tune_run_is_replaced(storage):
    """The MLflow experiment was deleted and started anew: the old study's trials are another search's."""
    prepare(storage, [DONE], owner="deleted-tune-run")
    _, replaced = prepare(storage, [], owner="tune-run")
    assert replaced and trials(storage) == []


def test_a_resumed_grid_runs_exactly_the_points_mlflow_has_not_seen_finish(storage):
    grid = {"points_per_axis": 2}  # lambda in {0, 1} x base in {ce, focal}: 4 points
    first = FinishedTrial({"objective.lambda": 0.0, "objective.base": "ce"}, 0.5, "run-a", "t0000")
    study, _ = prepare(storage, [first])
    search = searcher(study, "grid", **grid)
    interrupted = search.suggest("tune-1")
    fail_running(study)  # Ctrl-C: one point failed, two never started

    study, _ = prepare(storage, [first])
    search = searcher(study, "grid", **grid)
    asked = [search.suggest(f"resume-{n}") for n in range(3)]
    points = [(p["objective.lambda"], p["objective.base"]) for p in asked]
    assert sorted(points) == [(0.0, "focal"), (1.0, "ce"), (1.0, "focal")]
    assert (interrupted["objective.lambda"], interrupted["objective.base"]) in points
