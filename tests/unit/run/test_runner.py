"""The runner's decisions that need no running Ray: how many trials fit, which configuration wins, Ray settings."""

from __future__ import annotations

import inspect
import io
import os
import subprocess
import sys
from dataclasses import fields

import pytest

from nerplat.run.ray_session import RAY_SETTINGS, configure_ray_environment, trials_that_fit


def arm_with(tiny_plan, **resources):
    arm = tiny_plan.arms[0]
    return arm.model_copy(update={"resources": arm.resources.model_copy(update=resources)})


def test_trials_that_fit_divides_every_resource_a_trial_needs(tiny_plan):
    arm = arm_with(tiny_plan, cpus_per_worker=2, workers=1)
    assert trials_that_fit(arm, {"CPU": 7.0}, None) == 3
    assert trials_that_fit(arm, {"CPU": 7.0}, 2) == 2  # the spec's max_concurrent caps it
    gpus = arm_with(tiny_plan, cpus_per_worker=1, gpus_per_worker=1, workers=2)
    assert trials_that_fit(gpus, {"CPU": 16.0, "GPU": 5.0}, None) == 2  # 2 workers x 1 GPU each
    custom = arm_with(tiny_plan, cpus_per_worker=1, workers=1, custom={"accelerator": 1.0})
    assert trials_that_fit(custom, {"CPU": 16.0, "accelerator": 3.0}, None) == 3
    half_gpu = arm_with(tiny_plan, cpus_per_worker=1, gpus_per_worker=0.5, workers=1)
    assert trials_that_fit(half_gpu, {"CPU": 16.0, "GPU": 1.0}, None) == 2  # packed on one GPU
    assert trials_that_fit(
        arm_with(tiny_plan, cpus_per_worker=1, custom={"fake_gpu": 0.3}), {"CPU": 16.0, "fake_gpu": 1.0}, None
    ) == 3


def test_at_least_one_trial_runs_even_when_none_fits_yet(tiny_plan):
    """Tune waits for resources (an autoscaler may add nodes); a concurrency of 0 would stop nothing but the run."""
    assert trials_that_fit(arm_with(tiny_plan, cpus_per_worker=4), {"CPU": 2.0}, None) == 1
    assert trials_that_fit(arm_with(tiny_plan, cpus_per_worker=1), {"CPU": 0.999999999999}, None) == 1


def test_importing_the_runner_sets_no_environment_variable():
    env = {k: v for k, v in os.environ.items() if k not in RAY_SETTINGS and k != "NERPLAT_RAY_STORAGE"}
    code = (
        "import os; before = dict(os.environ); import nerplat.run.runner; "
        "print(sorted(set(os.environ.items()) ^ set(before.items())))"
    )
    changed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert changed.strip() == "[]"


def test_configure_ray_environment_keeps_the_users_values(monkeypatch: pytest.MonkeyPatch):
    for name in RAY_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAY_AIR_NEW_OUTPUT", "1")
    monkeypatch.delenv("NERPLAT_RAY_STORAGE", raising=False)
    configure_ray_environment("/tmp/ray-storage")
    assert os.environ["RAY_AIR_NEW_OUTPUT"] == "1"
    assert os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] == "1"
    assert os.environ["NERPLAT_RAY_STORAGE"] == "/tmp/ray-storage"


def test_a_trial_no_node_can_place_is_named_with_what_it_needs(tiny_plan):
    from nerplat.run.ray_session import placement_problem

    two_cores = [{"CPU": 2.0, "memory": 1e9}]
    problem = placement_problem(arm_with(tiny_plan, cpus_per_worker=4, workers=1), two_cores)
    assert problem is not None and "CPU 4" in problem and "largest: CPU 2" in problem
    # Two 1-CPU workers fit a node each, but not with the launcher's 0.01 CPU on a 2-core cluster.
    problem = placement_problem(arm_with(tiny_plan, cpus_per_worker=1, workers=2), two_cores)
    assert problem is not None and "2 workers" in problem and "CPU 2.01" in problem
    assert placement_problem(arm_with(tiny_plan, cpus_per_worker=0.5, workers=2), two_cores) is None
    assert placement_problem(arm_with(tiny_plan, cpus_per_worker=1, workers=1, custom={"tpu": 1.0}), two_cores) is not None
    assert placement_problem(arm_with(tiny_plan, cpus_per_worker=1, gpus_per_worker=0.5), [{"CPU": 2.0, "GPU": 1.0}]) is None


