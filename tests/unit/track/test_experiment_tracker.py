import json
import pickle
import threading

import pytest
from mlflow.entities import ViewType

from nerplat.config.trial import Component, DatasetRef, TrialConfig
from nerplat.errors import UserInputError
from nerplat.track import schema
from nerplat.track.predictions import read_conll_predictions
from nerplat.track.run_claims import child_claim_key
from nerplat.track.experiment_tracker import BOOKKEEPING_EXPERIMENT_SUFFIX, ExperimentTracker
from nerplat.track.view import EXPERIMENT_KIND_TAG, HIDDEN_EXPERIMENT_TAG, MODEL_TRAINING

ARM = "conll2003/low_resource-100/mom"
CONFIG = TrialConfig(dataset=DatasetRef(name="conll2003"), objective=Component(name="mom", params={"lambda": 0.3}))


def runs_keyed(tracker, key, view=ViewType.ACTIVE_ONLY):
    return [
        run
        for run in tracker.client.search_runs([tracker.experiment_id], run_view_type=view, max_results=1000)
        if run.data.tags.get(schema.RUN_KEY) == key
    ]


def test_open_gets_or_creates_one_experiment_with_local_artifacts(tracker, tracking_uri, tmp_path):
    again = ExperimentTracker.open(tracking_uri, "unit-experiment")
    assert again.experiment_id == tracker.experiment_id
    experiment = tracker.client.get_experiment(tracker.experiment_id)
    assert experiment.name == "unit-experiment"
    assert experiment.tags[schema.EXPERIMENT] == "unit-experiment"
    assert experiment.artifact_location == str(tmp_path / "mlartifacts" / "unit-experiment")


def test_the_experiment_opens_in_mlflows_model_training_view(tracker, tracking_uri):
    assert tracker.client.get_experiment(tracker.experiment_id).tags[EXPERIMENT_KIND_TAG] == MODEL_TRAINING
    older = tracker.client.create_experiment("made-before-the-kind-tag")
    ExperimentTracker.open(tracking_uri, "made-before-the-kind-tag")
    assert tracker.client.get_experiment(older).tags[EXPERIMENT_KIND_TAG] == MODEL_TRAINING
    tracker.client.set_experiment_tag(older, EXPERIMENT_KIND_TAG, "genai_development")  # a user's choice stays
    ExperimentTracker.open(tracking_uri, "made-before-the-kind-tag")
    assert tracker.client.get_experiment(older).tags[EXPERIMENT_KIND_TAG] == "genai_development"


def test_a_deleted_experiment_is_a_user_error_not_a_silent_new_one(tracker, tracking_uri):
    tracker.client.delete_experiment(tracker.experiment_id)
    with pytest.raises(UserInputError, match="is deleted"):
        ExperimentTracker.open(tracking_uri, "unit-experiment")


def test_runs_get_deterministic_keys_short_names_tags_and_nesting(tracker):
    arm = tracker.start_arm_run(ARM, "tune", tags={schema.METHOD: "mom"}, label="mom")
    trial = tracker.start_trial_run(arm.run_id, ARM, "t0003", label="mom")
    replicate_arm = tracker.start_arm_run(ARM, "replicate", label="mom")
    replicate = tracker.start_replicate_run(replicate_arm.run_id, ARM, seed=2, partition=5, label="mom")
    summary = tracker.start_summary_run(plan={"arms": [ARM]}, resolved_spec="experiment: unit\n")

    runs = (arm, trial, replicate, summary)
    assert [run.key for run in runs] == [f"{ARM}/tune", f"{ARM}/tune/t0003", f"{ARM}/replicate/seed2-partition5", "summary"]
    assert [run.name for run in runs] == ["mom · tune", "mom · t0003", "mom · p5 · s2", "summary"]
    assert [tracker.client.get_run(run.run_id).info.run_name for run in runs] == [run.name for run in runs]
    assert [tracker.client.get_run(run.run_id).data.tags[schema.RUN_KEY] for run in runs] == [run.key for run in runs]
    assert tracker.start_trial_run(arm.run_id, ARM, "t0004").name == f"{ARM} · t0004"  # no label: the arm id
    tags = tracker.client.get_run(replicate.run_id).data.tags
    assert tags[schema.KIND] == "replicate" and tags[schema.PHASE] == "replicate"
    assert (tags[schema.SEED], tags[schema.PARTITION], tags[schema.ARM]) == ("2", "5", ARM)
    assert tags[schema.PARENT_RUN] == replicate_arm.run_id
    assert tags[schema.EXPERIMENT] == "unit-experiment"
    assert tags[schema.GIT_COMMIT] == tracker.environment["git"]["commit"]
    trial_tags = tracker.client.get_run(trial.run_id).data.tags
    assert (trial_tags[schema.KIND], trial_tags[schema.TRIAL], trial_tags[schema.PARENT_RUN]) == ("trial", "t0003", arm.run_id)
    arm_tags = tracker.client.get_run(arm.run_id).data.tags
    assert (arm_tags[schema.KIND], arm_tags[schema.METHOD]) == ("arm", "mom")
    assert schema.PARENT_RUN not in arm_tags
    assert tracker.client.get_run(summary.run_id).data.tags[schema.KIND] == "summary"


