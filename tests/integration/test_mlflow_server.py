"""The tracking layer against a real `mlflow server` on 127.0.0.1 (started once: it needs 7-18 s).

Several processes create and log runs at once, the way Ray trials do (through the server, and
through the local SQLite default); a server that is down fails before anything starts;
`nerplat ui` serves a local store and its Optuna studies and prints URLs that answer.
"""

from __future__ import annotations

import json
import multiprocessing
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from host_load import scaled

from nerplat.errors import UserInputError
from nerplat.track import schema
from nerplat.track.experiment_tracker import ExperimentTracker
from nerplat.loopback import free_port, port_in_use
from nerplat.local_servers import LocalMlflowServer

pytestmark = pytest.mark.slow

ARM = "tiny/full/ce"
PROCESSES = 4
TRIALS_PER_PROCESS = 3
EPOCHS = 5


@pytest.fixture(scope="module")
def server_uri(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("mlflow-server")
    with LocalMlflowServer(f"sqlite:///{folder / 'mlflow.db'}", folder / "artifacts") as server:
        yield server.url


def _trial_worker(tracker: ExperimentTracker, arm_run_id: str, index: int, barrier, results) -> None:
    """One Ray-worker-like process: its own trials, a replicate, and a race on one shared name."""
    try:
        barrier.wait(timeout=60)
        shared = tracker.start_trial_run(arm_run_id, ARM, "shared", params={"train": {"lr": 1e-4}})
        own = []
        for number in range(TRIALS_PER_PROCESS):
            trial = tracker.start_trial_run(arm_run_id, ARM, f"p{index}-t{number}", params={"train": {"lr": index / 10}})
            for epoch in range(1, EPOCHS + 1):
                tracker.log_epoch(trial.run_id, {"dev_macro_f1": epoch / 10, "dev_best_macro_f1": epoch / 10}, epoch)
            tracker.finish(trial.run_id, "completed" if number else "early_stopped")
            own.append(trial.run_id)
        results.put((index, shared.run_id, own, None))
    except Exception as error:  # reported to the test, which fails with it
        results.put((index, None, [], repr(error)))


@pytest.mark.parametrize("store", ["server", "sqlite"])
def test_concurrent_processes_lose_and_duplicate_nothing(store, request, tmp_path):
    # The local default (one SQLite file shared by worker processes) must hold up as well.
    uri = request.getfixturevalue("server_uri") if store == "server" else f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker.open(uri, "concurrency")
    arm = tracker.start_arm_run(ARM, "tune")
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(PROCESSES), context.Queue()
    workers = [
        context.Process(target=_trial_worker, args=(tracker, arm.run_id, index, barrier, results))
        for index in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=180) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    assert [error for *_, error in outcomes if error] == []

    runs = tracker.client.search_runs([tracker.experiment_id], max_results=1000)
    by_key: dict[str, list] = {}
    for run in runs:
        by_key.setdefault(run.data.tags[schema.RUN_KEY], []).append(run)
    assert {key: len(found) for key, found in by_key.items() if len(found) > 1} == {}

    shared_ids = {shared for _, shared, _, _ in outcomes}
    assert shared_ids == {by_key[f"{ARM}/tune/shared"][0].info.run_id}

    for index, _, own, _ in outcomes:
        for number, run_id in enumerate(own):
            run = by_key[f"{ARM}/tune/p{index}-t{number}"][0]
            assert run.info.run_id == run_id
            assert run.info.status == "FINISHED"
            assert run.data.tags[schema.STATUS] == ("completed" if number else "early_stopped")
            assert run.data.tags[schema.PARENT_RUN] == arm.run_id
            assert run.data.params["train.lr"] == str(index / 10)
            history = tracker.client.get_metric_history(run_id, "dev_macro_f1")
            assert sorted(metric.step for metric in history) == list(range(1, EPOCHS + 1))
    expected = {f"{ARM}/tune", f"{ARM}/tune/shared"} | {
        f"{ARM}/tune/p{index}-t{number}" for index in range(PROCESSES) for number in range(TRIALS_PER_PROCESS)
    }
    assert set(by_key) == expected


def test_resume_through_the_server_skips_finished_work(server_uri):
    tracker = ExperimentTracker.open(server_uri, "resume")
    arm = tracker.start_arm_run(ARM, "replicate")
    replicate = tracker.start_replicate_run(arm.run_id, ARM, seed=1, partition=0)
    tracker.log_predictions(replicate.run_id, [["EU", "rejects"]], [["B-ORG", "O"]], [["B-ORG", "O"]])
    tracker.finish(replicate.run_id, "completed")

    restarted = ExperimentTracker.open(server_uri, "resume")
    again = restarted.start_replicate_run(restarted.start_arm_run(ARM, "replicate").run_id, ARM, seed=1, partition=0)
    assert (again.run_id, again.finished, again.status) == (replicate.run_id, True, "completed")
    artifacts = [item.path for item in tracker.client.list_artifacts(replicate.run_id)]
    assert artifacts == [schema.PREDICTIONS_ARTIFACT]  # uploaded through the server's artifact proxy


def test_a_server_that_is_down_stops_the_run_before_anything_starts(tmp_path):
    uri = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(UserInputError, match=re.escape(f"MLflow server at {uri} is not reachable")):
        ExperimentTracker.open(uri, "never-created")
    assert time.monotonic() - started < scaled(5)


def _read_lines(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)


def test_nerplat_ui_serves_the_runs_table_and_the_optuna_studies_then_stops_both(tmp_path, monkeypatch):
    import optuna

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("NERPLAT_OPTUNA_STORAGE", raising=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = ExperimentTracker.open(uri, "ui-experiment")
    summary = tracker.start_summary_run(plan={"arms": [ARM]}, resolved_spec="experiment: ui-experiment\n")
    studies = f"sqlite:///{tmp_path / 'optuna.db'}"  # where `nerplat run` keeps them: beside mlflow.db
    study = optuna.create_study(storage=studies, study_name=f"ui-experiment/{ARM}", direction="maximize")
    study.add_trial(
        optuna.trial.create_trial(
            params={"lr": 0.1}, distributions={"lr": optuna.distributions.FloatDistribution(0, 1)}, value=0.5
        )
    )
    optuna.create_study(storage=studies, study_name="another-experiment/a/full/ce")

    nerplat = Path(sys.executable).parent / "nerplat"
    process = subprocess.Popen(
        [str(nerplat), "ui", "--tracking-uri", uri, "--experiment", "ui-experiment"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True).start()
    try:
        line = lines.get(timeout=120)
        match = re.match(r"(http://127\.0\.0\.1:(\d+))/#/experiments/(\d+)/runs\b", line)
        assert match, line
        assert lines.get(timeout=60) == "  (ui-experiment)\n"  # the URL alone on its line, its label below
        assert "viewStateShareKey" not in line  # no shared-view banner on the table nerplat opens first
        base, port, experiment_id = match.group(1), int(match.group(2)), match.group(3)
        assert experiment_id == tracker.experiment_id
        with urllib.request.urlopen(match.group(0), timeout=10) as page:
            assert page.status == 200 and "<html" in page.read().decode().lower()
        api = f"{base}/ajax-api/2.0/mlflow/experiments/get?experiment_id={experiment_id}"
        with urllib.request.urlopen(api, timeout=10) as answer:
            assert json.load(answer)["experiment"]["name"] == "ui-experiment"
        artifact = f"{base}/get-artifact?path={schema.PLAN_ARTIFACT}&run_uuid={summary.run_id}"
        with urllib.request.urlopen(artifact, timeout=10) as answer:
            assert json.load(answer) == {"arms": [ARM]}

        line = lines.get(timeout=60)  # the experiment's studies only
        match = re.fullmatch(r"(http://127\.0\.0\.1:(\d+))/dashboard/studies/(\d+)\n", line)
        assert match, line
        assert lines.get(timeout=60) == f"  (ui-experiment/{ARM}: Optuna study)\n"
        dashboard, dashboard_port, study_id = match.group(1), int(match.group(2)), int(match.group(3))
        with urllib.request.urlopen(f"{dashboard}/api/studies/{study_id}", timeout=10) as answer:
            shown = json.load(answer)
        assert (
            shown["name"] == f"ui-experiment/{ARM}"
            and [t["params"][0]["param_external_value"] for t in shown["trials"]] == ["0.1"]
        )
        with urllib.request.urlopen(match.group(0).split()[0], timeout=10) as page:
            assert page.status == 200 and "<html" in page.read().decode().lower()

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
        assert not port_in_use(port) and not port_in_use(dashboard_port)
    finally:
        if process.poll() is None:
            process.terminate()  # lets `nerplat ui` stop its servers too
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