def test_a_run_with_a_failure_is_never_marked_completed():
    from nerplat.run.outcomes import ArmOutcome, RunSummary
    from nerplat.run.runner import _summary_status

    def summary(*outcomes, analysis_error=None):
        return RunSummary("e", "uri", "1", list(outcomes), analysis_error=analysis_error)

    fine = ArmOutcome("a", chosen={}, replicates={"completed": 2})
    assert _summary_status(summary(fine), replicated=True) == "completed"
    assert _summary_status(summary(fine), replicated=False) == "interrupted"
    assert _summary_status(summary(fine, ArmOutcome("b", replicates={"failed": 2})), replicated=True) == "failed"
    assert _summary_status(summary(fine, ArmOutcome("b", errors=["tuning incomplete"])), replicated=True) == "failed"
    assert _summary_status(summary(fine, analysis_error="disk full"), replicated=True) == "failed"


def runner_for(plan, tmp_path, console=None, **options):
    from rich.console import Console

    from nerplat.run.runner import ExperimentRunner, RunOptions

    return ExperimentRunner(plan, RunOptions(workdir=tmp_path, **options), console or Console(quiet=True))


def piped_console() -> tuple[object, io.StringIO]:
    from rich.console import Console

    stream = io.StringIO()
    return Console(file=stream, width=200), stream


def test_resume_after_a_spec_change_is_refused_before_ray_starts_when_what_changed_is_unknown(tiny_plan, tracking_uri, tmp_path):
    import ray

    from nerplat.errors import UserInputError
    from nerplat.track.experiment_tracker import ExperimentTracker

    earlier = ExperimentTracker.open(tracking_uri, tiny_plan.experiment, spec_sha256="0" * 64)
    earlier.start_summary_run({}, {})  # a plan.json without arms
    with pytest.raises(UserInputError, match="another resolved spec .* no plan.json with its arms"):
        runner_for(tiny_plan, tmp_path, resume=True, rerun_changed=True).run()
    assert not ray.is_initialized()
    assert not (tmp_path / ".nerplat").exists()


def test_resume_after_a_change_to_an_arm_names_it_and_is_refused_without_rerun_changed(
    tiny_plan, tiny_plan_with, tracking_uri, tmp_path
):
    import ray

    from nerplat.errors import UserInputError
    from nerplat.run.ledger import RunLedger
    from nerplat.track.experiment_tracker import ExperimentTracker

    ledger = RunLedger(ExperimentTracker.open(tracking_uri, tiny_plan.experiment, spec_sha256=tiny_plan.spec_sha256))
    summary = ledger.start_summary(tiny_plan)
    ledger.finish_summary(summary.run_id, "completed")
    ce_run = ledger.start_phase(tiny_plan.arms[0], "replicate", params={}).run_id
    changed = tiny_plan_with("methods.ce.train={epochs: 3}")
    with pytest.raises(
        UserInputError, match="changed the runs of arms \\(changed: conll2003/low_resource-40/ce\\).*add --rerun-changed"
    ):
        runner_for(changed, tmp_path, resume=True).run()
    assert not ray.is_initialized() and not (tmp_path / ".nerplat").exists()
    assert ledger.tracker.client.get_run(ce_run).info.lifecycle_stage == "active"  # nothing was deleted


def test_resume_after_a_change_outside_the_arms_is_accepted_and_keeps_every_run(
    tiny_plan, tiny_plan_with, tracking_uri, tmp_path
):
    from nerplat.run.ledger import RunLedger
    from nerplat.track.experiment_tracker import ExperimentTracker

    ledger = RunLedger(ExperimentTracker.open(tracking_uri, tiny_plan.experiment, spec_sha256=tiny_plan.spec_sha256))
    ledger.finish_summary(ledger.start_summary(tiny_plan).run_id, "completed")
    runner = runner_for(tiny_plan_with("analysis.alpha=0.01"), tmp_path, resume=True)
    runner._check_spec_change(ledger.tracker)
    assert runner.spec_change is not None and runner.spec_change.rerun == ()
    assert runner.spec_change.started_with == tiny_plan.spec_sha256


def test_a_report_folder_no_report_wrote_is_refused_before_ray_starts(tiny_plan, tracking_uri, tmp_path):
    import ray

    from nerplat.errors import UserInputError

    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "draft.tex").write_text("mine")
    console, stream = piped_console()
    with pytest.raises(UserInputError, match="not empty"):
        runner_for(tiny_plan, tmp_path, console, report_dir=paper).run()
    assert not ray.is_initialized() and (paper / "draft.tex").read_text() == "mine"
    assert "opening the MLflow store sqlite:///" in stream.getvalue()  # said at once, before anything slow


def test_a_tune_only_run_counts_no_replicates_in_its_progress(tiny_plan, tracking_uri, tmp_path, monkeypatch):
    from nerplat.run.ledger import RunLedger
    from nerplat.track.experiment_tracker import ExperimentTracker

    runner = runner_for(tiny_plan, tmp_path, replicate=False)
    runner.tracker = ExperimentTracker.open(tracking_uri, tiny_plan.experiment)
    runner.ledger = RunLedger(runner.tracker)
    runner._open_phases()
    monkeypatch.setattr(runner.tune_phase, "tune_arm", lambda arm, outcome: None)
    runner._run_arms()
    assert sorted(runner.board.phases) == [(arm.id, "tune") for arm in tiny_plan.arms if arm.tune_trials]


