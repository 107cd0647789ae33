"""The calibration run: a few timed training steps and a dev evaluation of an arm's encoder on this
host, with the tiny random encoder; and `nerplat plan --cost` saying it ran one."""

import json

import pytest
import torch

from nerplat.catalog import default_catalog
from nerplat.cli import main
from nerplat.estimate import calibration as calibration_module
from nerplat.estimate.calibration import STEPS, calibrate, calibrate_arm
from nerplat.estimate.cost import calibration_key
from nerplat.estimate.host import this_machine
from nerplat.plan.compiler import compile_plan
from nerplat.trial.session import TrialSession

SPEC = """\
experiment: calibration_check
dataset: {path: corpus}
model: {encoder: tiny, max_length: 64}
train: {epochs: 3, batch_size: 4, threads: 1}
methods:
  ce: {loss: ce}
  ova: {loss: ova_auc}
replicate: {seeds: 2}
"""
SENTENCE = "EU\tB-ORG\nrejects\tO\nGerman\tB-MISC\ncall\tO\nfrom\tO\nPeter\tB-PER\nBlackburn\tI-PER\n\n"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A corpus of 40 training, 12 dev and 12 test sentences and a spec of two arms of the tiny encoder."""
    (tmp_path / "corpus").mkdir()
    for split, sentences in (("train", 40), ("dev", 12), ("test", 12)):
        (tmp_path / "corpus" / f"{split}.txt").write_text(SENTENCE * sentences)
    (tmp_path / "spec.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return tmp_path


def test_a_calibration_times_training_steps_and_a_dev_evaluation_of_the_arms_encoder(folder):
    plan = compile_plan(folder / "spec.yaml", default_catalog())
    machine, threads = this_machine(), torch.get_num_threads()
    calibration = calibrate_arm(plan.arms[0], machine)
    assert calibration.key == calibration_key(plan.arms[0], machine) == ("tiny", machine.label_of(plan.arms[0]), "fp32", 4, 64)
    assert calibration.steps == STEPS  # batches of 4 of the 40 sentences cut to STEPS batches
    assert calibration.train_tokens_per_s > 0 and calibration.eval_tokens_per_s > 0
    assert 0 < calibration.setup_s < calibration.seconds
    assert torch.get_num_threads() == threads  # the arm's one thread was for the calibration only


def test_start_up_and_evaluation_are_timed_warm_as_a_runs_later_trials_meet_them(folder, monkeypatch):
    """A first session fills the process's caches and is not timed; the second session's start-up
    is the calibration's, and of its two evaluations the second is timed."""
    sessions, events = [], []

    class Recorded(TrialSession):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.evaluated = 0
            sessions.append(self)

        def evaluate(self):
            self.evaluated += 1
            events.append("evaluate")
            return super().evaluate()

    class Clock:  # the calibration's own clock reads, in order with the evaluations
        @staticmethod
        def perf_counter() -> float:
            events.append("clock")
            return float(len(events))

    monkeypatch.setattr(calibration_module, "TrialSession", Recorded)
    monkeypatch.setattr(calibration_module, "time", Clock)
    plan = compile_plan(folder / "spec.yaml", default_catalog())
    calibration = calibrate_arm(plan.arms[0], this_machine())
    cold, warm = sessions
    assert cold.timings.setup > 0 and calibration.setup_s == warm.timings.setup
    assert (cold.evaluated, warm.evaluated) == (0, 2)
    # the clock starts after the first evaluation and stops after the second (the last read is the total)
    assert events[events.index("evaluate") :] == ["evaluate", "clock", "evaluate", "clock", "clock"]


def test_arms_of_the_same_encoder_batch_size_and_length_share_one_calibration(folder):
    plan = compile_plan(folder / "spec.yaml", default_catalog())
    assert len(plan.arms) == 2 and len(calibrate(list(plan.arms), this_machine())) == 1


def test_plan_cost_without_earlier_runs_calibrates_says_so_and_predicts(folder, capsys):
    uri = f"sqlite:///{folder / 'none.db'}"
    assert main(["plan", "spec.yaml", "--cost", "--tracking-uri", uri, "--json"]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]
    (calibration,) = cost["calibrations"]
    assert calibration["encoder"] == "tiny" and calibration["steps"] == STEPS
    assert all(arm["trial_s"] > 0 and arm["basis"].startswith("calibrated here") for arm in cost["arms"]) and cost["wall_s"] > 0
    ova = next(arm for arm in cost["arms"] if arm["label"] == "ova")
    assert ova["basis"].endswith("3 passes a batch")  # OVA-AUC's B, I and O steps against the calibration's one pass
    assert main(["plan", "spec.yaml", "--cost", "--tracking-uri", uri]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"calibration run here: {STEPS} training steps of tiny at batch 4, max_length 64 in fp32" in out
    assert "early stopping can only shorten it" in out
    assert main(["plan", "spec.yaml", "--cost", "--no-calibrate", "--tracking-uri", uri]) == 0
    assert "cost ce: no prediction: no earlier completed runs of tiny in fp32" in " ".join(capsys.readouterr().out.split())
