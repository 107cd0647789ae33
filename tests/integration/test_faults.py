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
from host_load import scaled
from nerplat_processes import SPEC, finish, kill_a_trial_midway, nerplat, runs, trial_midway, wait_for

from nerplat.track import schema
from shell_text import joined_continuations

pytestmark = pytest.mark.slow

# Where a test counts runs rather than compares arms or reads models: replicates of the first
# partition only (2 runs, not 4), and no logged models.
FEW_REPLICATES = ("replicate: {seeds: 1, partitions: 2}", "replicate: {seeds: 1, partitions: 1, models: none}")
# One trial at a time, where a test needs no two at once: each phase then starts one trial worker
# instead of two, and a worker's start (Ray's worker, torch, the corpus) is most of a tiny run's work.
ONE_AT_A_TIME = ("max_concurrent: 2", "max_concurrent: 1")


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
    # 20 epochs, so the poll finds a trial midway: a quiet machine trained 8 between two polls.
    spec = spec_file(tmp_path, "lost_trial", ONE_AT_A_TIME, ("epochs: 2", "epochs: 20"), FEW_REPLICATES)
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
    spec = spec_file(tmp_path, "sigterm", ONE_AT_A_TIME, ("epochs: 2", "epochs: 60"))
    driver = nerplat("run", str(spec), "--workdir", str(tmp_path), "--no-analyze", workdir=tmp_path)
    wait_for(driver, tmp_path, "sigterm", trial_midway, "no tuning trial reported")
    driver.send_signal(signal.SIGTERM)
    code, output = finish(driver, timeout=300)
    assert code == 130, output
    assert "Stack trace" not in output and "*** SIG" not in output
    assert f"--workdir {tmp_path}" in joined_continuations(output) and "--resume" in output
    all_runs = runs(tmp_path, "sigterm")
    no_duplicates(all_runs)
    assert [r.info.run_name for r in all_runs if r.info.status == "RUNNING"] == []
    assert status_of(by_kind(all_runs, "summary")[0]) == "interrupted"
    assert "interrupted" in Counter(status_of(r) for r in by_kind(all_runs, "trial"))


def test_a_trial_no_node_can_place_is_refused_before_anything_is_written(tmp_path: Path):
    """Item 3: `cpus_per_worker: 4` on this 2-core machine exits 2 at once instead of hanging."""
    spec = spec_file(
        tmp_path, "unplaceable", ("analysis: {baseline: ce}", "analysis: {baseline: ce}\nresources: {cpus_per_worker: 4}")
    )
    code, output = finish(nerplat("run", str(spec), "--workdir", str(tmp_path), workdir=tmp_path), timeout=300)
    assert code == 2, output
    assert "a worker needs CPU 4" in output and "resources.cpus_per_worker" in output
    assert runs(tmp_path, "unplaceable") == []


def test_a_second_driver_of_a_running_experiment_is_refused(tmp_path: Path):
    """Item 4: a `--resume` while the first driver runs exits 2 and trains nothing; the first completes alone."""
    spec = spec_file(tmp_path, "two_drivers", FEW_REPLICATES, ONE_AT_A_TIME)
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
    from nerplat.local_servers import LocalMlflowServer

    spec = spec_file(tmp_path, "server_lost", FEW_REPLICATES, ONE_AT_A_TIME)
    backend, artifacts = f"sqlite:///{tmp_path / 'server.db'}", tmp_path / "server-artifacts"
    server = LocalMlflowServer(backend, artifacts)
    server.start()
    env = {"MLFLOW_TRACKING_URI": server.url, "NERPLAT_STORE_PATIENCE": "5"}
    try:
        driver = nerplat("run", str(spec), "--workdir", str(tmp_path), "--no-analyze", workdir=tmp_path, env=env)
        deadline = time.monotonic() + scaled(300)
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
        code, output = finish(
            nerplat("run", str(spec), "--workdir", str(tmp_path), "--no-analyze", "--resume", workdir=tmp_path, env=env)
        )
        assert code == 0, output
        all_runs = server_runs(server.url, "server_lost")
    no_duplicates(all_runs)
    assert status_of(by_kind(all_runs, "summary")[0]) == "completed"
    assert sum(status_of(r) in ("completed", "early_stopped") for r in by_kind(all_runs, "trial")) == 3
    assert Counter(status_of(r) for r in by_kind(all_runs, "replicate")) == {"completed": 2}


