"""TrialEvents against a real SQLite MLflow store: what reaches MLflow when, around Tune's checkpoints.

Tune delivers a checkpointed result first and registers its checkpoint in a later step; these tests
replay that order of callbacks (as Ray's `TuneController` makes them) with a plain trial record.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from nerplat.run.events import TrialEvents
from nerplat.run.job import EVALUATION_KEY, PHASE_KEY, TrialJob
from nerplat.run.progress import ProgressBoard


@pytest.fixture
def events(ledger) -> TrialEvents:
    return TrialEvents(ledger, ProgressBoard("events", Console(quiet=True)))


@pytest.fixture
def trial(events: TrialEvents, tiny_plan, tmp_path: Path) -> SimpleNamespace:
    """A replicate-phase trial whose MLflow run (`run_id`) the runner opened beforehand."""
    arm = tiny_plan.arms[0]
    parent = events.ledger.start_phase(arm, "replicate", params={})
    run = events.ledger.open_replicate(parent.run_id, arm, arm.replicates[0], arm.trial_config({}, eval_split="test"))
    job = TrialJob(
        arm=arm, phase="replicate", seed=0, partition=0, eval_split="test", select_metric="micro_f1",
        parent_run_id=parent.run_id, run_id=run.run_id,
    )
    return SimpleNamespace(
        trial_id="trial_1", config={PHASE_KEY: job.model_dump(mode="json")}, local_path=str(tmp_path / "trial"), run_id=run.run_id
    )


@pytest.fixture
def result(evaluation_at):
    """A Tune result as the trainable reports an evaluation."""

    def make(epoch: int, f1: float, checkpointed: bool = True) -> dict:
        evaluation = evaluation_at(epoch, f1)
        return {**evaluation.metrics(), "epoch": epoch, EVALUATION_KEY: evaluation.to_dict(), "should_checkpoint": checkpointed}

    return make


def logged_epochs(events: TrialEvents, trial: SimpleNamespace) -> list[tuple[int, float]]:
    history = events.ledger.tracker.client.get_metric_history(trial.run_id, "dev_micro_f1")
    return [(point.step, point.value) for point in history]


def test_a_checkpointed_evaluation_is_logged_once_its_checkpoint_is_registered(events, trial, result):
    events.on_trial_start(0, [], trial)
    events.on_trial_result(0, [], trial, result(1, 0.3))
    assert logged_epochs(events, trial) == []
    events.on_checkpoint(0, [], trial, checkpoint=object())
    assert logged_epochs(events, trial) == [(1, 0.3)]


def test_a_worker_lost_before_its_checkpoint_logs_the_repeated_epoch_once(events, trial, result):
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


def test_a_trial_that_ends_keeps_its_last_evaluation(events, trial, result):
    events.on_trial_start(0, [], trial)
    events.on_trial_result(0, [], trial, result(1, 0.3))
    events.on_trial_error(0, [], trial)
    assert logged_epochs(events, trial) == [(1, 0.3)]
    assert events.outcomes[trial.trial_id] == "failed"


def test_results_without_a_checkpoint_are_logged_at_once(events, trial, result):
    events.on_trial_start(0, [], trial)
    events.on_trial_result(0, [], trial, result(1, 0.3, checkpointed=False))
    assert logged_epochs(events, trial) == [(1, 0.3)]


def test_a_completed_trial_feeds_the_board_and_is_marked_completed(events, trial, result):
    events.on_trial_start(0, [], trial)
    events.on_trial_result(0, [], trial, result(2, 0.6, checkpointed=False))
    events.on_trial_complete(0, [], trial)
    progress = events.board.phase(TrialJob.model_validate(trial.config[PHASE_KEY]).arm.id, "replicate", total=0)
    assert events.outcomes[trial.trial_id] == "completed"
    assert (progress.finished, progress.running, progress.best) == (1, 0, 0.6)
    assert events.ledger.tracker.client.get_run(trial.run_id).info.status == "FINISHED"


def test_a_failure_message_is_the_whole_innermost_exception_not_its_last_line():
    from nerplat.run.events import failure_message

    text = (
        "Failure # 1 (occurred at 2026-11-23_10-00-00)\n"
        "ray::ImplicitFunc.train() (pid=7, ip=127.0.0.1)\n"
        "Traceback (most recent call last):\n"
        '  File "trainable.py", line 3, in train\n'
        "    run()\n"
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "\tclass_name: ImplicitFunc\n"
        "\tpid: 7\n"
    )
    assert failure_message(text) == (
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "\tclass_name: ImplicitFunc\n\tpid: 7"
    )


def test_every_failed_trial_of_an_arm_is_kept_with_its_full_message(events, trial, tmp_path):
    error_file = tmp_path / "error.txt"
    error_file.write_text('Traceback (most recent call last):\n  File "x.py", line 1\nValueError: first line\nsecond line\n')
    events.on_trial_start(0, [], trial)
    events.on_trial_error(0, [], SimpleNamespace(**vars(trial), error_file=str(error_file)))
    arm_id = TrialJob.model_validate(trial.config[PHASE_KEY]).arm.id
    assert events.errors[arm_id] == ["ValueError: first line\nsecond line"]
    assert events.outcomes[trial.trial_id] == "failed"


def test_a_store_lost_as_a_trial_completes_is_raised_at_the_end_of_tunes_step(events, trial, result, monkeypatch):
    """Tune logs an exception from on_trial_complete with its traceback and carries on; the step's end lets it through."""
    from nerplat.track.store import StoreLost

    events.on_trial_start(0, [], trial)
    events.on_trial_result(0, [], trial, result(1, 0.3, checkpointed=False))

    def lost(*args, **kwargs):
        raise StoreLost("http://127.0.0.1:5000", 31, "connection refused")

    monkeypatch.setattr(events.ledger, "end", lost)
    events.on_trial_complete(0, [], trial)  # nothing escapes into Tune's handler
    with pytest.raises(StoreLost, match="has not answered for 31 s"):
        events.on_step_end(1, [])


