"""The trial loop in-process with the tiny encoder on real CoNLL-2003 sentences."""

from pathlib import Path

import pytest
import torch

from nerplat.config.trial import Component, DatasetRef, EarlyStopping, EncoderSettings, TrainSettings, TrialConfig
from nerplat.trial.loop import run_trial
from nerplat.trial.session import CHECKPOINT_FILE, load_checkpoint


def tiny_config(**train) -> TrialConfig:
    return TrialConfig(
        dataset=DatasetRef(name="conll2003"),
        samplers=(Component(name="low_resource", params={"size": 24, "partitions": 1}),),
        encoder=EncoderSettings(name="tiny", max_length=48),
        train=TrainSettings(**{"epochs": 2, "batch_size": 8, "lr": 1e-3, "dev_subset": 40, "threads": 1, **train}),
        eval_split="dev",
    )


@pytest.fixture(scope="module")
def first_result():
    return run_trial(tiny_config())


def test_same_seed_same_machine_gives_identical_metrics(first_result):
    again = run_trial(tiny_config())
    assert again.metrics == first_result.metrics
    assert [e.dev["micro_f1"] for e in again.evaluations] == [e.dev["micro_f1"] for e in first_result.evaluations]


def test_reports_every_evaluation_with_best_so_far(first_result):
    assert [e.epoch for e in first_result.evaluations] == [1, 2]
    best = [e.dev_best["micro_f1"] for e in first_result.evaluations]
    assert best == sorted(best) and best[-1] == max(e.dev["micro_f1"] for e in first_result.evaluations)
    assert first_result.train_sentences == 24
    assert set(first_result.metrics) >= {"dev_micro_f1", "dev_macro_f1", "dev_token_macro_f1", "dev_word_accuracy"}
    assert first_result.timings.train_tokens > 0 and first_result.timings.setup > 0


def test_eval_every_skips_evaluations_but_not_the_last():
    result = run_trial(tiny_config(epochs=3, eval_every=2))
    assert [e.epoch for e in result.evaluations] == [2, 3]


def test_resume_from_a_checkpoint_continues_where_it_stopped(tmp_path: Path, first_result):
    saved = tmp_path / "epoch1"

    def save_first(evaluation, save_checkpoint):
        if evaluation.epoch == 1:
            save_checkpoint(saved)

    run_trial(tiny_config(), report=save_first)
    assert (saved / CHECKPOINT_FILE).is_file()
    resumed = run_trial(tiny_config(), resume_from=saved)
    assert [e.epoch for e in resumed.evaluations] == [1, 2]  # epoch 1 comes from the checkpoint
    assert resumed.evaluations[0].dev == first_result.evaluations[0].dev
    assert resumed.evaluations[0].dev_best == first_result.evaluations[0].dev_best
    # Model, optimiser, schedule and RNG state all came back: the rest is as if never stopped.
    assert resumed.metrics == first_result.metrics


def test_without_early_stopping_a_run_ends_at_the_cap(first_result):
    assert [e.stopped_by for e in first_result.evaluations] == [None, "cap"]
    assert (first_result.stopped_by, first_result.stopped_epoch) == ("cap", 2)


def test_early_stopping_whose_patience_outlasts_the_cap_ends_at_the_cap():
    result = run_trial(tiny_config(epochs=3, early_stopping=EarlyStopping(patience=5)))
    assert [e.epoch for e in result.evaluations] == [1, 2, 3]
    assert (result.stopped_by, result.stopped_epoch) == ("cap", 3)


# min_delta 0.5: no evaluation after the first rises that far, so patience 2 stops at epoch 3 of 8.
# At lr 3e-3 this setting's dev F1 is 0, 0, then rises at epoch 3 and dips at 4 (0.049, 0.046 here):
# patience 1 stops it at epoch 4, keeping epoch 3's weights.
PATIENT = {"epochs": 8, "lr": 3e-3, "early_stopping": EarlyStopping(patience=1, min_delta=0.01)}