# -- the kill harness (issue 31, item 3; issue 62): the driver SIGKILLs itself at each recorded boundary --

# Every tuning point is a starting point, so a resumed search evaluates the same three points as a
# clean run and must choose the same one. Two trials at once (the quickstart's max_concurrent: they
# start, and MLflow names their runs, in either order), and points so close that the tiny encoder
# scores them alike: their dev values tie, so the choice rests on the tie-break alone (issue 62).
# One epoch, one replicate per arm, and one claim, so the report has a verdict table.
TIED_POINTS = "[{lambda: 0.5}, {lambda: 0.50001}, {lambda: 0.50002}]"
KILL_SPEC_EDITS = (
    ("tune: {search: tpe, scheduler: asha, num_samples: 3, max_concurrent: 2}",
     f"tune: {{search: tpe, scheduler: fifo, num_samples: 3, max_concurrent: 2, enqueue: {{mom: {TIED_POINTS}}}}}"),
    ("epochs: 2", "epochs: 1"),
    FEW_REPLICATES,
    ("analysis: {baseline: ce}",
     'analysis: {baseline: ce}\nclaims:\n  - {id: on_par, paper: "a test claim", source: "none: a test", method: mom,'
     " partner: ce, metric: micro_f1, kind: equivalent, margin: 1.0}"),
)
# boundary (NERPLAT_KILL_AT) -> what the killed driver had done: the n-th time each is reached
KILL_AT = {
    "trial_start:2": "both tuning trials ran: the second one's MLflow run was created and its Optuna trial asked",
    "status_tag:1": "the first trial's status tag was written, its run not ended",
    "mlflow_finish:2": "the second trial's MLflow run ended; the study not yet told",
    "optuna_commit:2": "the study was told the second trial's result",
    "tune_end:1": "between the phases: the arm's choice recorded, its tune run ended, no replicate started",
    "replicate:1": "the first replicate's run ended",
    "analysis:1": "every replicate ended; the analysis not started",
}
# What a driver killed inside the tune phase left, and its choice, is complete when tuning ends: its
# resume stops there (a replicate phase would start one more trial worker each), but for the kill
# while two trials ran, whose resume runs to the report (and is run again with optuna.db lost).
TUNE_ONLY = ("--tune-only", "--no-analyze")
TUNED_ARM = "conll2003/low_resource-40/mom"
TO_THE_REPORT = ("trial_start:2", "tune_end:1", "replicate:1", "analysis:1")


def kill_session(driver) -> None:
    """SIGKILLs what a dead driver left in its session (the embedded Ray's processes)."""
    import os

    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            session = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[3])
        except (OSError, IndexError, ValueError):
            continue
        if session == driver.pid:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


def one_record(workdir: Path, experiment: str) -> dict:
    """Checks that MLflow and the tuned arm's Optuna study tell the same story; returns what a resumed
    run must share with the clean one: the choice, the runs per kind and state (a kill's interrupted
    trials left out: only a killed run has them), the study's COMPLETE trials (sample index, point,
    value) and the report's verdict table, when there is a report."""
    import json

    import optuna
    from optuna.trial import TrialState

    from nerplat.run.study import SAMPLE_INDEX_ATTR

    all_runs = runs(workdir, experiment)
    no_duplicates(all_runs)
    assert [key_of(r) for r in all_runs if r.info.status == "RUNNING"] == []
    finished = [
        r for r in by_kind(all_runs, "trial") if r.info.status == "FINISHED" and status_of(r) in ("completed", "early_stopped")
    ]
    study = optuna.load_study(study_name=f"{experiment}/{TUNED_ARM}", storage=f"sqlite:///{workdir / 'optuna.db'}")
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    assert len(finished) == len(complete) == 3  # num_samples, never more
    assert sorted(t.user_attrs["mlflow_run_id"] for t in complete) == sorted(r.info.run_id for r in finished)
    assert len({r.data.tags[schema.SAMPLED] for r in finished}) == 3  # no point twice
    assert study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING)) == []
    (best,) = [r for r in finished if r.data.tags.get(schema.BEST_TRIAL) == "true"]
    (tune_run,) = [r for r in by_kind(all_runs, "arm") if key_of(r) == f"{TUNED_ARM}/tune"]
    assert status_of(tune_run) == "completed" and best.data.tags[schema.SAMPLED] == tune_run.data.tags[schema.SAMPLED]
    verdicts = workdir / "reports" / experiment / "verdicts.parquet"
    return {
        "choice": json.loads(tune_run.data.tags[schema.SAMPLED]),
        "runs": Counter((kind_of(r), status_of(r)) for r in all_runs if status_of(r) != "interrupted"),
        "study": sorted((t.user_attrs[SAMPLE_INDEX_ATTR], json.dumps(t.params), t.value) for t in complete),
        "verdicts": verdict_table(verdicts) if verdicts.exists() else None,
    }