def test_resume_finds_runs_and_never_duplicates(tracker, tracking_uri):
    arm = tracker.start_arm_run(ARM, "tune")
    trial = tracker.start_trial_run(arm.run_id, ARM, "t1", params=CONFIG)
    assert not arm.resumed and not trial.resumed

    driver_after_restart = ExperimentTracker.open(tracking_uri, "unit-experiment")
    arm_again = driver_after_restart.start_arm_run(ARM, "tune")
    trial_again = driver_after_restart.start_trial_run(arm_again.run_id, ARM, "t1", params=CONFIG)
    assert (arm_again.run_id, trial_again.run_id) == (arm.run_id, trial.run_id)
    assert arm_again.resumed and trial_again.resumed and not trial_again.finished
    assert len(runs_keyed(tracker, f"{ARM}/tune")) == 1
    assert len(runs_keyed(tracker, f"{ARM}/tune/t1", ViewType.ALL)) == 1


def test_the_same_trial_id_in_another_arm_is_another_run(tracker):
    first = tracker.start_arm_run("a", "tune")
    second = tracker.start_arm_run("b", "tune")
    assert tracker.start_trial_run(first.run_id, "a", "t1").run_id != tracker.start_trial_run(second.run_id, "b", "t1").run_id


@pytest.mark.parametrize(
    "status,mlflow_status",
    [("completed", "FINISHED"), ("early_stopped", "FINISHED"), ("failed", "FAILED"), ("interrupted", "KILLED")],
)
def test_finish_sets_status_tag_and_mlflow_status(tracker, status, mlflow_status):
    arm = tracker.start_arm_run(ARM, "tune")
    trial = tracker.start_trial_run(arm.run_id, ARM, "t1")
    tracker.finish(trial.run_id, status)
    run = tracker.client.get_run(trial.run_id)
    assert run.info.status == mlflow_status
    assert run.data.tags[schema.STATUS] == status
    assert run.info.end_time is not None


def test_finished_runs_are_reported_so_the_runner_skips_them(tracker):
    arm = tracker.start_arm_run(ARM, "tune")
    done = tracker.start_trial_run(arm.run_id, ARM, "done")
    stopped = tracker.start_trial_run(arm.run_id, ARM, "stopped")
    tracker.finish(done.run_id, "completed")
    tracker.finish(stopped.run_id, "early_stopped")

    done_again = tracker.start_trial_run(arm.run_id, ARM, "done")
    stopped_again = tracker.start_trial_run(arm.run_id, ARM, "stopped")
    assert (done_again.finished, done_again.status) == (True, "completed")
    assert (stopped_again.finished, stopped_again.status) == (True, "early_stopped")
    assert tracker.client.get_run(done.run_id).info.status == "FINISHED"


@pytest.mark.parametrize("status", ["failed", "interrupted"])
def test_failed_or_interrupted_runs_are_reopened_not_duplicated(tracker, status):
    arm = tracker.start_arm_run(ARM, "tune")
    trial = tracker.start_trial_run(arm.run_id, ARM, "t1")
    tracker.finish(trial.run_id, status)

    again = tracker.start_trial_run(arm.run_id, ARM, "t1")
    assert again.run_id == trial.run_id and again.resumed and not again.finished
    run = tracker.client.get_run(trial.run_id)
    assert run.info.status == "RUNNING"
    assert schema.STATUS not in run.data.tags


