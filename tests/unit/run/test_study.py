"""An arm's Optuna study on a real SQLite storage, brought in step with MLflow's finished trials on resume."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from nerplat.config.search_space import Choice, Uniform
from nerplat.run.job import SAMPLE_INDEX_KEY
from nerplat.run.search import SEARCHERS, TrialSeeds, optuna_distributions, tune_domains
from nerplat.run.study import (
    SAMPLE_INDEX_ATTR,
    ArmStudy,
    enqueue_unfinished,
    fail_running,
    interrupted_numbers,
    prepare_study,
    starting_points,
)
from nerplat.run.trial_choice import FinishedTrial, InterruptedTrial, chosen_trial
from nerplat.track.studies import open_optuna_storage

SPACE = {"objective.lambda": Uniform(low=0.0, high=1.0), "objective.base": Choice(options=("ce", "focal"))}
METRIC = "dev_best_micro_f1"
DONE = FinishedTrial({"objective.lambda": 0.25, "objective.base": "ce"}, 0.7, "run-a", "e/arm/tune/t0000")


@pytest.fixture
def storage(tmp_path: Path):
    return open_optuna_storage(f"sqlite:///{tmp_path / 'optuna.db'}")


def prepare(storage, finished=(), owner="tune-run", name="e/arm", taken=frozenset()) -> tuple[ArmStudy, bool]:
    study = ArmStudy(storage, name, tuple(finished), frozenset(taken))
    return study, prepare_study(study, owner=owner, metric=METRIC, mode="max", distributions=optuna_distributions(SPACE))


def searcher(study: ArmStudy, name: str = "tpe", seeds: TrialSeeds = TrialSeeds(0, "e/arm"), **params):
    """A searcher as Tune sets it up: the space comes with the Tuner's param_space."""
    search = SEARCHERS.build(name, params, at="tune.search", space=SPACE, seeds=seeds, study=study)
    assert search.set_search_properties(METRIC, "max", {"nerplat_job": {}, **tune_domains(SPACE)})
    return search


def ask(search, trial_id: str) -> dict:
    """What Tune asks the searcher for trial `trial_id`, without its sample index: the searched values."""
    return {key: value for key, value in search.suggest(trial_id).items() if key != SAMPLE_INDEX_KEY}


def trials(storage, name="e/arm") -> list:
    return optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False)


def test_a_new_study_takes_the_finished_trials_with_their_mlflow_runs(storage):
    prepare(storage, [DONE])
    [trial] = trials(storage)
    assert (trial.state, trial.params, trial.value) == (TrialState.COMPLETE, DONE.values, 0.7)
    assert trial.user_attrs == {"mlflow_run_id": "run-a", "mlflow_run_name": "e/arm/tune/t0000", SAMPLE_INDEX_ATTR: 0}
    study = optuna.load_study(study_name="e/arm", storage=storage)
    assert study.user_attrs["nerplat.tune_run_id"] == "tune-run" and study.metric_names == [METRIC]


def test_a_resumed_study_is_the_same_and_gets_no_finished_trial_twice(storage):
    study, _ = prepare(storage, [DONE])
    search = searcher(study)
    config = ask(search, "tune-1")
    search.record_run("tune-1", "run-b", "e/arm/tune/t0001")
    search.on_trial_complete("tune-1", {METRIC: 0.8})
    search.tell("tune-1")
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
    finished_in_mlflow = ask(search, "tune-1")
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
    interrupted = ask(search, "tune-1")
    fail_running(study)  # Ctrl-C: one point failed, two never started

    study, _ = prepare(storage, [first])
    search = searcher(study, "grid", **grid)
    asked = [ask(search, f"resume-{n}") for n in range(3)]
    points = [(p["objective.lambda"], p["objective.base"]) for p in asked]
    assert sorted(points) == [(0.0, "focal"), (1.0, "ce"), (1.0, "focal")]
    assert (interrupted["objective.lambda"], interrupted["objective.base"]) in points


def finish(search, trial_id: str, run_id: str, value: float | None, *, error: bool = False) -> dict:
    """Tune asks for a trial, it runs (logging to MLflow run `run_id`) and ends; the driver tells the study."""
    config = ask(search, trial_id)
    search.record_run(trial_id, run_id, f"e/arm/tune/{run_id}")
    search.on_trial_complete(trial_id, None if value is None else {METRIC: value}, error)
    search.tell(trial_id)
    return config