# verdicts.parquet's columns of what a run cost and when, which a killed and resumed run spends otherwise
SPENT = ("cpu_hours", "gpu_hours", "first_test_at")


def verdict_table(path: Path) -> str:
    """The verdict table but what it cost, as JSON, where a NaN (a statistic one unit cannot give) equals itself."""
    import json

    import polars as pl

    table = pl.read_parquet(path)
    return json.dumps(table.drop([c for c in SPENT if c in table.columns]).to_dicts(), default=str)


def kind_of(run) -> str:
    """`trial`, `replicate`, `summary`, or an arm run's `arm/tune` or `arm/replicate`."""
    kind = run.data.tags[schema.KIND]
    return f"arm/{key_of(run).rsplit('/', 1)[1]}" if kind == "arm" else kind


def tuned(record: dict) -> dict:
    """The part of a run's record its tune phase decides."""
    return {"choice": record["choice"], "study": record["study"], "trials": record["runs"][("trial", "completed")]}


@pytest.fixture(scope="module")
def clean_kill_run(run_once, tmp_path_factory: pytest.TempPathFactory):
    """The kill harness's spec run to its report without a kill, once for all xdist workers."""
    spec = spec_file(tmp_path_factory.mktemp("clean"), "kill_clean", *KILL_SPEC_EDITS)
    clean = run_once("kill-clean", spec)
    assert clean.code == 0, clean.output
    return clean, spec


@pytest.fixture(scope="module")
def clean_record(clean_kill_run) -> dict:
    clean, _ = clean_kill_run
    record = one_record(clean.workdir, "kill_clean")
    assert len({value for _, _, value in record["study"]}) == 1, record["study"]  # the three trials tie
    assert record["verdicts"], "the clean run's report has no verdict table"
    return record


@pytest.mark.parametrize(
    "kill_at, optuna_db_lost", [(kill_at, False) for kill_at in KILL_AT] + [("trial_start:2", True)]
)
def test_a_driver_killed_at_a_boundary_resumes_to_one_record_and_the_clean_runs_choice(
    kill_at: str, optuna_db_lost: bool, clean_record: dict, tmp_path: Path
):
    """H1, L1, M11, issue 62: wherever the driver dies, two trials at a time and every score tied,
    and with optuna.db deleted after the kill, after --resume MLflow and the study agree (three
    finished trials, each COMPLETE once, nothing left running) and the run is the clean run's: the
    same choice, runs per state, study trials and, where it reaches its report, verdict table."""
    boundary = kill_at.split(":")[0]
    experiment = f"kill_{boundary}" + ("_lost_db" if optuna_db_lost else "")
    spec = spec_file(tmp_path, experiment, *KILL_SPEC_EDITS)
    flags = () if kill_at in TO_THE_REPORT else TUNE_ONLY
    driver = nerplat("run", str(spec), "--workdir", str(tmp_path), *flags, workdir=tmp_path, env={"NERPLAT_KILL_AT": kill_at})
    try:
        code, output = finish(driver)
    finally:
        kill_session(driver)
    assert code == -signal.SIGKILL, f"{kill_at} never reached ({KILL_AT[kill_at]}): exit {code}\n{output}"
    if optuna_db_lost:
        (tmp_path / "optuna.db").unlink()

    code, output = finish(nerplat("run", str(spec), "--workdir", str(tmp_path), *flags, "--resume", workdir=tmp_path))
    assert code == 0, output
    record = one_record(tmp_path, experiment)
    if flags:
        assert tuned(record) == tuned(clean_record)
    else:
        assert record == clean_record
    if boundary == "analysis":
        resume_of_a_finished_experiment(spec, tmp_path, tmp_path / "reports" / experiment)


