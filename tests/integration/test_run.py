"""`nerplat run` end to end: real embedded Ray, real SQLite MLflow store, real CoNLL-2003, tiny encoder.

Each test runs the CLI in a subprocess (its own Ray instance, stopped when the process ends) in a
temporary working directory, then reads what the run left in MLflow. The complete run of the spec
is `finished_tiny_run` (conftest.py), shared with the tests that only read it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from host_load import scaled
from nerplat_processes import SPEC, finish, kill_a_trial_midway, nerplat, runs, wait_for

from nerplat.config.experiment import TUNE_SEED
from nerplat.track import schema
from shell_text import joined_continuations

pytestmark = pytest.mark.slow

NUM_SAMPLES = 3  # tune.num_samples of the spec
REPLICATES_PER_ARM = 2  # 1 seed x 2 partitions


def key_of(run) -> str:
    return run.data.tags[schema.RUN_KEY]


def check_complete_experiment(workdir: Path, experiment: str) -> list:
    all_runs = runs(workdir, experiment)
    keys = Counter(key_of(run) for run in all_runs)
    assert [key for key, count in keys.items() if count > 1] == [], "an MLflow run was duplicated"
    kinds = Counter(run.data.tags[schema.KIND] for run in all_runs)
    assert kinds["summary"] == 1
    assert kinds["arm"] == 3  # ce/replicate, mom/tune, mom/replicate
    replicates = [run for run in all_runs if run.data.tags[schema.KIND] == "replicate"]
    assert len(replicates) == 2 * REPLICATES_PER_ARM
    for run in replicates:
        assert run.info.status == "FINISHED" and run.data.tags[schema.STATUS] == "completed"
        assert 0.0 <= run.data.metrics["test_micro_f1"] <= 1.0
        assert {"train_sentences", "train_size_factor", "test_macro_f1"} <= set(run.data.metrics)
    trials = [run for run in all_runs if run.data.tags[schema.KIND] == "trial"]
    finished = [run for run in trials if run.data.tags.get(schema.STATUS) in ("completed", "early_stopped")]
    assert len(finished) == NUM_SAMPLES
    for run in finished:
        assert "objective.lambda" in run.data.params
        assert "dev_best_micro_f1" in run.data.metrics
    check_one_registered_model_per_arm(workdir, experiment, replicates)
    return all_runs


def check_optuna_studies(workdir: Path, experiment: str, all_runs: list) -> dict[str, int]:
    """One Optuna study per tuned arm beside the MLflow store, each trial once, matching MLflow's
    trials by run id: its params are the values the trial ran with, its value the one it reported.
    Returns the study ids by name."""
    import optuna
    from optuna.trial import TrialState

    storage = optuna.storages.RDBStorage(f"sqlite:///{workdir / 'optuna.db'}")
    tune_parents = {run.info.run_id: run for run in all_runs if key_of(run).endswith("/tune")}
    names = sorted(f"{experiment}/{run.data.tags[schema.ARM]}" for run in tune_parents.values())
    assert sorted(optuna.get_all_study_names(storage)) == names
    trial_runs = {run.info.run_id: run for run in all_runs if run.data.tags[schema.KIND] == "trial"}
    for name in names:
        study = optuna.load_study(study_name=name, storage=storage)
        parent = tune_parents[study.user_attrs["nerplat.tune_run_id"]]
        complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        run_ids = [trial.user_attrs["mlflow_run_id"] for trial in complete]
        assert len(run_ids) == len(set(run_ids)) == NUM_SAMPLES, "a trial is missing from the study, or there twice"
        for trial in complete:
            run = trial_runs[trial.user_attrs["mlflow_run_id"]]
            assert (
                run.data.tags[schema.PARENT_RUN] == parent.info.run_id
                and trial.user_attrs["mlflow_run_name"] == run.info.run_name
            )
            assert run.data.tags[schema.STATUS] in ("completed", "early_stopped")
            assert trial.params == json.loads(run.data.tags[schema.SAMPLED])
            assert trial.value == run.data.metrics["dev_best_micro_f1"]
        chosen = json.loads(parent.data.tags[schema.SAMPLED])
        assert chosen in [trial.params for trial in complete if trial.value == max(t.value for t in complete)]
        assert study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING)) == []
    return {name: storage.get_study_id_from_name(name) for name in names}


def check_progress_lines(output: str) -> None:
    """Piped (as in CI), the run says what starts as it starts, then prints timestamped status lines."""
    stages = [
        "opening the MLflow store", "starting Ray", "Ray started, dashboard at http://127.0.0.1:", "tuning ", "replicates: ",
        "analysis: ",
    ]
    at = [output.find(stage) for stage in stages]
    assert -1 not in at and at == sorted(at), output
    assert re.search(
        r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} elapsed \S+; ETA \S+; trials \d+/\d+ done", output, re.MULTILINE
    ), output


def check_one_registered_model_per_arm(workdir: Path, experiment: str, replicates: list) -> None:
    """replicate.models defaults to best: one version per arm, from one of its replicates, even after --resume;
    each arm's model named by its label then the experiment (`mom.tiny_run`), the full arm in its tags."""
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{workdir / 'mlflow.db'}")
    models = client.search_registered_models(filter_string=f"tags.`{schema.EXPERIMENT}` = '{experiment}'")
    arms = {run.data.tags[schema.ARM] for run in replicates}
    assert sorted(model.tags[schema.ARM] for model in models) == sorted(arms)
    replicate_arm = {run.info.run_id: run.data.tags[schema.ARM] for run in replicates}
    for model in models:
        method = model.tags[schema.ARM].rsplit("/", 1)[1]
        assert model.name.startswith(f"{method}.") and model.name.endswith(f".{experiment}"), model.name
        versions = client.search_model_versions(f"name = '{model.name}'")
        assert [replicate_arm[v.run_id] for v in versions] == [model.tags[schema.ARM]]