def test_racing_creators_of_one_name_end_up_with_one_run(tracker):
    arm = tracker.start_arm_run(ARM, "tune")
    workers = [pickle.loads(pickle.dumps(tracker)) for _ in range(6)]  # one client each, as in Ray workers
    barrier = threading.Barrier(len(workers))
    results, errors = [], []

    def create(worker):
        try:
            barrier.wait()
            results.append(worker.start_trial_run(arm.run_id, ARM, "raced", params=CONFIG).run_id)
        except Exception as error:  # surfaced by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=create, args=(worker,)) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    active = runs_keyed(tracker, f"{ARM}/tune/raced")
    assert len(active) == 1
    assert set(results) == {active[0].info.run_id}


def test_a_creator_whose_unclaimed_run_a_faster_racer_deleted_adopts_the_racers_run(tracker):
    """The interleaving behind a flaky CI failure: B creates its run first, A claims first and cleans up B's."""
    arm = tracker.start_arm_run(ARM, "tune")
    racer_a, racer_b = (pickle.loads(pickle.dumps(tracker)) for _ in range(2))
    create_run = racer_b.client.create_run
    won = []

    def create_then_lose_the_race(*args, **kwargs):
        run = create_run(*args, **kwargs)
        if not won:  # before B logs its params, A creates, claims, and deletes B's older unclaimed run
            won.append(racer_a.start_trial_run(arm.run_id, ARM, "raced", params=CONFIG).run_id)
            assert tracker.client.get_run(run.info.run_id).info.lifecycle_stage == "deleted"
        return run

    racer_b.client.create_run = create_then_lose_the_race
    adopted = racer_b.start_trial_run(arm.run_id, ARM, "raced", params=CONFIG)
    assert adopted.run_id == won[0] and adopted.resumed
    assert [run.info.run_id for run in runs_keyed(tracker, f"{ARM}/tune/raced")] == won


def test_a_deleted_child_is_created_again_under_a_new_claim(tracker):
    arm = tracker.start_arm_run(ARM, "tune")
    first = tracker.start_trial_run(arm.run_id, ARM, "t1")
    tracker.client.delete_run(first.run_id)

    second = tracker.start_trial_run(arm.run_id, ARM, "t1")
    assert second.run_id != first.run_id and not second.resumed
    assert tracker.start_trial_run(arm.run_id, ARM, "t1").run_id == second.run_id
    params = tracker.client.get_run(tracker.bookkeeping_run_id(arm.run_id)).data.params
    assert params[child_claim_key(1, f"{ARM}/tune/t1")] == first.run_id
    assert params[child_claim_key(2, f"{ARM}/tune/t1")] == second.run_id


def test_claims_and_the_lease_live_on_bookkeeping_runs_out_of_the_experiment(tracker, tracking_uri):
    """Arm and summary runs keep their params for people: the claims of their children are params
    of a bookkeeping run in a companion experiment, which neither `nerplat ui` nor MLflow's list of
    experiments shows (the tag MLflow's list leaves out)."""
    from nerplat.track.experiment_reader import experiments_to_show, open_client

    arm = tracker.start_arm_run(ARM, "tune", params={"search_space": {"objective.lambda": "uniform(0, 1)"}})
    tracker.start_trial_run(arm.run_id, ARM, "t1")
    summary = tracker.summary_run()
    run = tracker.client.get_run(arm.run_id)
    assert run.data.params == {"search_space.objective.lambda": "uniform(0, 1)"}
    bookkeeping = tracker.client.get_run(run.data.tags[schema.BOOKKEEPING_RUN])
    assert bookkeeping.info.run_id == tracker.bookkeeping_run_id(arm.run_id) != arm.run_id
    assert list(bookkeeping.data.params) == [child_claim_key(1, f"{ARM}/tune/t1")]
    companion = tracker.client.get_experiment(bookkeeping.info.experiment_id)
    assert companion.name == f"unit-experiment{BOOKKEEPING_EXPERIMENT_SUFFIX}"
    assert companion.tags[schema.BOOKKEEPING_FOR] == "unit-experiment" and schema.EXPERIMENT not in companion.tags
    assert companion.tags[HIDDEN_EXPERIMENT_TAG] == "true"
    assert HIDDEN_EXPERIMENT_TAG not in tracker.client.get_experiment(tracker.experiment_id).tags
    assert tracker.bookkeeping_run_id(summary.run_id) not in (summary.run_id, bookkeeping.info.run_id)
    assert experiments_to_show(open_client(tracking_uri), None) == [("unit-experiment", tracker.experiment_id)]