def test_the_study_is_told_only_when_the_driver_says_the_mlflow_run_ended(storage):
    """Tune reports a trial's end to its searcher before the ledger ends the MLflow run: held till `tell`."""
    study, _ = prepare(storage)
    search = searcher(study)
    search.suggest("tune-1")
    search.record_run("tune-1", "run-a", "t0000")
    search.on_trial_complete("tune-1", {METRIC: 0.8})
    assert [t.state for t in trials(storage)] == [TrialState.RUNNING]  # a kill now leaves MLflow ahead, never Optuna
    search.tell("tune-1")
    assert [(t.state, t.value) for t in trials(storage)] == [(TrialState.COMPLETE, 0.8)]


def test_a_trial_that_errored_fails_in_the_study_even_with_a_metric_reported(storage):
    study, _ = prepare(storage)
    finish(searcher(study), "tune-1", "run-a", 0.8, error=True)  # MLflow calls it failed
    assert [t.state for t in trials(storage)] == [TrialState.FAIL]


def test_a_complete_trial_mlflow_calls_interrupted_is_failed_on_resume_and_the_rest_kept(storage):
    """H1: the study was told before MLflow's end and the driver died between: the study held one
    COMPLETE trial too many, and a resume made it num_samples + 1."""
    study, _ = prepare(storage)
    search = searcher(study)
    first = finish(search, "tune-1", "run-a", 0.7)
    finish(search, "tune-2", "run-b", 0.9)  # told COMPLETE; its MLflow run was then marked interrupted
    search.suggest("tune-3")  # running when the driver died
    enqueue_unfinished(study, [{"objective.lambda": 0.5}])

    done = FinishedTrial(first, 0.7, "run-a", "e/arm/tune/run-a")
    _, replaced = prepare(storage, [done])
    assert not replaced
    found = trials(storage)
    assert [t.state for t in found] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.FAIL, TrialState.WAITING]
    assert found[0].params == first and found[0].user_attrs["mlflow_run_id"] == "run-a"
    assert found[1].params and found[1].user_attrs["mlflow_run_id"] == "run-b"  # kept, failed: the sampler's history stays
    assert optuna.load_study(study_name="e/arm", storage=storage).user_attrs["nerplat.tune_run_id"] == "tune-run"


def test_a_trial_told_twice_for_one_run_is_complete_once(storage):
    prepare(storage, [DONE])
    prepare(storage, [DONE])
    study = optuna.load_study(study_name="e/arm", storage=storage)
    study.add_trial(optuna.trial.create_trial(params=DONE.values, distributions=optuna_distributions(SPACE), value=0.7,
                                              user_attrs={"mlflow_run_id": "run-a", "mlflow_run_name": DONE.run_name}))
    prepare(storage, [DONE])
    assert [t.state for t in trials(storage)] == [TrialState.COMPLETE, TrialState.FAIL]


def test_each_sampled_trial_gets_the_smallest_sample_index_no_trial_holds(storage):
    """The index travels in the trial's Tune config to its MLflow run, and stays on the Optuna trial."""
    study, _ = prepare(storage, taken={0, 1, 3})  # MLflow's runs hold 0, 1 and 3 (2 was asked, never run)
    search = searcher(study)
    assert [search.suggest(f"tune-{n}")[SAMPLE_INDEX_KEY] for n in range(3)] == [2, 4, 5]
    assert search.suggest("tune-0")[SAMPLE_INDEX_KEY] == 2  # asked again: the same trial
    assert [t.user_attrs[SAMPLE_INDEX_ATTR] for t in trials(storage)] == [2, 4, 5]


def test_a_study_rebuilt_after_optuna_db_was_lost_holds_the_trials_in_their_sampling_order(storage):
    """Issue 62: MLflow lists the newest run first, and the study rebuilt in that order made Optuna's
    tie-break (the lowest trial number) pick another of three tied trials than the clean run."""
    finished = [FinishedTrial({"objective.lambda": lam, "objective.base": "ce"}, 0.0319, f"run-{n}", f"t{n:04d}", n)
                for n, lam in enumerate((0.8613, 0.7531, 0.6821))]
    study, _ = prepare(storage, reversed(finished))
    assert [(t.user_attrs["mlflow_run_id"], t.user_attrs[SAMPLE_INDEX_ATTR]) for t in trials(storage)] == [
        ("run-0", 0), ("run-1", 1), ("run-2", 2)
    ]
    assert chosen_trial(study.finished, "max") == finished[0]


def value_of(point: dict) -> float:
    """A trial's dev value as a function of its point, as a deterministic trial's is."""
    return round(1.0 - abs(point["objective.lambda"] - 0.3) + (0.01 if point["objective.base"] == "ce" else 0.0), 6)


