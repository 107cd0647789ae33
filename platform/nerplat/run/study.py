"""An arm's Optuna study, kept in step with MLflow, where nerplat's resume state lives.

MLflow says what a search has finished (run/ledger.py); the study in the Optuna storage
(track/studies.py) is the live view of it and what the sampler learns from. Before a search
continues, `prepare_study` makes the study agree with MLflow:

- a study that another tune run owns (its MLflow experiment was deleted and started anew, or
  another store shares the storage) is replaced: its trials belong to another search;
- a finished trial the study lacks (the storage was new or lost, or the driver died between
  MLflow's record and Optuna's) is told if its trial is still running there, else added;
- trials still running in the study belong to a driver that stopped: they are failed, and
  `--resume` runs new trials in their place.

So each finished trial is in the study once, and each trial carries its MLflow run id and name
(user attributes `mlflow_run_id`, `mlflow_run_name`) so the two views can be matched.

Ray's OptunaSearch loads the study by name (`create_study(load_if_exists=True)`). Its own warm
start (`points_to_evaluate` with `evaluated_rewards`) would add the finished trials again on every
resume, so it is not used; nor is its restore from a pickled searcher, since a resumed run starts
a new Tuner from MLflow (run/runner.py). Imported when a search starts: it imports Ray Tune.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import TrialState
from ray.tune.search.optuna import OptunaSearch

from nerplat.run.ledger import FinishedTrial

OWNER_ATTR = "nerplat.tune_run_id"  # study user attribute: the MLflow run of the arm's tune phase
RUN_ID_ATTR = "mlflow_run_id"  # trial user attributes
RUN_NAME_ATTR = "mlflow_run_name"


@dataclass(frozen=True)
class ArmStudy:
    """Where an arm's search is kept, and what MLflow says it has finished."""

    storage: Any  # an Optuna storage (track/studies.open_optuna_storage)
    name: str  # track/studies.study_name
    finished: tuple[FinishedTrial, ...] = ()


def run_attributes(run_id: str, run_name: str) -> dict[str, str]:
    return {RUN_ID_ATTR: run_id, RUN_NAME_ATTR: run_name}


def prepare_study(study: ArmStudy, *, owner: str, metric: str, mode: str, distributions: dict[str, Any]) -> bool:
    """Brings the study in step with MLflow (see the module docstring), creating it if missing.

    `owner` is the MLflow run id of the arm's tune phase; `distributions` are the Optuna
    distributions of the searched keys, as Ray's OptunaSearch converts them. Returns True when a
    study of another tune run was replaced.
    """
    direction = "maximize" if mode == "max" else "minimize"
    opened = optuna.create_study(storage=study.storage, study_name=study.name, direction=direction, load_if_exists=True)
    replaced = opened.user_attrs.get(OWNER_ATTR, owner) != owner
    if replaced:
        optuna.delete_study(study_name=study.name, storage=study.storage)
        opened = optuna.create_study(storage=study.storage, study_name=study.name, direction=direction)
    opened.set_user_attr(OWNER_ATTR, owner)
    with warnings.catch_warnings():  # experimental since Optuna 3.2; optuna-dashboard labels its charts with it
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        opened.set_metric_names([metric])
    trials = opened.get_trials(deepcopy=False)
    told = {trial.user_attrs.get(RUN_ID_ATTR) for trial in trials if trial.state == TrialState.COMPLETE}
    running = [trial for trial in trials if trial.state == TrialState.RUNNING]
    for finished in study.finished:
        if finished.run_id in told:
            continue
        live = next((trial for trial in running if trial.user_attrs.get(RUN_ID_ATTR) == finished.run_id), None)
        if live is not None:
            running.remove(live)
            opened.tell(live.number, finished.value)
        else:
            opened.add_trial(
                optuna.trial.create_trial(
                    params=finished.values,
                    distributions=distributions,
                    value=finished.value,
                    user_attrs=run_attributes(finished.run_id, finished.run_name),
                )
            )
    _fail(opened, running)
    return replaced


def fail_running(study: ArmStudy) -> None:
    """Fails the study's trials still running: the Tuner that ran them has stopped (Ctrl-C, an
    error), and a later `--resume` replaces them with new trials."""
    opened = optuna.load_study(study_name=study.name, storage=study.storage)
    _fail(opened, opened.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))


def _fail(opened: optuna.Study, trials: Iterable[Any]) -> None:
    for trial in trials:
        opened.tell(trial.number, state=TrialState.FAIL)


def enqueue_unfinished(study: ArmStudy, points: Sequence[dict[str, Any]]) -> None:
    """Queues every point that has not finished and is not queued yet, in order: a grid search
    asks the queue first, so it runs exactly the grid points MLflow lacks, whatever ran before."""
    opened = optuna.load_study(study_name=study.name, storage=study.storage)
    waiting = opened.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    skip = {_key(trial.system_attrs.get("fixed_params", trial.params)) for trial in waiting}  # where enqueue_trial keeps them
    skip |= {_key(finished.values) for finished in study.finished}
    for point in points:
        if _key(point) not in skip:
            opened.enqueue_trial(point)


def _key(values: dict[str, Any]) -> str:
    return json.dumps(values, sort_keys=True)


class StudySearch(OptunaSearch):
    """Ray Tune's OptunaSearch on an arm's persistent study, whose trials name their MLflow runs."""

    def __init__(self, sampler: Any, study: ArmStudy):
        super().__init__(sampler=sampler, storage=study.storage, study_name=study.name)

    def record_run(self, trial_id: str, run_id: str, run_name: str) -> None:
        """Tune trial `trial_id` logs to this MLflow run: said on its Optuna trial."""
        trial = self._ot_trials.get(trial_id)
        if trial is not None:
            for key, value in run_attributes(run_id, run_name).items():
                trial.set_user_attr(key, value)
