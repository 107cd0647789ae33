"""An arm's Optuna study, kept in step with MLflow, where nerplat's resume state lives.

MLflow says what a search has finished (run/ledger.py); the study in the Optuna storage
(track/studies.py) is the live view of it and what the sampler learns from. One record decides: a
trial is finished when its MLflow run has ended `completed` or `early_stopped`. So the study is
told a trial's result only after its run ended (`run.study_search.StudySearch` holds Tune's
completion until the ledger has written the end), and a driver killed between the two leaves a
study one trial behind MLflow, never ahead. Before a search continues, and before its arm chooses, `prepare_study` makes
the study agree with MLflow both ways:

- a study that another tune run owns (its MLflow experiment was deleted and started anew, or
  another store shares the storage) is replaced: its trials belong to another search;
- a COMPLETE trial MLflow does not call finished (a study written before the tell waited for
  MLflow's end, or a trial told twice) cannot be changed in Optuna: the study is rebuilt with it
  failed, every other trial copied as it was, so the sampler's history and trial count stay;
- a finished trial the study lacks (the storage was new or lost, or the driver died between
  MLflow's record and Optuna's) is told if its trial is still running there, else added;
- trials still running in the study belong to a driver that stopped: they are failed, and
  `--resume` runs the point of each trial MLflow calls interrupted again, first, in their sampling
  order and each with its sample index (`enqueue_unfinished`), so the resumed search evaluates
  what a clean run would; an interrupted trial never counts as a trial of the search, nor as a
  place in it (run/study_search.py seeds each trial by its place).

So each finished trial is COMPLETE in the study once, no more trials are COMPLETE than MLflow has
finished, and each trial carries its MLflow run id and name (user attributes `mlflow_run_id`,
`mlflow_run_name`) so the two views can be matched, and its sample index (`nerplat.sample_index`,
as its MLflow run's tag says): a study rebuilt from MLflow adds its trials in that order. The arm's
choice is not read from the study: Optuna's best trial breaks ties by trial number, which a rebuilt
study and a re-queued point renumber; nerplat's rule is run/trial_choice.py's.

Ray's OptunaSearch loads the study by name (`create_study(load_if_exists=True)`). Its own warm
start (`points_to_evaluate` with `evaluated_rewards`) would add the finished trials again on every
resume, so it is not used; nor is its restore from a pickled searcher, since a resumed run starts
a new Tuner from MLflow (run/runner.py). Interrupted trials' points, starting points a spec gives
(`tune.enqueue`) and a grid's points are queued with `enqueue_unfinished`. Imports Optuna, not Ray:
a resume with nothing left to run reads its studies without Ray.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import TrialState

from nerplat.run.trial_choice import FinishedTrial, InterruptedTrial

OWNER_ATTR = "nerplat.tune_run_id"  # study user attribute: the MLflow run of the arm's tune phase
RUN_ID_ATTR = "mlflow_run_id"  # trial user attributes
RUN_NAME_ATTR = "mlflow_run_name"
SAMPLE_INDEX_ATTR = "nerplat.sample_index"  # trial user attribute: its place in the search's sampling order
FIXED_PARAMS_ATTR = "fixed_params"  # system attribute where Optuna's enqueue_trial keeps a queued point


@dataclass(frozen=True)
class ArmStudy:
    """Where an arm's search is kept, and what MLflow says it has finished."""

    storage: Any  # an Optuna storage (track/studies.open_optuna_storage)
    name: str  # track/studies.study_name
    finished: tuple[FinishedTrial, ...] = ()
    taken: frozenset[int] = frozenset()  # the sample indexes MLflow's trial runs hold (`RunLedger.taken_sample_indexes`)


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
    trials = opened.get_trials(deepcopy=False)
    finished_runs = {finished.run_id for finished in study.finished}
    disowned = _disowned(trials, finished_runs)
    if disowned:
        opened = _rebuilt(study, direction, trials, disowned)
        trials = opened.get_trials(deepcopy=False)
    opened.set_user_attr(OWNER_ATTR, owner)
    with warnings.catch_warnings():  # experimental since Optuna 3.2; optuna-dashboard labels its charts with it
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        opened.set_metric_names([metric])
    told = {trial.user_attrs.get(RUN_ID_ATTR) for trial in trials if trial.state == TrialState.COMPLETE}
    running = [trial for trial in trials if trial.state == TrialState.RUNNING]
    for finished in sorted(study.finished, key=lambda trial: trial.sample_index):
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
                    user_attrs={**run_attributes(finished.run_id, finished.run_name), SAMPLE_INDEX_ATTR: finished.sample_index},
                )
            )
    _fail(opened, running)
    return replaced