def run_trials(search, prefix: str, count: int) -> list[dict]:
    """`count` trials one at a time, each ending with `value_of` its point; their points."""
    points = []
    for n in range(count):
        point = ask(search, f"{prefix}{n}")
        search.record_run(f"{prefix}{n}", f"{prefix}-run-{n}", f"{prefix}/t{n}")
        search.on_trial_complete(f"{prefix}{n}", {METRIC: value_of(point)})
        search.tell(f"{prefix}{n}")
        points.append(point)
    return points


def test_a_killed_and_resumed_search_asks_for_the_points_of_a_clean_run(storage):
    """Issue 47: the point of a trial the kill interrupted was failed and never run again, and the
    resumed sampler, seeded anew, drew other points: the arm chose lambda 0.0531 where a clean run
    chose 0.4676. Now the point runs again first, and each trial draws with its place's seed, so
    random start and TPE alike ask for a clean run's points."""
    clean_study, _ = prepare(storage, name="e/clean")
    clean = run_trials(searcher(clean_study, n_startup_trials=2), "clean", 5)

    study, _ = prepare(storage, name="e/killed")
    first = searcher(study, n_startup_trials=2)
    done = run_trials(first, "first", 2)
    killed = ask(first, "killed")
    first.record_run("killed", "killed-run", "t0002")  # the driver dies while this trial trains

    finished = [FinishedTrial(point, value_of(point), f"first-run-{n}", f"first/t{n}") for n, point in enumerate(done)]
    study, _ = prepare(storage, finished, name="e/killed")
    interrupted = [InterruptedTrial(killed, "killed-run")]
    enqueue_unfinished(study, [], interrupted)
    seeds = TrialSeeds(0, "e/arm", interrupted_numbers(study, interrupted))
    assert seeds.interrupted == {2}  # the study's trial 2, failed when the study was prepared
    resumed = run_trials(searcher(study, seeds=seeds, n_startup_trials=2), "resumed", 3)
    assert resumed[0] == killed  # the interrupted point, its drawn keys included, ran again first
    assert done + resumed == clean


def test_a_trial_the_driver_died_before_naming_its_run_is_found_by_its_point(storage):
    """Killed between creating the trial's MLflow run and naming it on the Optuna trial (kill point `trial_start`)."""
    study, _ = prepare(storage)
    search = searcher(study)
    named = finish(search, "tune-1", "run-a", 0.7)
    unnamed = ask(search, "tune-2")  # its run "run-b" was created; the driver died before `record_run`
    study, _ = prepare(storage, [FinishedTrial(named, 0.7, "run-a", "t0000")])
    assert interrupted_numbers(study, [InterruptedTrial(unnamed, "run-b")]) == {1}
    assert interrupted_numbers(study, [InterruptedTrial({**unnamed, "objective.lambda": 0.01}, "run-b")]) == frozenset()


def test_the_starting_points_queued_are_those_no_interrupted_trial_was_running():
    interrupted = [InterruptedTrial({"objective.lambda": 0.4, "objective.base": "focal"}, "run-b", 1),
                   InterruptedTrial({"objective.lambda": 0.9, "objective.base": "ce"}, "run-d", 3)]
    starting = [{"objective.lambda": 0.175}, {"objective.lambda": 0.4}, {"objective.lambda": 0.9, "objective.base": "focal"}]
    assert starting_points(interrupted, starting) == [
        {"objective.lambda": 0.175},
        {"objective.lambda": 0.9, "objective.base": "focal"},  # another point than the interrupted one
    ]  # {lambda: 0.4} was the interrupted trial's starting point: its full point stands in for it
    assert starting_points([], starting) == starting


def test_interrupted_points_are_queued_first_in_sampling_order_each_keeping_its_sample_index(storage):
    """Issue 62: two concurrent trials killed; their points were queued in MLflow start order (the
    second sampled had started first), so they ran again under other places and a tie chose another."""
    first, second = {"objective.lambda": 0.8613, "objective.base": "ce"}, {"objective.lambda": 0.7531, "objective.base": "ce"}
    study, _ = prepare(storage, taken={0, 1})
    interrupted = [InterruptedTrial(first, "run-a", 0), InterruptedTrial(second, "run-b", 1)]
    enqueue_unfinished(study, [{"objective.lambda": 0.175}], interrupted)
    search = searcher(study)
    asked = [search.suggest(f"resume-{n}") for n in range(4)]
    assert [(config["objective.lambda"], config[SAMPLE_INDEX_KEY]) for config in asked] == [
        (0.8613, 0), (0.7531, 1), (0.175, 2), (asked[3]["objective.lambda"], 3)
    ]