def test_a_finished_run_whose_optuna_db_was_lost_resumes_and_analyzes_its_choice_rewriting_nothing(
    clean_kill_run, clean_record: dict, stores_copier, tmp_path: Path
):
    """Issue 62, item 1: the three tuning trials tie; the resume rebuilt the study from MLflow newest
    first, Optuna's lowest-number tie-break picked another point, the tune run's `nerplat.sampled`
    and `nerplat.best_trial` were rewritten, then the replicate run refused "the spec changed", and
    `nerplat analyze` reported a lambda the replicates were never trained with. Now the resume
    rebuilds the study in sampling order, reads the choice back and writes no record of the run."""
    clean, spec = clean_kill_run
    stores_copier(clean.workdir, tmp_path)
    before = recorded(tmp_path, "kill_clean")
    (tmp_path / "optuna.db").unlink()
    code, output = finish(nerplat("run", str(spec), "--workdir", str(tmp_path), "--resume", workdir=tmp_path))
    assert code == 0, output
    assert "spec changed" not in output and "starting Ray" not in output
    assert recorded(tmp_path, "kill_clean") == before
    assert one_record(tmp_path, "kill_clean") == clean_record
    code, output = finish(nerplat("analyze", "kill_clean", "--out", str(tmp_path / "again"), workdir=tmp_path))
    assert code == 0, output
    import polars as pl

    chosen = pl.read_parquet(tmp_path / "again" / "chosen.parquet")
    assert chosen["param.objective.lambda"].drop_nulls().to_list() == [clean_record["choice"]["objective.lambda"]]


def recorded(workdir: Path, experiment: str) -> dict:
    """What a resume must leave as it found it: every run's tags, params and status but the summary
    run's (its lease), and the metric histories of the tune phase's runs (the choice's value)."""
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{workdir / 'mlflow.db'}")
    found = {}
    for run in runs(workdir, experiment):
        if kind_of(run) == "summary":
            continue
        history = {
            key: [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]
            for key in run.data.metrics if kind_of(run) in ("trial", "arm/tune")
        }
        found[run.info.run_id] = (run.data.tags, run.data.params, history, run.info.status)
    return found


def resume_of_a_finished_experiment(spec: Path, workdir: Path, report: Path) -> None:
    """Issue 47: a resume with nothing left to run started Ray and analysed the same runs again; now
    it starts no Ray (no session folder under its RAY_TMPDIR) and keeps the report."""
    manifest = (report / ".nerplat-report.json").read_text()
    ray_tmp = workdir / "ray-tmp"
    code, output = finish(
        nerplat("run", str(spec), "--workdir", str(workdir), "--resume", workdir=workdir, env={"RAY_TMPDIR": str(ray_tmp)})
    )
    assert code == 0, output
    assert "starting Ray" not in output and not ray_tmp.exists()
    assert f"analysis unchanged, report at {report}" in " ".join(output.split()) and f"Report: {report}" in output
    assert (report / ".nerplat-report.json").read_text() == manifest


# The kill harness's run with its points drawn, not given: TPE models from the second trial on.
DRAWN_SPEC_EDITS = (
    ("tune: {search: tpe, scheduler: asha, num_samples: 3, max_concurrent: 2}",
     "tune: {search: {tpe: {n_startup_trials: 1}}, scheduler: fifo, num_samples: 3, max_concurrent: 1}"),
    ("epochs: 2", "epochs: 1"),
    FEW_REPLICATES,
)


def tuned_points(workdir: Path, experiment: str) -> tuple[list[dict], dict]:
    """The points of the tuned arm's finished trials, in start order, and its choice."""
    import json

    all_runs = runs(workdir, experiment)
    finished = sorted(
        (r for r in by_kind(all_runs, "trial") if status_of(r) in ("completed", "early_stopped")), key=lambda r: r.info.run_name
    )
    (tune_run,) = [r for r in by_kind(all_runs, "arm") if key_of(r) == f"{TUNED_ARM}/tune"]
    return [json.loads(r.data.tags[schema.SAMPLED]) for r in finished], json.loads(tune_run.data.tags[schema.SAMPLED])


@pytest.fixture(scope="module")
def clean_drawn(run_once, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], dict]:
    """The drawn points and the choice of `DRAWN_SPEC_EDITS` run without a kill, once for all xdist workers."""
    spec = spec_file(tmp_path_factory.mktemp("clean_drawn"), "drawn_clean", *DRAWN_SPEC_EDITS)
    clean = run_once("drawn-clean", spec, *TUNE_ONLY)
    assert clean.code == 0, clean.output
    return tuned_points(clean.workdir, "drawn_clean")


