"""The ledger, the one MLflow writer of a run, on a real SQLite store: open, log, result, close, resume."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from nerplat.data.corpus import Sentence
from nerplat.run.job import SAMPLE_INDEX_KEY, TrialJob
from nerplat.run.ledger import RunLedger
from nerplat.run.trial_choice import FinishedTrial, InterruptedTrial
from nerplat.track import schema
from nerplat.track.predictions import read_conll_predictions
from nerplat.trial.results import Timings, TrialResult


@pytest.fixture
def mom(tiny_plan):
    return next(arm for arm in tiny_plan.arms if arm.search_space)


@pytest.fixture
def tune_parent(ledger: RunLedger, mom) -> str:
    return ledger.start_phase(mom, "tune", params={"search_space": {}}).run_id


def start_tuning_trial(
    ledger: RunLedger, arm, parent_run_id: str, trial_id: str, value: float = 0.5, sample_index: int | None = None
) -> str:
    """A trial Tune starts; with `sample_index`, as nerplat's searcher gives it (else as an earlier nerplat's did)."""
    job = TrialJob(
        arm=arm, phase="tune", seed=0, partition=0, eval_split=None, select_metric="micro_f1", parent_run_id=parent_run_id
    )
    index = {} if sample_index is None else {SAMPLE_INDEX_KEY: sample_index}
    ledger.start_trial(trial_id, job, {"objective.lambda": value, **index})
    return ledger.open[trial_id].run_id


def run_of(ledger: RunLedger, run_id: str):
    return ledger.tracker.client.get_run(run_id)


def test_tuning_trials_are_keyed_in_start_order_and_continue_after_an_earlier_session(ledger, mom, tune_parent):
    first = start_tuning_trial(ledger, mom, tune_parent, "a")
    second = start_tuning_trial(ledger, mom, tune_parent, "b")
    assert [run_of(ledger, r).data.tags[schema.RUN_KEY] for r in (first, second)] == [
        f"{mom.id}/tune/t0000", f"{mom.id}/tune/t0001"
    ]
    assert [run_of(ledger, r).info.run_name for r in (first, second)] == ["mom · t0000", "mom · t0001"]
    tagged = run_of(ledger, first).data
    assert tagged.tags[schema.SAMPLED] == '{"objective.lambda": 0.5}' and tagged.params["objective.lambda"] == "0.5"

    after_restart = RunLedger(ledger.tracker)
    third = start_tuning_trial(after_restart, mom, tune_parent, "c")
    assert run_of(ledger, third).data.tags[schema.RUN_KEY] == f"{mom.id}/tune/t0002"


def test_a_trial_started_again_after_a_failure_keeps_its_run(ledger, mom, tune_parent):
    run_id = start_tuning_trial(ledger, mom, tune_parent, "a")
    assert start_tuning_trial(ledger, mom, tune_parent, "a") == run_id
    assert len(ledger.children(tune_parent)) == 1


@pytest.fixture
def client_calls(ledger: RunLedger) -> list[str]:
    """Names of the MLflow client calls the ledger makes from now on (each call is one request to the store)."""
    client, calls = ledger.tracker.client, []

    class Recording:
        def __getattr__(self, name: str):
            method = getattr(client, name)

            def recorded(*args, **kwargs):
                calls.append(name)
                return method(*args, **kwargs)

            return recorded

    ledger.tracker._client = Recording()
    return calls


def test_an_evaluation_is_one_log_batch_request_with_every_metric_at_its_epoch(
    ledger, mom, tune_parent, evaluation_at, client_calls
):
    run_id = start_tuning_trial(ledger, mom, tune_parent, "a")
    client_calls.clear()
    evaluation = evaluation_at(2, 0.4)
    ledger.record_evaluation("a", evaluation, awaits_checkpoint=False)
    assert client_calls == ["log_batch"]
    client = ledger.tracker.client
    for key, value in evaluation.metrics().items():
        assert [(point.step, point.value) for point in client.get_metric_history(run_id, key)] == [(2, value)]


def test_a_result_logs_its_metrics_and_size_tag_in_one_request(ledger, mom, tune_parent, client_calls):
    run_id = start_tuning_trial(ledger, mom, tune_parent, "a")
    client_calls.clear()
    result = TrialResult(
        metrics={"test_micro_f1": 0.5}, evaluations=[], predictions=[], train_sentences=40, size_factor=0.01, selected_epoch=1,
        timings=Timings(total=3.0), data_checksums={"train": "abc"}, fit_converged=False,
    )  # fmt: skip
    ledger.record_result("a", result)
    assert client_calls == ["log_batch", "log_dict"]  # the checksums are an artifact
    logged = run_of(ledger, run_id).data
    assert logged.metrics["test_micro_f1"] == 0.5 and logged.metrics["selected_epoch"] == 1.0
    assert logged.metrics["fit_converged"] == 0.0
    assert logged.tags[schema.SIZE] == "40"


@pytest.mark.parametrize(
    "last_epoch, failed, status, mlflow_status",
    [(2, False, "completed", "FINISHED"), (1, False, "early_stopped", "FINISHED"), (1, True, "failed", "FAILED")],
)
def test_end_closes_the_run_with_the_trial_outcome(
    ledger, mom, tune_parent, evaluation_at, last_epoch, failed, status, mlflow_status
):
    run_id = start_tuning_trial(ledger, mom, tune_parent, "a")
    ledger.record_evaluation("a", evaluation_at(last_epoch, 0.4), awaits_checkpoint=False)
    assert ledger.end("a", failed=failed) == status
    run = run_of(ledger, run_id)
    assert (run.data.tags[schema.STATUS], run.info.status) == (status, mlflow_status)
    assert "a" not in ledger.open and ledger.end("a", failed=False) is None


def test_a_trial_its_early_stopping_ended_is_completed_and_tagged_with_why(ledger, mom, tune_parent, evaluation_at):
    run_id = start_tuning_trial(ledger, mom, tune_parent, "a")
    ledger.record_evaluation("a", evaluation_at(1, 0.4, epochs=5), awaits_checkpoint=False)
    ledger.record_evaluation("a", replace(evaluation_at(2, 0.3, epochs=5), stopped_by="patience"), awaits_checkpoint=True)
    assert ledger.end("a", failed=False) == "completed"  # not "early_stopped": no scheduler cut it
    logged = run_of(ledger, run_id).data
    assert logged.tags[schema.STOPPED_BY] == "patience" and logged.metrics["stopped_epoch"] == 2.0
    assert [p.step for p in ledger.tracker.client.get_metric_history(run_id, "stopped_epoch")] == [2]


def test_a_result_without_dev_evaluations_says_why_it_stopped(ledger, mom, tune_parent):
    run_id = start_tuning_trial(ledger, mom, tune_parent, "a")
    result = TrialResult(
        metrics={"test_micro_f1": 0.5}, evaluations=[], predictions=[], train_sentences=40, size_factor=0.01, selected_epoch=3,
        stopped_by="cap", stopped_epoch=3,
    )  # fmt: skip
    ledger.record_result("a", result)
    logged = run_of(ledger, run_id).data
    assert logged.tags[schema.STOPPED_BY] == "cap" and logged.metrics["stopped_epoch"] == 3.0


def test_interrupting_closes_open_runs_and_keeps_their_pending_evaluation(ledger, mom, tune_parent, evaluation_at):
    run_id = start_tuning_trial(ledger, mom, tune_parent, "a")
    ledger.record_evaluation("a", evaluation_at(1, 0.4), awaits_checkpoint=True)
    assert ledger.interrupt_open() == ["a"]
    run = run_of(ledger, run_id)
    assert (run.data.tags[schema.STATUS], run.info.status) == ("interrupted", "KILLED")
    assert run.data.metrics["dev_micro_f1"] == 0.4
    assert ledger.open == {}


def test_resume_marks_runs_a_dead_driver_left_running_and_returns_finished_trials(ledger, mom, tune_parent, evaluation_at):
    done = start_tuning_trial(ledger, mom, tune_parent, "done", value=0.25)
    ledger.record_evaluation("done", evaluation_at(2, 0.7), awaits_checkpoint=False)
    ledger.end("done", failed=False)
    orphan = start_tuning_trial(ledger, mom, tune_parent, "orphan")

    resumed = RunLedger(ledger.tracker)  # a new driver: it never opened "orphan"
    name = f"{mom.label} · t0000"
    assert resumed.finished_trials(tune_parent, "dev_best_micro_f1") == [
        FinishedTrial({"objective.lambda": 0.25}, 0.7, done, name)
    ]
    assert run_of(ledger, orphan).data.tags[schema.STATUS] == "interrupted"
    assert resumed.statuses(tune_parent) == {"completed": 1, "interrupted": 1}
    assert run_of(ledger, done).data.tags[schema.STATUS] == "completed"


def test_a_run_killed_between_its_status_tag_and_its_end_is_interrupted_on_resume(ledger, mom, tune_parent, evaluation_at):
    """L1: the tag said completed, MLflow said RUNNING, and no resume ever closed it."""
    run_id = start_tuning_trial(ledger, mom, tune_parent, "a")
    ledger.record_evaluation("a", evaluation_at(2, 0.7), awaits_checkpoint=False)
    ledger.tracker.client.set_tag(run_id, schema.STATUS, "completed")  # then the driver died: no set_terminated
    resumed = RunLedger(ledger.tracker)
    assert resumed.finished_earlier(mom, "tune") == 0
    assert resumed.finished_trials(tune_parent, "dev_best_micro_f1") == []
    run = run_of(ledger, run_id)
    assert (run.data.tags[schema.STATUS], run.info.status) == ("interrupted", "KILLED")


def test_finished_trials_leaves_the_runs_this_ledger_has_open(ledger, mom, tune_parent):
    run_id = start_tuning_trial(ledger, mom, tune_parent, "a")
    assert ledger.finished_trials(tune_parent, "dev_best_micro_f1") == []
    assert schema.STATUS not in run_of(ledger, run_id).data.tags


def test_a_replicate_result_is_logged_to_the_run_the_runner_opened(ledger, tiny_plan, tmp_path: Path):
    arm = tiny_plan.arms[0]
    parent = ledger.start_phase(arm, "replicate", params={})
    replicate = arm.replicates[0]
    run = ledger.open_replicate(
        parent.run_id, arm, replicate, arm.trial_config({}, seed=replicate.seed, partition=replicate.partition)
    )
    job = TrialJob(
        arm=arm, phase="replicate", seed=replicate.seed, partition=replicate.partition, eval_split="test",
        select_metric="micro_f1", parent_run_id=parent.run_id, run_id=run.run_id,
    )
    ledger.start_trial("r", job, {})
    result = TrialResult(
        metrics={"test_micro_f1": 0.5},
        evaluations=[],
        predictions=[(Sentence(("EU", "rejects"), ("B-ORG", "O")), ("B-ORG", "B-MISC"))],
        train_sentences=40,
        size_factor=0.01,
        selected_epoch=1,
        timings=Timings(total=3.0),
        notes=("carved dev",),
        data_checksums={"train": "abc"},
    )
    ledger.record_result("r", result)
    assert ledger.end("r", failed=False) == "completed"  # a final result completes the trial whatever its epochs

    logged = run_of(ledger, run.run_id)
    assert {k: logged.data.metrics[k] for k in ("test_micro_f1", "train_sentences", "selected_epoch", "trial_seconds")} == {
        "test_micro_f1": 0.5, "train_sentences": 40.0, "selected_epoch": 1.0, "trial_seconds": 3.0,
    }
    assert logged.data.tags[schema.SIZE] == "40"
    client = ledger.tracker.client
    predictions = client.download_artifacts(run.run_id, schema.PREDICTIONS_ARTIFACT, str(tmp_path))
    assert read_conll_predictions(Path(predictions)) == ([["EU", "rejects"]], [["B-ORG", "O"]], [["B-ORG", "B-MISC"]])
    assert {a.path for a in client.list_artifacts(run.run_id)} >= {schema.DATA_CHECKSUMS_ARTIFACT, "data_notes.txt"}


def test_resume_deletes_a_run_a_killed_driver_created_but_never_claimed(ledger, mom, tune_parent):
    start_tuning_trial(ledger, mom, tune_parent, "a")
    key = f"{mom.id}/tune/t0001"
    tracker = ledger.tracker
    unclaimed = tracker.client.create_run(  # killed before the claim
        tracker.experiment_id, run_name="mom · t0001", tags={schema.PARENT_RUN: tune_parent, schema.RUN_KEY: key}
    )
    resumed = RunLedger(ledger.tracker)
    resumed.finished_trials(tune_parent, "dev_best_micro_f1")
    assert run_of(ledger, unclaimed.info.run_id).info.lifecycle_stage == "deleted"
    run_id = start_tuning_trial(resumed, mom, tune_parent, "b")
    assert run_of(ledger, run_id).data.tags[schema.RUN_KEY] == key and run_of(ledger, run_id).data.tags[schema.KIND] == "trial"


def test_the_choice_is_logged_as_params_of_the_tune_run_and_its_trial_is_tagged_best(ledger, mom, tune_parent, evaluation_at):
    for trial_id, value, f1 in (("a", 0.25, 0.7), ("b", 0.75, 0.7), ("c", 0.5, 0.6)):  # a and b tie
        start_tuning_trial(ledger, mom, tune_parent, trial_id, value=value)
        ledger.record_evaluation(trial_id, evaluation_at(2, f1), awaits_checkpoint=False)
        ledger.end(trial_id, failed=False)
    chosen = next(t for t in ledger.finished_trials(tune_parent, "dev_best_micro_f1") if t.values == {"objective.lambda": 0.75})
    earlier = next(t for t in ledger.finished_trials(tune_parent, "dev_best_micro_f1") if t.values == {"objective.lambda": 0.25})
    ledger.tracker.client.set_tag(earlier.run_id, schema.BEST_TRIAL, "true")  # an earlier nerplat broke the tie the other way
    ledger.record_choice(tune_parent, chosen, "dev_best_micro_f1")
    ledger.record_choice(tune_parent, chosen, "dev_best_micro_f1")  # a resume chooses again
    run = run_of(ledger, tune_parent)
    assert run.data.params["objective.lambda"] == "0.75" and run.data.metrics["dev_best_micro_f1"] == 0.7
    best = {
        json.loads(r.data.tags[schema.SAMPLED])["objective.lambda"]: r.data.tags.get(schema.BEST_TRIAL)
        for r in ledger.children(tune_parent)
    }
    assert best == {0.25: None, 0.75: "true", 0.5: None}  # the chosen run, not the first with its value


def test_the_replicate_arm_run_carries_mean_and_sd_of_its_completed_replicates(ledger, tiny_plan):
    arm = tiny_plan.arms[0]
    parent = ledger.start_phase(arm, "replicate", params={})
    for seed, f1, status in ((1, 0.5, "completed"), (2, 0.7, "completed"), (3, 0.1, "failed")):
        run = ledger.tracker.start_replicate_run(parent.run_id, arm.id, seed=seed, partition=0)
        ledger.tracker.log_epoch(run.run_id, {"test_micro_f1": f1, "test_macro_f1": f1 / 2}, epoch=1)
        ledger.tracker.finish(run.run_id, status)
    ledger.record_replicate_summary(parent.run_id, "test")
    metrics = run_of(ledger, parent.run_id).data.metrics
    assert metrics["test_micro_f1_mean"] == pytest.approx(0.6) and metrics["test_micro_f1_sd"] == pytest.approx(0.1414, abs=1e-4)
    assert metrics["test_macro_f1_mean"] == pytest.approx(0.3)
    assert "test_micro_precision_mean" not in metrics


def test_the_summary_run_sets_the_experiments_runs_view_and_leases_its_bookkeeping_run(ledger, tiny_plan):
    from nerplat.track.lease import read_lease

    run = ledger.start_summary(tiny_plan)
    try:
        tracker = ledger.tracker

        view = json.loads(tracker.client.get_experiment(tracker.experiment_id).tags["mlflow.sharedViewState.nerplat"])
        assert view["selectedColumns"] == [
            "metrics.`dev_best_micro_f1`", "metrics.`test_micro_f1`", "metrics.`test_micro_f1_mean`",
            "metrics.`test_micro_f1_sd`", "params.`objective.lambda`", "tags.`nerplat.status`", "tags.`nerplat.best_trial`",
        ]
        assert read_lease(tracker.client, tracker.bookkeeping_run_id(run.run_id)).holder == ledger.lease.holder
        assert run_of(ledger, run.run_id).data.params == {}
    finally:
        ledger.release()


def test_the_runs_view_shows_the_dev_metric_runs_select_on_with_or_without_a_tune_section(tiny_plan_with):
    from nerplat.run.ledger import runs_view_columns

    macro = tiny_plan_with("tune.metric=dev_macro_f1")
    assert runs_view_columns(macro)["metrics"][0] == "dev_best_macro_f1"
    untuned = macro.model_copy(update={"tune": None})
    assert untuned.select_metric == "micro_f1" and runs_view_columns(untuned)["metrics"][0] == "dev_best_micro_f1"


def test_a_ledger_holding_the_lease_pickles_as_tune_pickles_its_callbacks(ledger, tiny_plan):
    import pickle

    from rich.console import Console

    console = Console(quiet=True)
    ledger.tracker.notify = lambda message: console.print(message)  # as the runner sets it
    ledger.start_summary(tiny_plan)
    try:
        copy = pickle.loads(pickle.dumps(ledger))
    finally:
        ledger.release()
    assert copy.lease is None and copy.tracker.experiment_id == ledger.tracker.experiment_id


def test_arm_parents_left_open_by_a_stop_are_marked_interrupted(ledger, tiny_plan):
    arm = tiny_plan.arms[-1]
    done = ledger.start_phase(arm, "tune", params={})
    ledger.finish(done.run_id, "completed")
    stopped = ledger.start_phase(arm, "replicate", params={})
    ledger.interrupt_phases()
    client = ledger.tracker.client
    assert client.get_run(done.run_id).data.tags["nerplat.status"] == "completed"
    run = client.get_run(stopped.run_id)
    assert (run.info.status, run.data.tags["nerplat.status"]) == ("KILLED", "interrupted")


def test_a_changed_spec_retires_the_changed_arms_runs_only_and_the_summary_keeps_the_earlier_plan(
    ledger, tiny_plan, tiny_plan_with
):
    from nerplat.run.spec_change import spec_change

    summary = ledger.start_summary(tiny_plan)
    ledger.finish_summary(summary.run_id, "completed")
    ce, mom = tiny_plan.arms
    runs = {}
    for arm in (ce, mom):
        parent = ledger.start_phase(arm, "replicate", params={})
        replicate = ledger.tracker.start_replicate_run(parent.run_id, arm.id, seed=1, partition=0)
        runs[arm.id] = (parent.run_id, replicate.run_id)
    changed = tiny_plan_with("methods.ce.train={epochs: 3}")
    change = spec_change(tiny_plan.spec_sha256, tiny_plan.model_dump(mode="json"), changed)
    try:
        assert ledger.start_summary(changed, change=change).run_id == summary.run_id  # finished, and still rewritten
        assert ledger.retire_arms(change.rerun) == (2, 0)  # no model was registered
    finally:
        ledger.release()
    client = ledger.tracker.client
    assert [client.get_run(run_id).info.lifecycle_stage for run_id in runs[ce.id]] == ["deleted", "deleted"]
    assert [client.get_run(run_id).info.lifecycle_stage for run_id in runs[mom.id]] == ["active", "active"]
    assert run_of(ledger, summary.run_id).data.tags[schema.SPEC_SHA] == changed.spec_sha256
    plans = {}
    for path in (schema.PLAN_ARTIFACT, f"superseded/{tiny_plan.spec_sha256[:12]}/{schema.PLAN_ARTIFACT}"):
        plans[path] = json.loads(Path(client.download_artifacts(summary.run_id, path)).read_text())
    assert [plan["spec_sha256"] for plan in plans.values()] == [changed.spec_sha256, tiny_plan.spec_sha256]
    # the arm runs anew: its parent is created again, not found deleted
    assert ledger.start_phase(ce, "replicate", params={}).run_id != runs[ce.id][0]


def test_what_an_earlier_session_finished_is_counted_per_arm_and_phase_without_opening_runs(
    ledger, tiny_plan, mom, tune_parent, evaluation_at
):
    ce = tiny_plan.arms[0]
    assert ledger.finished_earlier(ce, "replicate") == 0 and ledger.tracker.find_arm_run(ce.id, "replicate") is None
    for trial_id, last_epoch in (("a", 2), ("b", 1), ("c", None)):  # completed, early stopped, still running
        start_tuning_trial(ledger, mom, tune_parent, trial_id)
        if last_epoch is not None:
            ledger.record_evaluation(trial_id, evaluation_at(last_epoch, 0.5), awaits_checkpoint=False)
            ledger.end(trial_id, failed=False)
    parent = ledger.start_phase(ce, "replicate", params={})
    for seed, status in ((1, "completed"), (2, "failed")):
        run = ledger.tracker.start_replicate_run(parent.run_id, ce.id, seed=seed, partition=0)
        ledger.tracker.finish(run.run_id, status)
    assert ledger.finished_earlier(mom, "tune") == 2
    assert ledger.finished_earlier(ce, "replicate") == 1


def test_a_phase_is_completed_only_once_its_parent_run_ended_completed(ledger, tiny_plan, mom, tune_parent):
    ce = tiny_plan.arms[0]
    assert not ledger.phase_completed(ce, "replicate")  # never started
    assert not ledger.phase_completed(mom, "tune")  # running
    ledger.finish(tune_parent, "failed")
    assert not ledger.phase_completed(mom, "tune")
    ledger.tracker.client.set_tag(tune_parent, schema.STATUS, "completed")  # the tag alone: a driver killed before the end
    ledger.tracker.client.update_run(tune_parent, status="RUNNING")
    assert not ledger.phase_completed(mom, "tune")
    ledger.finish(tune_parent, "completed")
    assert ledger.phase_completed(mom, "tune") and not ledger.phase_completed(mom, "replicate")


def test_interrupted_trials_are_those_a_stop_ended_in_their_sampling_order_with_their_points(
    ledger, mom, tune_parent, evaluation_at
):
    """Issue 47: a resumed search runs each one's point again; a failed trial's point is not run again.
    Issue 62: in the order the search sampled them, which concurrent trials do not start in."""
    stopped = start_tuning_trial(ledger, mom, tune_parent, "stopped", value=0.1, sample_index=1)
    start_tuning_trial(ledger, mom, tune_parent, "failed", value=0.2, sample_index=2)
    ledger.end("failed", failed=True)
    start_tuning_trial(ledger, mom, tune_parent, "done", value=0.3, sample_index=3)
    ledger.record_evaluation("done", evaluation_at(2, 0.7), awaits_checkpoint=False)
    ledger.end("done", failed=False)
    ledger.interrupt_open()  # Ctrl-C: "stopped" is interrupted
    orphan = start_tuning_trial(ledger, mom, tune_parent, "orphan", value=0.4, sample_index=0)  # then a driver dies

    resumed = RunLedger(ledger.tracker)
    # orphan still RUNNING
    assert resumed.interrupted_trials(tune_parent) == [InterruptedTrial({"objective.lambda": 0.1}, stopped, 1)]
    resumed.finished_trials(tune_parent, "dev_best_micro_f1")  # what a resume does first: marks the orphan interrupted
    assert resumed.interrupted_trials(tune_parent) == [
        InterruptedTrial({"objective.lambda": 0.4}, orphan, 0), InterruptedTrial({"objective.lambda": 0.1}, stopped, 1)
    ]  # neither the failed trial nor the finished one
    assert resumed.taken_sample_indexes(tune_parent) == {0, 1, 2, 3}
    assert run_of(ledger, orphan).data.tags[schema.SAMPLE_INDEX] == "0"


def test_runs_of_an_earlier_nerplat_take_sample_indexes_in_start_order_before_the_recorded_ones(
    ledger, mom, tune_parent, evaluation_at
):
    for trial_id, index in (("old-a", None), ("old-b", None), ("new", 2)):
        start_tuning_trial(ledger, mom, tune_parent, trial_id, value={"old-a": 0.1, "old-b": 0.2, "new": 0.3}[trial_id],
                           sample_index=index)
        ledger.record_evaluation(trial_id, evaluation_at(2, 0.7), awaits_checkpoint=False)
        ledger.end(trial_id, failed=False)
    finished = ledger.finished_trials(tune_parent, "dev_best_micro_f1")
    assert [(t.values["objective.lambda"], t.sample_index) for t in finished] == [(0.1, 0), (0.2, 1), (0.3, 2)]


def test_a_completed_tune_phase_s_choice_is_read_back_as_recorded(ledger, mom, tune_parent, evaluation_at):
    """Issue 62: read, never chosen again; None when the record does not name a finished trial."""
    for trial_id, value in (("a", 0.25), ("b", 0.75)):
        start_tuning_trial(ledger, mom, tune_parent, trial_id, value=value, sample_index=int(value > 0.5))
        ledger.record_evaluation(trial_id, evaluation_at(2, 0.7), awaits_checkpoint=False)
        ledger.end(trial_id, failed=False)
    assert ledger.recorded_choice(mom, "dev_best_micro_f1") is None  # nothing chosen yet
    chosen = ledger.finished_trials(tune_parent, "dev_best_micro_f1")[1]
    ledger.record_choice(tune_parent, chosen, "dev_best_micro_f1")
    ledger.finish(tune_parent, "completed")
    assert ledger.recorded_choice(mom, "dev_best_micro_f1") == chosen
    assert ledger.replicated_choice(mom) is None
    ledger.start_phase(mom, "replicate", params={}, tags={schema.SAMPLED: json.dumps({"objective.lambda": 0.25})})
    assert ledger.replicated_choice(mom) == {"objective.lambda": 0.25}
    ledger.tracker.client.set_tag(tune_parent, schema.SAMPLED, json.dumps({"objective.lambda": 0.5}))  # no trial's point
    assert ledger.recorded_choice(mom, "dev_best_micro_f1") is None