def test_a_resumed_run_counts_what_an_earlier_session_finished_from_its_start(tiny_plan, tracking_uri, tmp_path, monkeypatch):
    """Else its ETA counts the finished replicates of every arm until the replicate phase skips them."""
    from nerplat.run.ledger import RunLedger
    from nerplat.track.experiment_tracker import ExperimentTracker

    runner = runner_for(tiny_plan, tmp_path, resume=True)
    runner.tracker = ExperimentTracker.open(tracking_uri, tiny_plan.experiment)
    runner.ledger = RunLedger(runner.tracker)
    runner._open_phases()
    ce, mom = tiny_plan.arms
    parent = runner.ledger.start_phase(ce, "replicate", params={})
    earlier = runner.tracker.start_replicate_run(parent.run_id, ce.id, seed=ce.replicates[0].seed, partition=0)
    runner.tracker.finish(earlier.run_id, "completed")
    at_start = {}
    monkeypatch.setattr(
        runner.tune_phase,
        "tune_arm",
        lambda arm, outcome: at_start.update({k: p.skipped for k, p in runner.board.phases.items()}),
    )
    monkeypatch.setattr(runner.replicate_phase, "replicate", lambda arms, outcomes: None)
    runner._run_arms()
    assert at_start == {(mom.id, "tune"): 0, (ce.id, "replicate"): 1, (mom.id, "replicate"): 0}


def test_the_dashboard_url_of_a_ray_context():
    from types import SimpleNamespace

    from nerplat.run.ray_session import dashboard_url

    assert dashboard_url(SimpleNamespace(dashboard_url="127.0.0.1:8265")) == "http://127.0.0.1:8265"
    assert dashboard_url(SimpleNamespace(dashboard_url="https://ray.example.org")) == "https://ray.example.org"
    assert dashboard_url(SimpleNamespace(dashboard_url="")) is None and dashboard_url(SimpleNamespace()) is None


def test_an_analysis_that_cannot_write_fails_the_run_with_a_message(tiny_plan, tmp_path, monkeypatch):
    import errno

    from nerplat.run.outcomes import ArmOutcome, RunSummary
    from nerplat.run.runner import _summary_status

    console, stream = piped_console()
    runner = runner_for(tiny_plan, tmp_path, console)

    def disk_full():
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runner, "_analyze", disk_full)
    summary = RunSummary("e", "uri", "1", [ArmOutcome("a", chosen={}, replicates={"completed": 2})])
    runner._analyze_into(summary)
    assert f"analysis: statistics, tables and plots into {runner.report_dir}" in stream.getvalue()
    assert "No space left on device" in summary.analysis_error
    assert _summary_status(summary, replicated=True) == "failed"