def test_full_tiny_run_tracks_every_trial_and_replicate_once(finished_tiny_run):
    tmp_path, code, output = finished_tiny_run.workdir, finished_tiny_run.code, finished_tiny_run.output
    assert code == 0, output
    check_progress_lines(output)
    all_runs = check_complete_experiment(tmp_path, "tiny_run")
    replicate = next(run for run in all_runs if run.data.tags[schema.KIND] == "replicate")
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    artifacts = {item.path for item in client.list_artifacts(replicate.info.run_id)}
    assert {schema.PREDICTIONS_ARTIFACT, schema.DATA_CHECKSUMS_ARTIFACT} <= artifacts
    summary = next(run for run in all_runs if run.data.tags[schema.KIND] == "summary")
    assert schema.PLAN_ARTIFACT in {item.path for item in client.list_artifacts(summary.info.run_id)}
    assert "Report:" in output and (tmp_path / "reports" / "tiny_run").is_dir()
    # tuning trials and replicates draw from different seed streams (issue 12 item 7)
    seeds = {
        kind: {run.data.tags[schema.SEED] for run in all_runs if run.data.tags[schema.KIND] == kind}
        for kind in ("trial", "replicate")
    }
    assert seeds["trial"] == {str(TUNE_SEED)} and str(TUNE_SEED) not in seeds["replicate"]
    browse = joined_continuations(output)  # the `nerplat ui` command, as a shell reads it
    assert f"--optuna-storage sqlite:///{tmp_path.resolve() / 'optuna.db'}" in browse
    check_optuna_studies(tmp_path, "tiny_run", all_runs)
    # The embedded Ray's workers preloaded tcmalloc (run.allocator), as the run said, and each trial knows it.
    assert "trial workers allocate with tcmalloc (libtcmalloc_minimal.so.4)" in output
    workers = {run.data.tags.get(schema.MALLOC) for run in all_runs if run.data.tags[schema.KIND] in ("trial", "replicate")}
    assert workers == {"tcmalloc"}

    # A second run of the same experiment without --resume is refused before anything runs.
    code, output = finish(nerplat("run", str(SPEC), "--workdir", str(tmp_path), workdir=tmp_path))
    assert code == 2 and "--resume" in output