@pytest.mark.parametrize("kill_at", ["trial_start:2", "status_tag:2"])
def test_a_trial_a_killed_driver_interrupted_runs_its_point_again_and_the_resume_chooses_as_a_clean_run(
    kill_at: str, clean_drawn: tuple[list[dict], dict], tmp_path: Path
):
    """Issue 47: after a SIGKILL of the driver (as its second trial started, or once that trial had
    trained and its status tag was written) the interrupted trial's point was failed and never run
    again, and the resumed sampler drew other points: the arm chose lambda 0.0531 where a clean run
    chose 0.4676. Now the point runs again, the interrupted trial counts for nothing, and the
    resumed search draws and chooses what the clean run did."""
    import json

    experiment = "drawn_" + kill_at.split(":")[0]
    spec = spec_file(tmp_path, experiment, *DRAWN_SPEC_EDITS)
    driver = nerplat("run", str(spec), "--workdir", str(tmp_path), *TUNE_ONLY, workdir=tmp_path, env={"NERPLAT_KILL_AT": kill_at})
    try:
        code, output = finish(driver)
    finally:
        kill_session(driver)
    assert code == -signal.SIGKILL, f"{kill_at} never reached: exit {code}\n{output}"

    code, output = finish(nerplat("run", str(spec), "--workdir", str(tmp_path), *TUNE_ONLY, "--resume", workdir=tmp_path))
    assert code == 0, output
    trials = by_kind(runs(tmp_path, experiment), "trial")
    (interrupted,) = [r for r in trials if status_of(r) == "interrupted"]
    points, chosen = tuned_points(tmp_path, experiment)
    assert len(points) == 3  # num_samples finished: the interrupted trial is not one of them
    assert json.loads(interrupted.data.tags[schema.SAMPLED]) in points  # its point ran again
    assert (points, chosen) == clean_drawn


NAN_LOSS_PLUGIN = '''
import torch

from nerplat.objectives import OBJECTIVES
from nerplat.objectives.ce import CrossEntropy
from nerplat.objectives.base import ObjectiveConfig


class NanLossConfig(ObjectiveConfig):
    scale: float = 1.0


class NanLoss(CrossEntropy):
    def word_losses(self, scores, labels):
        return super().word_losses(scores, labels) * float("nan")


@OBJECTIVES.register("nan_loss", config=NanLossConfig)
def build(config, context):
    """Cross-entropy times NaN: a loss that is never finite."""
    return NanLoss(config)
'''


def test_a_loss_that_is_not_finite_fails_its_trials_and_the_arm_is_not_replicated(tmp_path: Path):
    """Issue 31, H4: every trial ended `completed` with `train_loss nan`, exit 0; now each trial fails
    naming the objective, the epoch and the step, the arm stays unreplicated and the run exits 1."""
    (tmp_path / "nan_loss_plugin.py").write_text(NAN_LOSS_PLUGIN)
    # One tuning trial: Tune never reuses the worker of a trial that failed, so each trial would start one.
    spec = spec_file(
        tmp_path, "nan_loss",
        ("  mom: {loss: mom, lambda: {uniform: [0.0, 1.0]}}", "  nan: {loss: nan_loss, scale: {uniform: [0.0, 1.0]}}"),
        ("analysis: {baseline: ce}", "analysis: {baseline: ce}\nplugins: [./nan_loss_plugin.py]"),
        ("num_samples: 3", "num_samples: 1"),
        FEW_REPLICATES,
    )
    code, output = finish(nerplat("run", str(spec), "--workdir", str(tmp_path), "--no-analyze", workdir=tmp_path))
    assert code == 1, output
    assert "the loss of objective 'nan_loss' (scale=" in output and "is nan at epoch 1, step " in output
    # the advice names the flag a fix of the spec, a corpus or a plugin needs (issue 31, M1)
    words = " ".join(output.split())  # the advice is wrapped between words at the terminal's width
    assert "add --rerun-changed when the fix changes the spec, a corpus or a plugin" in words and "--resume" in output
    assert "tuning incomplete: 0 of 1 trials finished" in output and "run failed" in output
    assert "Traceback" not in output
    all_runs = runs(tmp_path, "nan_loss")
    assert Counter(status_of(r) for r in by_kind(all_runs, "trial")) == {"failed": 1}
    replicated = {r.data.tags[schema.ARM] for r in by_kind(all_runs, "replicate")}
    assert replicated and all(arm.endswith("/ce") for arm in replicated)  # the nan arm is not replicated


