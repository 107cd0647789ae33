"""Faults of `nerplat run` (issue 11), each with its exit code, its message and the store afterwards.

Real embedded Ray, real SQLite MLflow store, the tiny encoder on CoNLL-2003; every test runs the CLI
in a subprocess in its own working directory. A fault is injected as it happens for real: a worker
process killed, SIGTERM to the driver, a second driver on the same experiment, a spec the cluster
cannot place, a trial that raises.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from nerplat_processes import SPEC, finish, kill_a_trial_midway, nerplat, runs, trial_midway, wait_for

from nerplat.track import schema

pytestmark = pytest.mark.slow

# Where a test counts runs rather than compares arms or reads models: replicates of the first
# partition only (2 runs, not 4), and no logged models.
FEW_REPLICATES = ("replicate: {seeds: 1, partitions: 2}", "replicate: {seeds: 1, partitions: 1, models: none}")


def spec_file(tmp_path: Path, experiment: str, *edits: tuple[str, str]) -> Path:
    text = SPEC.read_text().replace("${NERPLAT_TEST_EXPERIMENT:-tiny_run}", experiment)
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / f"{experiment}.yaml"
    path.write_text(text)
    return path


def by_kind(all_runs: list, kind: str) -> list:
    return [run for run in all_runs if run.data.tags.get(schema.KIND) == kind]


def status_of(run) -> str | None:
    return run.data.tags.get(schema.STATUS)


def key_of(run) -> str:
    return run.data.tags[schema.RUN_KEY]


def no_duplicates(all_runs: list) -> None:
    assert [key for key, count in Counter(key_of(r) for r in all_runs).items() if count > 1] == []


def tuning_trial_started(all_runs: list) -> bool:
    return any("dev_micro_f1" in r.data.metrics for r in by_kind(all_runs, "trial"))


def test_a_lost_tuning_trial_leaves_its_arm_incomplete_and_resume_replaces_it(tmp_path: Path):
    """Item 2 and 5: a killed worker (no retries) fails the run; --resume runs the missing trial."""
    spec = spec_file(tmp_path, "lost_trial", ("max_concurrent: 2", "max_concurrent: 1"), ("epochs: 2", "epochs: 8"), FEW_REPLICATES)
    driver = nerplat("run", str(spec), "--workdir", str(tmp_path), "--no-analyze", workdir=tmp_path)
    kill_a_trial_midway(driver, tmp_path, "lost_trial")
    code, output = finish(driver)
    assert code == 1, output
    assert "tuning incomplete: 2 of 3 trials finished" in output
    assert "ActorDiedError" in output or "died" in output  # the failure's own message, not a summary of it
    assert "--workdir" in output and "--resume" in output
    all_runs = runs(tmp_path, "lost_trial")
    no_duplicates(all_runs)
    assert status_of(by_kind(all_runs, "summary")[0]) == "failed"
    mom_tune = next(r for r in by_kind(all_runs, "arm") if key_of(r).endswith("mom/tune"))
    assert status_of(mom_tune) == "failed" and schema.SAMPLED not in mom_tune.data.tags  # nothing chosen
    assert Counter(status_of(r) for r in by_kind(all_runs, "trial"))["failed"] == 1
    assert not any(key_of(r).startswith(mom_tune.data.tags[schema.ARM] + "/replicate") for r in all_runs)

    code, output = finish(nerplat("run", str(spec), "--workdir", str(tmp_path), "--no-analyze", "--resume", workdir=tmp_path))
    assert code == 0, output
    all_runs = runs(tmp_path, "lost_trial")
    no_duplicates(all_runs)
    trials = Counter(status_of(r) for r in by_kind(all_runs, "trial"))
    assert trials["completed"] + trials["early_stopped"] == 3 and trials["failed"] == 1
    assert status_of(by_kind(all_runs, "summary")[0]) == "completed"
    assert len(by_kind(all_runs, "replicate")) == 2


def test_sigterm_stops_the_run_like_ctrl_c_and_marks_its_runs_interrupted(tmp_path: Path):
    """Item 10: SIGTERM to the driver alone (as Kubernetes sends it): exit 130, runs interrupted, no stack dump."""
    # One trial at a time with 60 epochs (a tiny-encoder epoch takes well under a second), signalled
    # midway, so the signal lands while a trial trains: with 6 epochs a fast machine finished the
    # trial between the poll and the signal, and no trial was left to interrupt.
    spec = spec_file(tmp_path, "sigterm", ("max_concurrent: 2", "max_concurrent: 1"), ("epochs: 2", "epochs: 60"))
    driver = nerplat("run", str(spec), "--workdir", str(tmp_path), "--no-analyze", workdir=tmp_path)
    wait_for(driver, tmp_path, "sigterm", trial_midway, "no tuning trial reported")
    driver.send_signal(signal.SIGTERM)
    code, output = finish(driver, timeout=300)
    assert code == 130, output
    assert "Stack trace" not in output and "*** SIG" not in output
    assert f"--workdir {tmp_path}" in output and "--resume" in output
    all_runs = runs(tmp_path, "sigterm")
    no_duplicates(all_runs)
    assert [r.info.run_name for r in all_runs if r.info.status == "RUNNING"] == []
    assert status_of(by_kind(all_runs, "summary")[0]) == "interrupted"
    assert "interrupted" in Counter(status_of(r) for r in by_kind(all_runs, "trial"))


def test_a_trial_no_node_can_place_is_refused_before_anything_is_written(tmp_path: Path):
    """Item 3: `cpus_per_worker: 4` on this 2-core machine exits 2 at once instead of hanging."""
    spec = spec_file(tmp_path, "unplaceable", ("analysis: {baseline: ce}", "analysis: {baseline: ce}\nresources: {cpus_per_worker: 4}"))
    code, output = finish(nerplat("run", str(spec), "--workdir", str(tmp_path), workdir=tmp_path), timeout=300)
    assert code == 2, output
    assert "a worker needs CPU 4" in output and "resources.cpus_per_worker" in output
    assert runs(tmp_path, "unplaceable") == []


def test_a_second_driver_of_a_running_experiment_is_refused(tmp_path: Path):
    """Item 4: a `--resume` while the first driver runs exits 2 and trains nothing; the first completes alone."""
    spec = spec_file(tmp_path, "two_drivers", FEW_REPLICATES)
    first = nerplat("run", str(spec), "--workdir", str(tmp_path), "--no-analyze", workdir=tmp_path)
    wait_for(first, tmp_path, "two_drivers", tuning_trial_started, "no tuning trial reported")
    code, output = finish(nerplat("run", str(spec), "--workdir", str(tmp_path), "--no-analyze", "--resume", workdir=tmp_path))
    assert code == 2, output
    assert "being run by another driver" in output
    code, output = finish(first)
    assert code == 0, output
    all_runs = runs(tmp_path, "two_drivers")
    no_duplicates(all_runs)
    assert len(by_kind(all_runs, "trial")) == 3 and len(by_kind(all_runs, "replicate")) == 2
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    for run in by_kind(all_runs, "replicate"):  # trained once: one point per epoch
        steps = [point.step for point in client.get_metric_history(run.info.run_id, "dev_micro_f1")]
        assert len(steps) == len(set(steps)), steps


def test_a_run_whose_replicates_all_fail_ends_failed_with_every_message(tmp_path: Path):
    """Item 5: every replicate raises (a head the objective cannot use): exit 1, summary failed, no report."""
    spec = spec_file(
        tmp_path, "all_fail",
        ("  mom: {loss: mom, lambda: {uniform: [0.0, 1.0]}}\n", ""),
        ("tune: {search: tpe, scheduler: asha, num_samples: 3, max_concurrent: 2}\n", ""),
        ("train: {epochs: 2,", "train: {tune_threshold: true, epochs: 2,"),
    )
    code, output = finish(nerplat("run", str(spec), "--workdir", str(tmp_path), workdir=tmp_path))
    assert code == 1, output
    assert output.count("train.tune_threshold needs a head with decision thresholds") >= 2  # each replicate's message
    assert "run failed" in output and "--resume" in output and "Report:" not in output
    all_runs = runs(tmp_path, "all_fail")
    assert status_of(by_kind(all_runs, "summary")[0]) == "failed"
    assert Counter(status_of(r) for r in by_kind(all_runs, "replicate")) == {"failed": 2}
    assert not (tmp_path / "reports" / "all_fail").exists()


def test_a_two_worker_ddp_trial_reports_every_evaluation(tmp_path: Path):
    """(c): Ray Train waits for every rank at each report; rank 0 alone reporting evaluations hung."""
    spec = spec_file(
        tmp_path, "ddp",
        ("  mom: {loss: mom, lambda: {uniform: [0.0, 1.0]}}\n", ""),
        ("tune: {search: tpe, scheduler: asha, num_samples: 3, max_concurrent: 2}\n", ""),
        FEW_REPLICATES,
        ("analysis: {baseline: ce}", "resources: {workers: 2, cpus_per_worker: 0.5}"),
    )
    code, output = finish(nerplat("run", str(spec), "--workdir", str(tmp_path), "--no-analyze", workdir=tmp_path), timeout=900)
    assert code == 0, output
    (replicate,) = by_kind(runs(tmp_path, "ddp"), "replicate")
    assert status_of(replicate) == "completed"
    from mlflow import MlflowClient

    history = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").get_metric_history(replicate.info.run_id, "dev_micro_f1")
    assert sorted(point.step for point in history) == [1, 2]


def server_runs(uri: str, experiment: str) -> list:
    from mlflow import MlflowClient

    try:
        client = MlflowClient(uri)
        found = client.get_experiment_by_name(experiment)
        return client.search_runs([found.experiment_id], max_results=1000) if found else []
    except Exception:  # not there yet
        return []


def test_an_mlflow_server_lost_mid_run_is_retried_visibly_then_the_run_stops_with_the_resume_command(tmp_path: Path):
    """Item 9: the server goes away for good: retries announced, then exit 1 with the resume command
    (not a silent hang); a server back on the same store resumes the experiment to completion."""
    from nerplat.track.ui_server import LocalMlflowServer

    spec = spec_file(tmp_path, "server_lost", FEW_REPLICATES)
    backend, artifacts = f"sqlite:///{tmp_path / 'server.db'}", tmp_path / "server-artifacts"
    server = LocalMlflowServer(backend, artifacts)
    server.start()
    env = {"MLFLOW_TRACKING_URI": server.url, "NERPLAT_STORE_PATIENCE": "5"}
    try:
        driver = nerplat("run", str(spec), "--workdir", str(tmp_path), "--no-analyze", workdir=tmp_path, env=env)
        deadline = time.monotonic() + 300
        while not tuning_trial_started(server_runs(server.url, "server_lost")):
            assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()[0]
            time.sleep(1)
    finally:
        server.stop()
    code, output = finish(driver, timeout=600)
    assert code == 1, output
    assert f"MLflow server at {server.url} is not answering" in output and "retrying in" in output
    assert "has not answered for" in output and "--resume" in output
    assert "Traceback" not in output

    with LocalMlflowServer(backend, artifacts, port=server.port):
        code, output = finish(nerplat("run", str(spec), "--workdir", str(tmp_path), "--no-analyze", "--resume", workdir=tmp_path, env=env))
        assert code == 0, output
        all_runs = server_runs(server.url, "server_lost")
    no_duplicates(all_runs)
    assert status_of(by_kind(all_runs, "summary")[0]) == "completed"
    assert sum(status_of(r) in ("completed", "early_stopped") for r in by_kind(all_runs, "trial")) == 3
    assert Counter(status_of(r) for r in by_kind(all_runs, "replicate")) == {"completed": 2}
