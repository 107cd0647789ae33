"""Runs restored after `--rerun-changed` deleted them never count twice (issue 31, H6)."""

from __future__ import annotations

import pytest

from nerplat.track import schema
from nerplat.track.current_runs import current_runs


def one_replicate(tracker, f1: float) -> tuple[str, str]:
    """(arm run id, replicate run id) of arm `a`'s replicate phase with one completed replicate scoring `f1`."""
    parent = tracker.start_arm_run("a", "replicate", tags={schema.METHOD: "ce", schema.DATASET: "conll2003"}).run_id
    child = tracker.start_replicate_run(
        parent, "a", seed=1, partition=0, tags={schema.METHOD: "ce", schema.DATASET: "conll2003"}
    ).run_id
    tracker.log_epoch(child, {"test_micro_f1": f1}, epoch=1)
    tracker.finish(child, "completed")
    tracker.finish(parent, "completed")
    return parent, child


@pytest.fixture
def restored(tracker):
    """Arm `a` run, its runs deleted (as --rerun-changed does), run anew, then the deleted runs restored."""
    old = one_replicate(tracker, 0.5)
    for run_id in old:
        tracker.client.delete_run(run_id)
    new = one_replicate(tracker, 0.7)
    for run_id in old:
        tracker.client.restore_run(run_id)
    return tracker, old, new


def test_the_arm_run_a_resume_continues_is_the_rerun_and_the_restored_one_is_named(restored):
    tracker, old, new = restored
    said = []
    tracker.notify = said.append
    assert tracker.find_arm_run("a", "replicate").info.run_id == new[0]
    assert tracker.start_arm_run("a", "replicate").run_id == new[0]  # no "started with other parameters"
    (message,) = said  # once per key
    assert old[0] in message and f"run {new[0]} is continued" in message and "mlflow runs delete --run-id" in message


def test_each_run_key_counts_once_the_rerun_kept_and_the_restored_left_out(restored):
    tracker, old, new = restored
    runs = tracker.client.search_runs([tracker.experiment_id])
    current = current_runs(runs)
    assert {run.info.run_id for run in current.kept} == set(new)
    assert {run.info.run_id for run in current.ignored} == set(old)
    assert "2 run(s) share a run key" in current.warning()
    assert current_runs(run for run in runs if run.info.run_id in new).ignored == []


def test_nerplat_analyze_reads_one_replicate_per_key_and_warns(restored):
    from nerplat.analysis.run_frames import fetch_experiment
    from nerplat.track.experiment_reader import open_client

    tracker, old, new = restored
    runs = fetch_experiment(open_client(tracker.tracking_uri), tracker.experiment_name)
    assert runs.replicates["run_id"].to_list() == [new[1]]  # n=1 with `seeds: 1`, not 2
    (warning,) = runs.ignored
    assert old[1] in warning and old[0] in warning


def test_of_children_sharing_a_key_under_no_arm_run_in_use_the_newest_finished_is_kept(tracker):
    """A replicate restored without its arm run: the rerun's replicate (under the arm run in use) wins."""
    old_parent, old_child = one_replicate(tracker, 0.5)
    tracker.client.delete_run(old_child)
    tracker.client.delete_run(old_parent)
    new_parent, new_child = one_replicate(tracker, 0.7)
    tracker.client.restore_run(old_child)
    current = current_runs(tracker.client.search_runs([tracker.experiment_id]))
    assert [run.info.run_id for run in current.ignored] == [old_child]