def test_sigterm_stops_the_driver_as_ctrl_c_does():
    code = (
        "import os, signal\n"
        "from nerplat.run.ray_session import treat_sigterm_as_ctrl_c\n"
        "treat_sigterm_as_ctrl_c()\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    import time; time.sleep(5)\n"
        "except KeyboardInterrupt:\n"
        "    print('stopped like ctrl-c')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ)
    assert done.returncode == 0 and "stopped like ctrl-c" in done.stdout, done.stderr


def test_a_sqlite_store_this_driver_cannot_write_is_refused_before_anything_else(tiny_plan, tracking_uri, tmp_path, monkeypatch):
    """Issue 31, M7: said as read-only before Ray starts, not later as a lease "held by another driver".
    (Tests run as root, whom file modes do not stop: the file's mode is what `os.access` answers for.)"""
    import ray

    from nerplat.errors import StorageError
    from nerplat.run import runner as runner_module

    database = tmp_path / "mlflow.db"
    monkeypatch.setattr(runner_module.os, "access", lambda path, mode: not (mode == os.W_OK and str(path) == str(database)))
    with pytest.raises(StorageError) as refused:
        runner_for(tiny_plan, tmp_path, resume=True).run()
    assert f"the MLflow store at {tracking_uri} is read-only or not writable by this user ({database})" in str(refused.value)
    assert not ray.is_initialized() and not (tmp_path / ".nerplat").exists()


def test_a_later_look_does_not_count_this_sessions_earlier_look_as_skipped(tiny_plan, tracking_uri, tmp_path):
    """Sequential replication calls the replicate jobs once a look: the runs an earlier look of the same
    session finished are already counted as finished (the progress showed 12/9 and "ETA done")."""
    from nerplat.run.ledger import RunLedger
    from nerplat.track.experiment_tracker import ExperimentTracker

    runner = runner_for(tiny_plan, tmp_path)
    runner.tracker = ExperimentTracker.open(tracking_uri, tiny_plan.experiment)
    runner.ledger = RunLedger(runner.tracker)
    runner._open_phases()
    ce = tiny_plan.arms[0]
    parents: dict[str, str] = {}
    (first,) = runner.replicate_phase._replicate_jobs(ce, ce.replicates[:1], {}, parents)
    runner.tracker.finish(first["run_id"], "completed")
    progress = runner.board.phase(ce.id, "replicate", len(ce.replicates))
    progress.finished += 1  # what the trial's end event does
    second = runner.replicate_phase._replicate_jobs(ce, ce.replicates[:2], {}, parents)
    assert len(second) == 1 and progress.skipped == 0 and progress.finished + progress.skipped <= progress.total


def test_both_phases_see_what_the_run_opened_through_one_context(tiny_plan, tracking_uri, tmp_path):
    from nerplat.run.ledger import RunLedger
    from nerplat.track.experiment_tracker import ExperimentTracker

    runner = runner_for(tiny_plan, tmp_path, undecidable=frozenset({"weak"}))
    runner.tracker = ExperimentTracker.open(tracking_uri, tiny_plan.experiment)
    runner.ledger = RunLedger(runner.tracker)
    runner.study_storage = object()
    runner._open_phases()
    context = runner.tune_phase.context
    assert runner.replicate_phase.context is context
    assert (context.ledger, context.board, context.metrics) == (runner.ledger, runner.board, runner.metrics)
    assert (context.study_storage, context.undecidable, context.select_metric) == (
        runner.study_storage, frozenset({"weak"}), "micro_f1"
    )
    assert context.ray is runner.ray  # Ray's side of the run, which the phases call down into
    assert not [f.name for f in fields(context) if inspect.ismethod(getattr(context, f.name))]  # nothing calls back up


def test_a_file_size_limit_is_refused_before_the_stores_are_created(tmp_path):
    """Issue 47: under `ulimit -f 100` the run died on "(sqlite3.OperationalError) disk I/O error",
    leaving a half-built mlflow.db: the file-size check ran only when Ray started."""
    import shlex
    from pathlib import Path

    spec = Path(__file__).parents[2] / "integration" / "specs" / "tiny_run.yaml"
    workdir = tmp_path / "work"
    command = shlex.join([sys.executable, "-m", "nerplat.cli", "run", str(spec), "--workdir", str(workdir)])
    done = subprocess.run(
        ["bash", "-c", f"ulimit -f 100; exec {command}"], capture_output=True, text=True, timeout=600, env=os.environ
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "ulimit -f: 100 KiB" in output and "ulimit -f unlimited" in output and "Traceback" not in output
    assert "opening the MLflow store" not in output
    assert not workdir.exists() or list(workdir.iterdir()) == []  # no mlflow.db, optuna.db or .nerplat/


def test_a_resume_starts_ray_only_while_some_arm_has_a_phase_left_to_run(tiny_plan, tracking_uri, tmp_path):
    """Issue 47: a resume of a finished experiment started Ray (tens of seconds) to run nothing."""
    from nerplat.run.ledger import RunLedger
    from nerplat.run.spec_change import SpecChange
    from nerplat.track.experiment_tracker import ExperimentTracker

    def runner_on(plan, **options):
        runner = runner_for(plan, tmp_path, **options)
        runner.tracker = ExperimentTracker.open(tracking_uri, tiny_plan.experiment)
        runner.ledger = RunLedger(runner.tracker)
        return runner

    ledger = runner_on(tiny_plan).ledger
    ce, mom = tiny_plan.arms
    for arm, phase in ((ce, "replicate"), (mom, "tune")):
        ledger.finish(ledger.start_phase(arm, phase, params={}).run_id, "completed")
    assert runner_on(tiny_plan, resume=True, replicate=False)._work_left() is False  # --tune-only: its tuning is done
    assert runner_on(tiny_plan, resume=True)._work_left() is True  # mom's replicates are left
    ledger.finish(ledger.start_phase(mom, "replicate", params={}).run_id, "completed")
    assert runner_on(tiny_plan, resume=True)._work_left() is False
    assert runner_on(tiny_plan)._work_left() is True  # not a resume: refused later, but never guessed idle
    changed = runner_on(tiny_plan, resume=True)
    changed.spec_change = SpecChange("0" * 64, {}, changed=(ce.id,), removed=())
    assert changed._work_left() is True  # --rerun-changed deletes ce's runs: it runs anew
    changed.spec_change = SpecChange("0" * 64, {}, changed=(), removed=())
    assert changed._work_left() is False  # a change outside the arms (analysis settings) runs nothing