def _disowned(trials: Sequence[Any], finished_runs: set[str]) -> set[int]:
    """Numbers of the COMPLETE trials MLflow does not call finished, and of every COMPLETE trial
    after the first that names the same run."""
    disowned, seen = set(), set()
    for trial in trials:
        if trial.state != TrialState.COMPLETE:
            continue
        run_id = trial.user_attrs.get(RUN_ID_ATTR)
        if run_id not in finished_runs or run_id in seen:
            disowned.add(trial.number)
        seen.add(run_id)
    return disowned


def _rebuilt(study: ArmStudy, direction: str, trials: Sequence[Any], disowned: set[int]) -> optuna.Study:
    """The study anew, its trials copied in order, the `disowned` ones (and any still running) failed:
    Optuna cannot change a finished trial's state in place."""
    attributes = optuna.load_study(study_name=study.name, storage=study.storage).user_attrs
    optuna.delete_study(study_name=study.name, storage=study.storage)
    rebuilt = optuna.create_study(storage=study.storage, study_name=study.name, direction=direction)
    for key, value in attributes.items():
        rebuilt.set_user_attr(key, value)
    for trial in trials:
        if trial.number in disowned or trial.state == TrialState.RUNNING:
            trial = optuna.trial.create_trial(
                state=TrialState.FAIL,
                params=trial.params,
                distributions=trial.distributions,
                user_attrs=trial.user_attrs,
                system_attrs=trial.system_attrs,
                intermediate_values=trial.intermediate_values,
            )
        rebuilt.add_trial(copy.deepcopy(trial))
    return rebuilt


def fail_running(study: ArmStudy) -> None:
    """Fails the study's trials still running: the Tuner that ran them has stopped (Ctrl-C, an
    error), and a later `--resume` replaces them with new trials."""
    opened = optuna.load_study(study_name=study.name, storage=study.storage)
    _fail(opened, opened.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))


def _fail(opened: optuna.Study, trials: Iterable[Any]) -> None:
    for trial in trials:
        opened.tell(trial.number, state=TrialState.FAIL)


def enqueue_unfinished(study: ArmStudy, points: Sequence[dict[str, Any]], interrupted: Sequence[InterruptedTrial] = ()) -> None:
    """Queues every point that has not finished and is not queued yet, in order: a searcher asks the
    queue first. First the point of each `interrupted` trial (`RunLedger.interrupted_trials`, in
    their sampling order, drawn keys included) with its sample index, so its next run takes the
    interrupted trial's place; then `points`. A grid search so runs exactly the grid points MLflow
    lacks, whatever ran before, and a spec's starting points (`tune.enqueue`, which may name some
    searched keys only) run once each however often the search is resumed. A point has finished when
    a finished trial has its values. (Optuna's `enqueue_trial(skip_if_exists=True)` would skip a
    point any trial has, the interrupted trial whose point is to run again included.)"""
    opened = optuna.load_study(study_name=study.name, storage=study.storage)
    waiting = opened.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    queued = [trial.system_attrs.get(FIXED_PARAMS_ATTR, trial.params) for trial in waiting]
    queue = [(trial.values, {SAMPLE_INDEX_ATTR: trial.sample_index}) for trial in interrupted]
    for point, attributes in queue + [(point, None) for point in points]:
        if point in queued or any(_has(finished.values, point) for finished in study.finished):
            continue
        opened.enqueue_trial(dict(point), user_attrs=attributes)
        queued.append(point)


def starting_points(interrupted: Sequence[InterruptedTrial], starting: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The spec's starting points that no interrupted trial was running (that trial's full point,
    queued first by `enqueue_unfinished`, stands in for its starting point)."""
    return [point for point in starting if not any(_has(trial.values, point) for trial in interrupted)]


def interrupted_numbers(study: ArmStudy, interrupted: Sequence[InterruptedTrial]) -> frozenset[int]:
    """Numbers of the study's trials whose MLflow runs were interrupted: places in the search their
    re-runs take (`run.search.TrialSeeds`). A trial names its run once Tune has started it; one the
    driver died before naming (its run just created) is the failed trial without a run that has the
    run's point."""
    trials = optuna.load_study(study_name=study.name, storage=study.storage).get_trials(deepcopy=False)
    run_ids = {trial.run_id for trial in interrupted}
    numbers = {trial.number for trial in trials if trial.user_attrs.get(RUN_ID_ATTR) in run_ids}
    named = {trial.user_attrs.get(RUN_ID_ATTR) for trial in trials}
    unnamed = [trial for trial in trials if trial.state == TrialState.FAIL and RUN_ID_ATTR not in trial.user_attrs]
    for run in interrupted:
        match = next((trial for trial in unnamed if run.run_id not in named and trial.params == run.values), None)
        if match is not None:
            numbers.add(match.number)
            unnamed.remove(match)
    return frozenset(numbers)


def _has(values: dict[str, Any], point: dict[str, Any]) -> bool:
    return all(key in values and values[key] == value for key, value in point.items())
