"""The tracker's edits of existing runs and its searches (track/run_edits.py), on a real SQLite store."""

import json
from pathlib import Path

from nerplat.track import schema

ARM = "conll2003/low_resource-100/mom"
OTHER_ARM = "conll2003/low_resource-100/ce"


def test_an_empty_experiment_has_no_runs_and_a_deleted_run_does_not_count(tracker):
    assert not tracker.edits.has_runs()
    run = tracker.start_arm_run(ARM, "tune")
    assert tracker.edits.has_runs()
    tracker.edits.delete_run(run.run_id)
    assert not tracker.edits.has_runs()


def test_runs_are_found_by_kind_arm_and_parent_and_deleted_ones_are_left_out(tracker):
    tune = tracker.start_arm_run(ARM, "tune")
    trials = [tracker.start_trial_run(tune.run_id, ARM, f"t{n:04d}") for n in range(3)]
    other = tracker.start_arm_run(OTHER_ARM, "tune")
    tracker.edits.delete_run(trials[0].run_id)
    alive = {trial.run_id for trial in trials[1:]}
    assert {run.info.run_id for run in tracker.edits.runs_of_kind("trial")} == alive
    assert {run.info.run_id for run in tracker.edits.child_runs(tune.run_id)} == alive
    assert {run.info.run_id for run in tracker.edits.arm_runs(ARM)} == alive | {tune.run_id}
    assert [run.info.run_id for run in tracker.edits.arm_runs(OTHER_ARM)] == [other.run_id]


def test_added_params_leave_the_ones_a_run_has_and_tags_come_in_one_batch(tracker):
    run = tracker.start_arm_run(ARM, "tune", params={"objective": {"lambda": 0.3}})
    tracker.edits.add_params(run.run_id, {"objective.lambda": "0.3", "train.lr": "1e-5"})
    tracker.edits.add_params(run.run_id, {"objective.lambda": "0.3"})  # a resume chooses again: nothing new, no error
    tracker.edits.set_tags(run.run_id, {schema.RAY_NODE: "node-1", "extra": "x"})
    data = tracker.client.get_run(run.run_id).data
    assert {key: data.params[key] for key in ("objective.lambda", "train.lr")} == {"objective.lambda": "0.3", "train.lr": "1e-5"}
    assert data.tags[schema.RAY_NODE] == "node-1" and data.tags["extra"] == "x"


def test_the_best_trial_mark_moves_to_the_chosen_trial_alone(tracker):
    tune = tracker.start_arm_run(ARM, "tune")
    first, second = (tracker.start_trial_run(tune.run_id, ARM, f"t{n:04d}") for n in range(2))
    tracker.edits.mark_best_trial(tune.run_id, first.run_id)
    tracker.edits.mark_best_trial(tune.run_id, second.run_id)
    marks = {run.info.run_id: run.data.tags.get(schema.BEST_TRIAL) for run in tracker.edits.child_runs(tune.run_id)}
    assert marks == {first.run_id: None, second.run_id: "true"}


def test_a_superseded_plan_and_the_plugin_files_are_kept_on_the_summary_run(tracker, tmp_path):
    summary = tracker.summary_run()
    # as plugins.files_record gives
    record = {"origin": "./loss.py", "module": "loss", "file": "/specs/loss.py", "sha256": "ab12"}
    tracker.log_summary_artifacts(summary.run_id, {"arms": []}, "experiment: x\n", [record])
    tracker.record_superseded_plan(summary.run_id, {"arms": ["old"]}, "0123456789abcdef", "fedcba")
    client = tracker.client
    artifacts = {a.path for a in client.list_artifacts(summary.run_id)}
    assert {schema.PLAN_ARTIFACT, schema.PLUGIN_FILES_ARTIFACT, "superseded"} <= artifacts
    superseded = client.download_artifacts(summary.run_id, f"superseded/0123456789ab/{schema.PLAN_ARTIFACT}", str(tmp_path))
    assert json.loads(Path(superseded).read_text()) == {"arms": ["old"]}
    plugins = client.download_artifacts(summary.run_id, schema.PLUGIN_FILES_ARTIFACT, str(tmp_path))
    assert json.loads(Path(plugins).read_text()) == [record]
    assert client.get_run(summary.run_id).data.tags[schema.SPEC_SHA] == "fedcba"


def test_data_notes_are_a_text_artifact_a_line_each(tracker, tmp_path):
    run = tracker.start_arm_run(ARM, "tune")
    tracker.log_data_notes(run.run_id, ["converted IOB1 to IOB2", "carved 100 sentences"])
    path = tracker.client.download_artifacts(run.run_id, schema.DATA_NOTES_ARTIFACT, str(tmp_path))
    assert Path(path).read_text() == "converted IOB1 to IOB2\ncarved 100 sentences\n"
