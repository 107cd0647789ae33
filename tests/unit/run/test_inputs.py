"""A resume may not forget what its runs read (issue 31, H2 and H3): each run records its corpus and
plugin files with their sha256, and a resume whose files changed is refused like a spec change."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nerplat.data.corpora import data_root
from nerplat.errors import UserInputError
from nerplat.run.inputs import arm_inputs, corpus_files, input_changes
from nerplat.run.ledger import RunLedger
from nerplat.track.dataset_inputs import recorded_files
from nerplat.track.experiment_tracker import ExperimentTracker


def runner_for(plan, workdir: Path, **options):
    from rich.console import Console

    from nerplat.run.runner import ExperimentRunner, RunOptions

    return ExperimentRunner(plan, RunOptions(workdir=workdir, **options), Console(quiet=True))


@pytest.fixture
def corpus_copy(tmp_path: Path) -> Path:
    """CoNLL-2003's splits in a folder of this test's own, to be edited."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    for split in ("train", "dev", "test"):
        shutil.copyfile(data_root() / "conll2003" / f"{split}.txt", folder / f"{split}.txt")
    return folder


@pytest.fixture
def plan_on_copy(tiny_plan_with, corpus_copy):
    return tiny_plan_with(f"dataset={{path: {corpus_copy}}}")


def finish_a_replicate(ledger: RunLedger, arm, status: str = "completed") -> str:
    """A replicate run of `arm` opened as the runner opens it (so it records its inputs), then ended."""
    parent = ledger.start_phase(arm, "replicate", params={}).run_id
    replicate, chosen = arm.replicates[0], {key: 0.5 for key in arm.search_space}
    config = arm.trial_config(chosen, seed=replicate.seed, partition=replicate.partition, eval_split="test")
    run = ledger.open_replicate(parent, arm, replicate, config)
    ledger.finish(run.run_id, status)
    return run.run_id


def test_a_registered_corpus_reads_its_split_files_by_name(tiny_plan):
    files = corpus_files(tiny_plan.arms[0].fixed["dataset"])
    assert [name for name, _ in files] == ["conll2003/train.txt", "conll2003/dev.txt", "conll2003/test.txt"]
    assert all(path.is_file() for _, path in files)
    assert corpus_files({"name": "hf:someone/some-corpus"}) == []  # the hub's cache is no file nerplat names


def test_every_run_records_the_sha256_of_the_files_it_reads(plan_on_copy, corpus_copy, tracking_uri):
    import hashlib

    tracker = ExperimentTracker.open(tracking_uri, plan_on_copy.experiment, spec_sha256=plan_on_copy.spec_sha256)
    tracker.inputs = arm_inputs(plan_on_copy, [])
    run_id = finish_a_replicate(RunLedger(tracker), plan_on_copy.arms[0])
    recorded = recorded_files(tracker.client.get_run(run_id))
    train = hashlib.sha256((corpus_copy / "train.txt").read_bytes()).hexdigest()
    assert recorded[f"{corpus_copy}/train.txt"] == {train}
    assert set(recorded) == {f"{corpus_copy}/{split}.txt" for split in ("train", "dev", "test")}


def test_a_resume_after_a_corpus_file_changed_is_refused_naming_the_file_and_the_arm(
    plan_on_copy, corpus_copy, tracking_uri, tmp_path
):
    import ray

    ce, mom = plan_on_copy.arms
    ledger = RunLedger(ExperimentTracker.open(tracking_uri, plan_on_copy.experiment, spec_sha256=plan_on_copy.spec_sha256))
    ledger.tracker.inputs = arm_inputs(plan_on_copy, [])
    ledger.finish_summary(ledger.start_summary(plan_on_copy).run_id, "interrupted")
    kept = finish_a_replicate(ledger, ce)
    unfinished = finish_a_replicate(ledger, mom, status="interrupted")  # rerun anyway: not judged
    runner_for(plan_on_copy, tmp_path, resume=True)._check_spec_change(ledger.tracker)  # unchanged: accepted

    train = corpus_copy / "train.txt"
    train.write_text(train.read_text().replace("\tB-PER", "\tB-ORG", 5))  # relabelled, the same sentences
    with pytest.raises(UserInputError) as refused:
        runner_for(plan_on_copy, tmp_path, resume=True).run()
    message = str(refused.value)
    assert "read other corpus or plugin files than those there now" in message
    assert f"read other files: {ce.id} ({corpus_copy}/train.txt changed)" in message and mom.id not in message
    assert "--rerun-changed" in message
    assert not ray.is_initialized() and not (tmp_path / ".nerplat").exists()
    client = ledger.tracker.client
    assert client.get_run(kept).info.lifecycle_stage == "active" and client.get_run(unfinished).info.lifecycle_stage == "active"

    runner = runner_for(plan_on_copy, tmp_path, resume=True, rerun_changed=True)
    runner._check_spec_change(ledger.tracker)
    assert runner.spec_change.rerun == (ce.id,) and runner.spec_change.started_with == plan_on_copy.spec_sha256


def test_a_changed_plugin_file_changes_every_arm_that_read_it(plan_on_copy, tracking_uri):
    tracker = ExperimentTracker.open(tracking_uri, plan_on_copy.experiment, spec_sha256=plan_on_copy.spec_sha256)
    plugin = {"origin": "plugin my_loss.py", "module": "my_loss", "file": "/specs/my_loss.py", "sha256": "a" * 64}
    tracker.inputs = arm_inputs(plan_on_copy, [plugin])
    ledger = RunLedger(tracker)
    for arm in plan_on_copy.arms:
        finish_a_replicate(ledger, arm)
    runs = ledger.children(ledger.tracker.find_arm_run(plan_on_copy.arms[0].id, "replicate").info.run_id)
    runs += ledger.children(ledger.tracker.find_arm_run(plan_on_copy.arms[1].id, "replicate").info.run_id)
    assert input_changes(runs, arm_inputs(plan_on_copy, [plugin])) == {}
    edited = arm_inputs(plan_on_copy, [{**plugin, "sha256": "b" * 64}])
    assert input_changes(runs, edited) == {arm.id: ("plugin my_loss:my_loss.py changed",) for arm in plan_on_copy.arms}
    assert input_changes(runs, arm_inputs(plan_on_copy, [])) == {
        arm.id: ("plugin my_loss:my_loss.py is gone",) for arm in plan_on_copy.arms
    }


def test_a_tuning_trial_records_its_files_when_it_starts_and_a_finished_one_keeps_them(plan_on_copy, tracking_uri):
    tracker = ExperimentTracker.open(tracking_uri, plan_on_copy.experiment, spec_sha256=plan_on_copy.spec_sha256)
    tracker.inputs = arm_inputs(plan_on_copy, [])
    mom = plan_on_copy.arms[1]
    parent = tracker.start_arm_run(mom.id, "tune").run_id
    trial = tracker.start_trial_run(parent, mom.id, "t0000").run_id
    tracker.finish(trial, "completed")
    assert len(recorded_files(tracker.client.get_run(trial))) == 3
    plugin = {"origin": "plugin my_loss.py", "module": "my_loss", "file": "/specs/my_loss.py", "sha256": "a" * 64}
    tracker.inputs = arm_inputs(plan_on_copy, [plugin])  # files read now are not written onto a finished run
    assert tracker.start_trial_run(parent, mom.id, "t0000").finished
    assert len(recorded_files(tracker.client.get_run(trial))) == 3