def test_patience_stops_before_the_cap_and_keeps_the_best_epochs_weights(tmp_path: Path):
    kept = {}

    def save_each(evaluation, save_checkpoint):
        save_checkpoint(tmp_path / f"epoch{evaluation.epoch}")

    def keep(trained):
        kept.update({k: v.clone() for k, v in trained.tagger.state_dict().items()})

    result = run_trial(tiny_config(**PATIENT), report=save_each, keep_model=keep)
    assert [(e.epoch, e.stopped_by) for e in result.evaluations] == [(1, None), (2, None), (3, None), (4, "patience")]
    assert (result.stopped_by, result.stopped_epoch) == ("patience", 4)
    assert not (tmp_path / "epoch5").exists()  # no epoch after the stop
    best = max(result.evaluations, key=lambda e: e.dev["micro_f1"])  # the first of equals, as selection keeps it
    assert result.selected_epoch == best.epoch == 3
    saved = load_checkpoint(tmp_path / f"epoch{best.epoch}" / CHECKPOINT_FILE, torch.device("cpu"))["step_module"]
    assert all(torch.equal(kept[name], saved[f"tagger.{name}"]) for name in kept)


def test_a_trial_resumed_mid_way_counts_patience_on_from_its_checkpoint(tmp_path: Path):
    def save(evaluation, save_checkpoint):
        save_checkpoint(tmp_path / f"epoch{evaluation.epoch}")

    run_trial(tiny_config(**PATIENT), report=save)
    resumed = run_trial(tiny_config(**PATIENT), resume_from=tmp_path / "epoch3")
    # epochs 1-3 restored, the rise at 3 among them: epoch 4 is the evaluation without one that stops it
    assert [(e.epoch, e.stopped_by) for e in resumed.evaluations] == [(1, None), (2, None), (3, None), (4, "patience")]
    trained = []
    stopped = run_trial(tiny_config(**PATIENT), resume_from=tmp_path / "epoch4", report=lambda e, _: trained.append(e))
    assert trained == [] and (stopped.stopped_by, stopped.stopped_epoch) == ("patience", 4)


def test_tune_threshold_on_a_head_without_thresholds_is_refused():
    from nerplat.errors import UserInputError

    with pytest.raises(UserInputError, match="tune_threshold needs a head with decision thresholds"):
        run_trial(tiny_config(tune_threshold=True))


@pytest.fixture
def nan_loss():
    """An objective whose loss is NaN (cross-entropy times NaN), registered for one test as a plugin would."""
    import torch

    from nerplat.objectives import OBJECTIVES
    from nerplat.objectives.ce import CEConfig, CrossEntropy

    class NanLoss(CrossEntropy):
        def word_losses(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
            return super().word_losses(scores, labels) * float("nan")

    OBJECTIVES.register("test_nan_loss", config=CEConfig)(lambda config, context: NanLoss(config))
    yield "test_nan_loss"
    OBJECTIVES._entries.pop("test_nan_loss", None)


def test_a_loss_that_is_not_finite_fails_the_trial_naming_the_objective_epoch_and_step(nan_loss):
    """Issue 31, H4: a NaN loss trained on to `completed` with `train_loss nan`; it fails at the first epoch."""
    from nerplat.trial.loop import NonFiniteLoss

    config = tiny_config().model_copy(update={"objective": Component(name=nan_loss)})
    reports = []
    with pytest.raises(NonFiniteLoss) as failed:
        run_trial(config, report=lambda evaluation, save: reports.append(evaluation))
    message = str(failed.value)
    import re

    found = re.search(rf"the loss of objective '{nan_loss}' is nan at epoch 1, step (\d+) of the trial", message)
    assert found and int(found.group(1)) >= 3, message  # at least 24 sentences' windows in batches of 8
    assert reports == []  # no evaluation of the broken weights was reported
