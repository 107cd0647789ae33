"""The calibration run: a few timed training steps and a dev evaluation of an arm's encoder and head
on this host, with the tiny random encoder; and `nerplat plan --cost` saying it ran them."""

import json
from pathlib import Path

import pytest
import torch

from nerplat.catalog import default_catalog
from nerplat.cli import main
from nerplat.estimate import calibration as calibration_module
from nerplat.estimate.calibration import STEPS, calibrate, calibrate_arm, calibration_config, calibration_model
from nerplat.estimate.cost import calibration_key
from nerplat.estimate.host import this_machine
from nerplat.plan.compiler import compile_plan
from nerplat.trial.session import TrialSession

REPO = Path(__file__).parents[3]
SPEC = """\
experiment: calibration_check
dataset: {path: corpus}
model: {encoder: tiny, max_length: 64}
train: {epochs: 3, batch_size: 4, threads: 1}
methods:
  ce: {loss: ce}
  focal: {loss: focal}
  ova: {loss: ova_auc}
  bilstm_crf: {loss: crf, head: bilstm_crf, head_params: {hidden_size: 300, dropout: 0.5}}
replicate: {seeds: 2}
"""
SENTENCE = "EU\tB-ORG\nrejects\tO\nGerman\tB-MISC\ncall\tO\nfrom\tO\nPeter\tB-PER\nBlackburn\tI-PER\n\n"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A corpus of 40 training, 12 dev and 12 test sentences and a spec of four arms of the tiny encoder:
    two of a softmax head (cross-entropy, focal), one of the OVA head (OVA-AUC) and a BiLSTM-CRF of 300 units."""
    (tmp_path / "corpus").mkdir()
    for split, sentences in (("train", 40), ("dev", 12), ("test", 12)):
        (tmp_path / "corpus" / f"{split}.txt").write_text(SENTENCE * sentences)
    (tmp_path / "spec.yaml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return tmp_path


def test_a_calibration_times_training_steps_and_a_dev_evaluation_of_the_arms_encoder(folder, two_torch_threads):
    plan = compile_plan(folder / "spec.yaml", default_catalog())
    machine, threads = this_machine(), torch.get_num_threads()
    calibration = calibrate_arm(plan.arms[0], machine)
    assert calibration.key == calibration_key(plan.arms[0], machine)
    assert calibration.key == ("tiny", machine.label_of(plan.arms[0]), "fp32", 4, 64, "softmax")
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

    monkeypatch.setattr(calibration_module, "session_for", lambda head: Recorded)
    monkeypatch.setattr(calibration_module, "time", Clock)
    plan = compile_plan(folder / "spec.yaml", default_catalog())
    calibration = calibrate_arm(plan.arms[0], this_machine())
    cold, warm = sessions
    assert cold.timings.setup > 0 and calibration.setup_s == warm.timings.setup
    assert (cold.evaluated, warm.evaluated) == (0, 2)
    # the clock starts after the first evaluation and stops after the second (the last read is the total)
    assert events[events.index("evaluate") :] == ["evaluate", "clock", "evaluate", "clock", "clock"]


def test_each_head_is_calibrated_by_training_it_and_arms_of_one_head_share_its_calibration(folder, monkeypatch):
    """The softmax arms share one calibration by cross-entropy (focal's too); the OVA head is trained by
    its arm's OVA-AUC, the BiLSTM-CRF by the CRF likelihood, each in a calibration of its own."""
    trained = []

    def recorded(arm, precision):
        config = calibration_config(arm, precision)
        trained.append((config.head.name, config.head.params.get("hidden_size"), config.objective.name))
        return config

    monkeypatch.setattr(calibration_module, "calibration_config", recorded)
    plan = compile_plan(folder / "spec.yaml", default_catalog())
    calibrations = calibrate(list(plan.arms), this_machine())
    assert trained == [("softmax", None, "ce"), ("ova", None, "ova_auc"), ("bilstm_crf", 300, "crf")]
    assert [c.head for c in calibrations] == ["softmax", "ova", "bilstm_crf(hidden_size=300, layers=1)"]
    assert [c.trained for c in calibrations] == [
        "softmax by ce",
        "ova by ova_auc",
        "bilstm_crf(hidden_size=300, layers=1) by crf",
    ]
    assert {c.key for c in calibrations} == {calibration_key(arm, this_machine()) for arm in plan.arms}


def test_a_head_fitted_outside_the_torch_loop_has_a_softmax_head_stand_in():
    plan = compile_plan(REPO / "specs" / "resampling.yaml", default_catalog())
    crfsuite = next(arm for arm in plan.arms if arm.fixed["head"]["name"] == "crfsuite")
    head, objective = calibration_model(crfsuite)
    assert (head.name, objective.name) == ("softmax", "ce")


def test_plan_cost_without_earlier_runs_calibrates_says_so_and_predicts(folder, capsys):
    uri = f"sqlite:///{folder / 'none.db'}"
    assert main(["plan", "spec.yaml", "--cost", "--tracking-uri", uri, "--json"]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]
    assert [calibration["head"] for calibration in cost["calibrations"]] == [
        "softmax",
        "ova",
        "bilstm_crf(hidden_size=300, layers=1)",
    ]
    assert all(calibration["encoder"] == "tiny" and calibration["steps"] == STEPS for calibration in cost["calibrations"])
    assert all(arm["trial_s"] > 0 and arm["basis"].startswith("calibrated here") for arm in cost["arms"]) and cost["wall_s"] > 0
    ova = next(arm for arm in cost["arms"] if arm["label"] == "ova")
    assert ova["basis"].endswith("3 passes a batch")  # OVA-AUC's B, I and O steps against the calibration's one pass
    assert main(["plan", "spec.yaml", "--cost", "--tracking-uri", uri]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"calibration run here: {STEPS} training steps of tiny with softmax by ce at batch 4, max_length 64 in fp32" in out
    assert f"{STEPS} training steps of tiny with bilstm_crf(hidden_size=300, layers=1) by crf at batch 4" in out
    assert "early stopping can only shorten it" in out
    assert main(["plan", "spec.yaml", "--cost", "--no-calibrate", "--tracking-uri", uri]) == 0
    assert "cost ce: no prediction: no earlier completed runs of tiny in fp32" in " ".join(capsys.readouterr().out.split())