def test_a_bookkeeping_experiment_made_before_it_was_hidden_is_hidden_by_its_next_run(tracker):
    older = tracker.client.create_experiment(f"unit-experiment{BOOKKEEPING_EXPERIMENT_SUFFIX}")
    tracker.start_arm_run(ARM, "tune")
    assert tracker.client.get_experiment(older).tags[HIDDEN_EXPERIMENT_TAG] == "true"


def test_an_experiment_written_when_keys_were_run_names_resumes_in_place(tracker):
    """Before keys became tags, a run's name was its key and a parent held its children's claims."""
    key = f"{ARM}/tune"
    old_arm = tracker.client.create_run(tracker.experiment_id, run_name=key, tags={schema.KIND: "arm", schema.PHASE: "tune"})
    old_trial = tracker.client.create_run(
        tracker.experiment_id, run_name=f"{key}/t1", tags={schema.KIND: "trial", schema.PARENT_RUN: old_arm.info.run_id}
    )
    tracker.client.log_param(old_arm.info.run_id, child_claim_key(1, f"{key}/t1"), old_trial.info.run_id)

    arm = tracker.start_arm_run(ARM, "tune", label="mom")
    assert arm.run_id == old_arm.info.run_id and arm.resumed
    assert tracker.start_trial_run(arm.run_id, ARM, "t1", label="mom").run_id == old_trial.info.run_id
    assert tracker.bookkeeping_run_id(arm.run_id) == arm.run_id


def test_params_are_flattened_and_a_changed_config_is_refused_on_resume(tracker):
    arm = tracker.start_arm_run(ARM, "tune")
    trial = tracker.start_trial_run(arm.run_id, ARM, "t1", params=CONFIG)
    params = tracker.client.get_run(trial.run_id).data.params
    assert params["objective"] == "mom" and params["objective.lambda"] == "0.3" and params["train.lr"] == "5e-05"

    changed = CONFIG.model_copy(update={"objective": Component(name="mom", params={"lambda": 0.5})})
    with pytest.raises(UserInputError, match=r"objective.lambda: '0.3' -> '0.5'"):
        tracker.start_trial_run(arm.run_id, ARM, "t1", params=changed)


def test_log_epoch_keeps_a_history_per_epoch(tracker):
    arm = tracker.start_arm_run(ARM, "tune")
    trial = tracker.start_trial_run(arm.run_id, ARM, "t1")
    for epoch, f1 in enumerate([0.2, 0.5, 0.4], start=1):
        tracker.log_epoch(
            trial.run_id,
            {schema.metric_key("dev", "macro_f1"): f1, schema.best_key("dev", "macro_f1"): max(f1, 0.5 if epoch > 1 else f1)},
            epoch,
        )
    history = tracker.client.get_metric_history(trial.run_id, "dev_macro_f1")
    assert [(m.step, m.value) for m in sorted(history, key=lambda m: m.step)] == [(1, 0.2), (2, 0.5), (3, 0.4)]