def a_trial_finished(all_runs: list) -> bool:
    return any(run.data.tags.get(schema.STATUS) in ("completed", "early_stopped") for run in all_runs)


def test_resume_after_killing_the_driver(tmp_path: Path):
    env = {"NERPLAT_TEST_EXPERIMENT": "killed_driver"}
    # One trial at a time: a phase then starts one trial worker (Ray's worker, torch, the corpus) instead of two.
    run = ("run", str(SPEC), "--workdir", str(tmp_path), "--no-analyze", "--set", "tune.max_concurrent=1")
    driver = nerplat(*run, workdir=tmp_path, env=env)
    wait_for(driver, tmp_path, "killed_driver", a_trial_finished, "no trial finished", seconds=scaled(300))
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    import optuna

    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'optuna.db'}")
    studies_before = {name: storage.get_study_id_from_name(name) for name in optuna.get_all_study_names(storage)}
    assert len(studies_before) == 1, "the tuned arm's study is written while the run goes"
    # A tuning trial is finished once its study holds it COMPLETE too: a kill between its status tag and
    # that commit leaves it interrupted, and the resume runs its point again (test_faults, status_tag:2).
    committed = {
        trial.user_attrs.get("mlflow_run_id")
        for name in studies_before
        for trial in optuna.load_study(study_name=name, storage=storage).get_trials(states=[optuna.trial.TrialState.COMPLETE])
    }
    before = {
        key_of(r): r.data.tags.get(schema.STATUS)
        for r in runs(tmp_path, "killed_driver")
        if r.data.tags.get(schema.KIND) != "trial" or r.info.run_id in committed
    }

    code, output = finish(nerplat(*run, "--resume", workdir=tmp_path, env=env))
    assert code == 0, output
    after = {key_of(r): r for r in runs(tmp_path, "killed_driver")}
    for key, status in before.items():
        if status in ("completed", "early_stopped"):  # finished work was kept, not re-run
            assert after[key].data.tags[schema.STATUS] == status
    all_runs = check_complete_experiment(tmp_path, "killed_driver")
    assert check_optuna_studies(tmp_path, "killed_driver", all_runs) == studies_before  # the same study continued


def test_a_resume_after_a_spec_change_reruns_only_the_arm_it_changes(tiny_run_copy: Path):
    """Resumes a copy of the shared finished run: the experiment it changes need not be run here first."""
    workdir = tiny_run_copy
    before = {run.info.run_id: run.data.tags[schema.ARM] for run in runs(workdir, "tiny_run") if schema.ARM in run.data.tags}
    resume = ("run", str(SPEC), "--workdir", str(workdir), "--no-analyze", "--resume", "--set", "methods.ce.train={epochs: 3}")
    code, output = finish(nerplat(*resume, workdir=workdir))
    assert code == 2 and "(changed: conll2003/low_resource-40/ce)" in output and "add --rerun-changed" in output

    code, output = finish(nerplat(*resume, "--rerun-changed", workdir=workdir))
    assert code == 0, output
    assert "running anew the arms it changes (changed: conll2003/low_resource-40/ce)" in output
    all_runs = check_complete_experiment(workdir, "tiny_run")  # one registered model per arm: the old ce version went
    kept = {run.info.run_id for run in all_runs}
    assert {run_id for run_id, arm in before.items() if arm.endswith("/mom")} <= kept  # the mom arm ran nothing again
    assert not {run_id for run_id, arm in before.items() if arm.endswith("/ce")} & kept
    ce_replicates = [
        run for run in all_runs if run.data.tags[schema.KIND] == "replicate" and run.data.tags[schema.ARM].endswith("/ce")
    ]
    assert [run.data.params["train.epochs"] for run in ce_replicates] == ["3", "3"]