def test_a_busy_metrics_port_an_address_without_a_cluster_and_a_small_file_size_limit_are_refused_before_ray(tmp_path: Path):
    """Issue 31, M6: each ended in an opaque Ray timeout or a ConnectionError traceback; now exit 2 naming
    the cause, before the MLflow and Optuna stores are created (issue 47)."""
    import resource
    import socket

    spec = spec_file(tmp_path, "preflight")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, output = finish(
            nerplat("run", str(spec), "--workdir", str(tmp_path), "--metrics-port", str(port), workdir=tmp_path), timeout=300
        )
        assert code == 2, output
        assert (
            f"port {port} on 127.0.0.1 cannot serve the metrics (another process listens on it)" in output
            and "--metrics-port" in output
        )
        code, output = finish(
            nerplat(
                "run", str(spec), "--workdir", str(tmp_path), "--resume", workdir=tmp_path, env={"RAY_ADDRESS": "127.0.0.1:1"}
            ),
            timeout=300,
        )
        assert code == 2, output
        assert "no Ray cluster answers at 127.0.0.1:1" in output and "at RAY_ADDRESS" in output

    def small_file_size_limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (100 << 20, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    run = nerplat("run", str(spec), "--workdir", str(tmp_path), "--resume", workdir=tmp_path, preexec_fn=small_file_size_limit)
    code, output = finish(run, timeout=300)
    assert code == 2, output
    assert "ulimit -f: 102400 KiB" in output and "Traceback" not in output
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "optuna.db").exists()  # each refused before writing


def test_a_token_protected_cluster_is_refused_naming_the_token(tmp_path: Path):
    """Issue 31, M6: joining a cluster with token authentication without its token is exit 2 with the
    variables to set, not a ConnectionError traceback minutes later."""
    from ray_nodes import LocalRayCluster

    spec = spec_file(tmp_path, "token")
    cluster = LocalRayCluster(tmp_path, head_cpus=1)
    try:
        cluster.start_head()
        env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "0" * 64}  # not the cluster's token
        code, output = finish(
            nerplat("run", str(spec), "--workdir", str(tmp_path), "--address", cluster.address, workdir=tmp_path, env=env),
            timeout=300,
        )
    finally:
        cluster.stop()
    assert code == 2, output
    assert f"the Ray cluster at {cluster.address} requires an authentication token" in output
    assert "RAY_AUTH_TOKEN" in output and "at --address" in output and "Traceback" not in output


def test_a_resume_after_the_corpus_changed_is_refused_naming_the_file_then_rerun_changed_runs_the_arm_anew(tmp_path: Path):
    """Issue 31, H3: tuned on one corpus, a resume replicated on a relabelled one without a word; each
    run now records its files' sha256, and the resume is refused like a spec change."""
    import shutil

    from nerplat.data.corpora import data_root

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for split in ("train", "dev", "test"):
        shutil.copyfile(data_root() / "conll2003" / f"{split}.txt", corpus / f"{split}.txt")
    spec = spec_file(
        tmp_path, "corpus_changed", ("dataset: conll2003", f"dataset: {{path: {corpus}}}"), FEW_REPLICATES, ONE_AT_A_TIME
    )
    tune_only = ("run", str(spec), "--workdir", str(tmp_path), "--tune-only")
    code, output = finish(nerplat(*tune_only, workdir=tmp_path))
    assert code == 0, output
    first = {r.info.run_id for r in by_kind(runs(tmp_path, "corpus_changed"), "trial")}
    assert len(first) == 3

    train = corpus / "train.txt"
    train.write_text(train.read_text().replace("\tB-PER", "\tB-ORG", 50))  # relabelled, the same sentences
    code, output = finish(nerplat(*tune_only, "--resume", workdir=tmp_path))
    assert code == 2, output
    assert f"{corpus}/train.txt changed" in output and "/mom" in output and "--rerun-changed" in output
    assert "Traceback" not in output and "starting Ray" not in output

    code, output = finish(nerplat(*tune_only, "--resume", "--rerun-changed", workdir=tmp_path))
    assert code == 0, output
    assert "the files some arms read changed" in output
    trials = by_kind(runs(tmp_path, "corpus_changed"), "trial")
    assert len(trials) == 3 and not first & {r.info.run_id for r in trials}  # run anew on the relabelled file