def test_a_tuning_trial_tells_the_arms_study_which_mlflow_run_it_logs_to(ledger, tiny_plan, tmp_path: Path):
    told = []
    search = SimpleNamespace(record_run=lambda *args: told.append(args))  # stands for run.study.StudySearch
    events = TrialEvents(ledger, ProgressBoard("events", Console(quiet=True)), search=search)
    arm = next(arm for arm in tiny_plan.arms if arm.search_space)
    parent = ledger.start_phase(arm, "tune", params={})
    job = TrialJob(
        arm=arm, phase="tune", seed=0, partition=0, eval_split=None, select_metric="micro_f1", parent_run_id=parent.run_id
    )
    trial = SimpleNamespace(
        trial_id="trial_1", config={PHASE_KEY: job.model_dump(mode="json"), "objective.lambda": 0.5}, local_path=str(tmp_path)
    )
    events.on_trial_start(0, [], trial)
    assert told == [("trial_1", ledger.open["trial_1"].run_id, f"{arm.label} · t0000")]


def test_a_tuning_trials_end_reaches_its_study_only_after_its_mlflow_run_ended(ledger, tiny_plan, tmp_path: Path, result):
    """H1: Optuna committed a trial 16-73 ms before MLflow ended its run; a kill between left them disagreeing."""
    seen = []
    search = SimpleNamespace(
        record_run=lambda *args: None, tell=lambda trial_id: seen.append(ledger.tracker.client.get_run(run_id).info.status)
    )
    events = TrialEvents(ledger, ProgressBoard("events", Console(quiet=True)), search=search)
    arm = next(arm for arm in tiny_plan.arms if arm.search_space)
    parent = ledger.start_phase(arm, "tune", params={})
    job = TrialJob(
        arm=arm, phase="tune", seed=0, partition=0, eval_split=None, select_metric="micro_f1", parent_run_id=parent.run_id
    )
    trial = SimpleNamespace(
        trial_id="trial_1", config={PHASE_KEY: job.model_dump(mode="json"), "objective.lambda": 0.5}, local_path=str(tmp_path)
    )
    events.on_trial_start(0, [], trial)
    run_id = ledger.open["trial_1"].run_id
    events.on_trial_result(0, [], trial, result(2, 0.7, checkpointed=False))
    events.on_trial_complete(0, [], trial)
    assert seen == ["FINISHED"]


def test_a_replicate_tells_no_study(events, trial):
    events.search = SimpleNamespace(record_run=lambda *args: pytest.fail(f"told {args}"))
    events.on_trial_start(0, [], trial)


def test_trial_counts_and_each_evaluation_reach_the_exported_metrics(ledger, trial, result):
    from nerplat.run.exported_metrics import TRIAL_DEV_SCORE, TRIALS, TrialMetrics
    from nerplat.run.job import MALLOC_KEY, NODE_KEY

    metrics = TrialMetrics("events", linger_seconds=0)
    events = TrialEvents(ledger, ProgressBoard("events", Console(quiet=True)), metrics)

    def exported(name: str) -> dict[str, float]:
        return {
            dict(tags).get("state") or dict(tags)["trial"]: value
            for (metric, tags), value in metrics.current().items()
            if metric == name
        }

    events.on_trial_start(0, [], trial)
    assert exported(TRIALS.name) == {"running": 1.0, "finished": 0.0, "stopped": 0.0, "failed": 0.0}
    events.on_trial_result(0, [], trial, {**result(2, 0.3, checkpointed=False), NODE_KEY: "10.0.0.7", MALLOC_KEY: "system"})
    assert exported(TRIAL_DEV_SCORE.name) == {"p0-s0": 0.3}  # its MLflow run name `mom · p0 · s0` within the arm, in ASCII
    assert all(value.isascii() for _, tags in metrics.current() for _, value in tags)  # Ray refuses other tag values
    assert {dict(tags).get("node") for _, tags in metrics.current()} >= {"10.0.0.7"}
    events.on_trial_complete(0, [], trial)
    assert exported(TRIALS.name) == {"running": 0.0, "finished": 1.0, "stopped": 0.0, "failed": 0.0}
    assert exported(TRIAL_DEV_SCORE.name) == {}
    assert pickle.loads(pickle.dumps(events)).metrics is None  # Tune pickles its callbacks; the recorder's thread cannot be


def test_a_result_tags_the_trials_run_with_its_node_its_workers_malloc_precision_device_and_cpu_capability(events, trial, result):
    from nerplat.run.job import CPU_CAPABILITY_KEY, DEVICE_KEY, MALLOC_KEY, NODE_KEY, PRECISION_KEY
    from nerplat.track import schema

    events.on_trial_start(0, [], trial)
    facts = {
        NODE_KEY: "worker-1", MALLOC_KEY: "tcmalloc", PRECISION_KEY: "bf16", DEVICE_KEY: "cpu: EPYC x2 threads",
        CPU_CAPABILITY_KEY: "AVX2",
    }
    events.on_trial_result(0, [], trial, {**result(1, 0.3, checkpointed=False), **facts})
    tags = events.ledger.tracker.client.get_run(trial.run_id).data.tags
    assert (tags[schema.RAY_NODE], tags[schema.MALLOC]) == ("worker-1", "tcmalloc")
    assert (tags[schema.PRECISION], tags[schema.DEVICE], tags[schema.CPU_CAPABILITY]) == ("bf16", "cpu: EPYC x2 threads", "AVX2")