def test_a_killed_worker_is_retried_from_its_checkpoint(tmp_path: Path):
    spec = tmp_path / "retry.yaml"
    spec.write_text(
        SPEC.read_text()
        .replace("${NERPLAT_TEST_EXPERIMENT:-tiny_run}", "killed_worker")
        .replace("epochs: 2", "epochs: 6")
        .replace("max_concurrent: 2", "max_concurrent: 1")
        .replace("analysis: {baseline: ce}", "analysis: {baseline: ce}\nresources: {max_retries: 2}")
    )
    driver = nerplat("run", str(spec), "--workdir", str(tmp_path), "--tune-only", workdir=tmp_path)
    kill_a_trial_midway(driver, tmp_path, "killed_worker")
    code, output = finish(driver)
    assert code == 0, output
    all_runs = runs(tmp_path, "killed_worker")
    assert Counter(key_of(r) for r in all_runs).most_common(1)[0][1] == 1
    trials = [r for r in all_runs if r.data.tags[schema.KIND] == "trial"]
    assert all(r.data.tags.get(schema.STATUS) in ("completed", "early_stopped") for r in trials), [
        (key_of(r), r.data.tags.get(schema.STATUS)) for r in trials
    ]
    # Resumed from the checkpoint of its last evaluation: no epoch was trained (and logged) twice.
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    for run in trials:
        steps = [point.step for point in client.get_metric_history(run.info.run_id, "dev_micro_f1")]
        assert len(steps) == len(set(steps)), f"{key_of(run)} repeated epochs {steps}"


def test_an_mlflow_server_that_is_down_fails_before_training(tmp_path: Path):
    from nerplat.loopback import free_port

    port = free_port()  # nothing listens on it
    started = time.monotonic()
    code, output = finish(
        nerplat("run", str(SPEC), "--workdir", str(tmp_path), workdir=tmp_path, env={"MLFLOW_TRACKING_URI": f"http://127.0.0.1:{port}"}),
        timeout=120,
    )
    assert code == 2, output
    assert f"127.0.0.1:{port}" in output and "not reachable" in output
    assert time.monotonic() - started < scaled(60)  # not MLflow's minutes of retries
    assert not (tmp_path / ".nerplat").exists(), "nothing may start before the store answers"


def test_a_spent_tune_time_budget_chooses_from_the_trials_that_finished(tmp_path: Path):
    """tune.time_budget_s as in Ray's TuneConfig: the search stops, the arm is chosen, the run succeeds."""
    # The budget must let a trial finish (the first one also waits for its worker to start) and the
    # sample count must not: the budget is `scaled` by the host's load, and a run whose budget ran out
    # before any trial finished says so ("raise it") and is run again with twice the budget, so the
    # pace of a loaded host fails no run; a build whose trials never finish still fails. One trial at
    # a time: trials run for the whole budget, and a second at once would only take the other core.
    budget, samples = round(scaled(15)), 10_000  # 10,000: the schema's largest num_samples
    for _ in range(3):
        workdir = tmp_path / f"budget-{budget}"
        workdir.mkdir()
        code, output = finish(
            nerplat(
                "run", str(SPEC), "--workdir", str(workdir), "--tune-only", "--no-analyze", "--set", "train.epochs=1",
                "--set", "tune.scheduler=fifo", "--set", "tune.max_concurrent=1",
                "--set", f"tune.num_samples={samples}", "--set", f"tune.time_budget_s={budget}", workdir=workdir,
            )
        )
        spent_too_soon = f"tune.time_budget_s ({budget} s) was spent before any trial finished"
        if code == 0 or spent_too_soon not in " ".join(output.split()):  # the console may wrap it
            break
        budget *= 2
    assert code == 0, output
    assert f"tune.time_budget_s ({budget} s) spent after" in output
    all_runs = runs(workdir, "tiny_run")
    mom_tune = next(r for r in all_runs if key_of(r).endswith("mom/tune"))
    assert mom_tune.data.tags[schema.STATUS] == "completed" and schema.SAMPLED in mom_tune.data.tags
    finished = [
        r for r in all_runs
        if r.data.tags.get(schema.KIND) == "trial" and r.data.tags.get(schema.STATUS) in ("completed", "early_stopped")
    ]
    assert 1 <= len(finished) < samples