def test_a_killed_concurrent_search_resumed_chooses_among_tied_trials_as_the_clean_run(storage):
    """Two trials at once, every score tied (the tiny encoder's): killed while both ran, the study
    then lost; whatever order MLflow and the rebuilt study list the trials in, the choice is the clean run's."""
    points = [{"objective.lambda": lam, "objective.base": "ce"} for lam in (0.8613, 0.7531, 0.6821)]
    clean_study, _ = prepare(storage, name="e/clean")
    enqueue_unfinished(clean_study, points)
    clean = searcher(clean_study)
    clean_configs = [clean.suggest(f"c{n}") for n in range(3)]
    clean_trials = [FinishedTrial(points[n], 0.0319, f"c-run-{n}", f"t{n:04d}", c[SAMPLE_INDEX_KEY])
                    for n, c in enumerate(clean_configs)]

    study, _ = prepare(storage, name="e/killed")
    enqueue_unfinished(study, points)
    killed = searcher(study)
    indexes = [killed.suggest(f"k{n}")[SAMPLE_INDEX_KEY] for n in range(2)]  # both run; the driver dies
    # the second sampled started first: t0000 ran points[1]; resumed after optuna.db was lost
    interrupted = [InterruptedTrial(points[1], "k-run-1", indexes[1]), InterruptedTrial(points[0], "k-run-0", indexes[0])]
    storage.delete_study(storage.get_study_id_from_name("e/killed"))
    study, _ = prepare(storage, name="e/killed", taken=set(indexes))
    enqueue_unfinished(study, starting_points(interrupted, points), sorted(interrupted, key=lambda t: t.sample_index))
    resumed = searcher(study)
    configs = [resumed.suggest(f"r{n}") for n in range(3)]
    resumed_trials = [FinishedTrial({k: c[k] for k in SPACE}, 0.0319, f"r-run-{n}", f"t{n + 2:04d}", c[SAMPLE_INDEX_KEY])
                      for n, c in enumerate(configs)]
    assert sorted((t.sample_index, t.values["objective.lambda"]) for t in resumed_trials) == [
        (t.sample_index, t.values["objective.lambda"]) for t in clean_trials
    ]
    assert chosen_trial(resumed_trials[::-1], "max").values == chosen_trial(clean_trials, "max").values == points[0]


def test_an_interrupted_point_is_queued_once_and_not_after_it_finished(storage):
    point = {"objective.lambda": 0.4, "objective.base": "focal"}
    interrupted = [InterruptedTrial(point, "run-b"), InterruptedTrial(point, "run-c")]  # run again, interrupted again
    study, _ = prepare(storage)
    enqueue_unfinished(study, [], interrupted)
    enqueue_unfinished(study, [], interrupted)  # a resume stopped before it asked
    assert [t.system_attrs["fixed_params"] for t in trials(storage) if t.state == TrialState.WAITING] == [point]
    searcher(study).suggest("tune-1")  # the queued point runs and finishes
    finished = FinishedTrial(point, 0.5, "run-d", "t0003")
    fail_running(study)
    study, _ = prepare(storage, [finished])
    enqueue_unfinished(study, [], interrupted)
    assert [t for t in trials(storage) if t.state == TrialState.WAITING] == []


def test_starting_points_run_first_and_once_however_often_the_search_resumes(storage):
    start = [{"objective.lambda": 0.175}, {"objective.lambda": 0.446, "objective.base": "focal"}]
    study, _ = prepare(storage)
    enqueue_unfinished(study, start)
    enqueue_unfinished(study, start)  # queued already
    search = searcher(study)
    first = finish(search, "tune-1", "run-a", 0.7)
    assert first["objective.lambda"] == 0.175  # the partial point: the searcher drew the base
    search.suggest("tune-2")  # the second point was running when the driver died

    done = FinishedTrial({"objective.lambda": 0.175, "objective.base": first["objective.base"]}, 0.7, "run-a", "t0000")
    study, _ = prepare(storage, [done])
    enqueue_unfinished(study, start)
    resumed = searcher(study)
    assert ask(resumed, "resume-1") == {"objective.lambda": 0.446, "objective.base": "focal"}
    assert resumed.suggest("resume-2")["objective.lambda"] not in (0.175, 0.446)