def test_artifacts_land_where_analysis_reads_them(tracker, tmp_path):
    summary = tracker.start_summary_run(plan={"arms": [ARM], "seeds": [0, 1]}, resolved_spec={"experiment": "unit"})
    arm = tracker.start_arm_run(ARM, "replicate")
    tracker.log_data_checksums(arm.run_id, {"train": "ab" * 32})
    replicate = tracker.start_replicate_run(arm.run_id, ARM, seed=0, partition=0)
    tracker.log_predictions(replicate.run_id, [["EU", "rejects"]], [["B-ORG", "O"]], [["B-ORG", "B-ORG"]])

    def download(run, name):
        return tracker.client.download_artifacts(run.run_id, name, str(tmp_path))

    assert json.loads(open(download(summary, schema.PLAN_ARTIFACT)).read()) == {"arms": [ARM], "seeds": [0, 1]}
    assert "experiment: unit" in open(download(summary, schema.RESOLVED_SPEC_ARTIFACT)).read()
    environment = json.loads(open(download(summary, schema.ENVIRONMENT_ARTIFACT)).read())
    assert environment["packages"]["mlflow"] and environment["git"]["commit"]
    assert json.loads(open(download(arm, schema.DATA_CHECKSUMS_ARTIFACT)).read()) == {"train": "ab" * 32}
    assert read_conll_predictions(download(replicate, schema.PREDICTIONS_ARTIFACT)) == (
        [["EU", "rejects"]],
        [["B-ORG", "O"]],
        [["B-ORG", "B-ORG"]],
    )


def test_the_summary_run_is_one_per_experiment(tracker):
    first = tracker.start_summary_run(plan={"v": 1}, resolved_spec="a: 1\n")
    second = tracker.start_summary_run(plan={"v": 1}, resolved_spec="a: 1\n")
    assert first.run_id == second.run_id
    assert len(runs_keyed(tracker, "summary")) == 1


def test_a_pickled_tracker_logs_to_the_same_store(tracker):
    arm = tracker.start_arm_run(ARM, "tune")
    worker = pickle.loads(pickle.dumps(tracker))
    assert worker.experiment_id == tracker.experiment_id and worker.run_tags == tracker.run_tags
    trial = worker.start_trial_run(arm.run_id, ARM, "t9")
    worker.log_epoch(trial.run_id, {"dev_macro_f1": 0.7}, 1)
    assert tracker.client.get_run(trial.run_id).data.metrics["dev_macro_f1"] == 0.7


def test_kind_and_parent_must_agree(tracker):
    with pytest.raises(ValueError, match="need"):
        tracker.start_or_resume_run("x", kind="trial", phase="tune")
    with pytest.raises(ValueError, match="kind must be"):
        tracker.start_or_resume_run("x", kind="nonsense", phase="tune")
    with pytest.raises(ValueError, match="status must be"):
        tracker.finish("0" * 32, "done")


def test_a_run_left_unclaimed_by_a_killed_creator_is_replaced_and_deleted(tracker):
    arm = tracker.start_arm_run(ARM, "tune")
    key = f"{ARM}/tune/t1"
    # What a worker killed between creating its run and claiming it leaves behind.
    orphan = tracker.client.create_run(
        tracker.experiment_id, run_name="t1", tags={schema.PARENT_RUN: arm.run_id, schema.RUN_KEY: key}
    )

    trial = tracker.start_trial_run(arm.run_id, ARM, "t1")
    assert trial.run_id != orphan.info.run_id and not trial.resumed
    trials = tracker.client.search_runs([tracker.experiment_id], filter_string=f"tags.`{schema.KIND}` = 'trial'")
    assert [run.info.run_id for run in trials] == [trial.run_id]
    # ... and the claimed run replaces it: the UI shows one run of that key, not two.
    assert [run.info.run_id for run in runs_keyed(tracker, key)] == [trial.run_id]


def test_two_drivers_creating_the_summary_run_at_once_keep_the_older_one(tracker, monkeypatch):
    first = tracker.summary_run()
    finds = iter([None])  # the second driver searched before the first had created its run
    real_find = tracker._find_top_level_run
    monkeypatch.setattr(tracker, "_find_top_level_run", lambda key, kind: next(finds, None) or real_find(key, kind))
    second = tracker.summary_run()
    assert second.run_id == first.run_id
    from mlflow.entities import ViewType

    active = tracker.client.search_runs([tracker.experiment_id], run_view_type=ViewType.ACTIVE_ONLY)
    assert [run.info.run_id for run in active if run.info.run_name == "summary"] == [first.run_id]


def test_experiment_exists_reads_the_store_without_creating(tracking_uri):
    from mlflow import MlflowClient

    from nerplat.track.experiment_tracker import experiment_exists

    assert not experiment_exists(tracking_uri, "absent")
    assert MlflowClient(tracking_uri).get_experiment_by_name("absent") is None
    ExperimentTracker.open(tracking_uri, "present")
    assert experiment_exists(tracking_uri, "present")
